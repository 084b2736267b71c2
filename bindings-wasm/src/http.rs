//! The adapter core in WebAssembly: `HttpOptions` renders a decision's HTTP answer, `ClientAddress`
//! finds a client key, `scopedKey` joins a scope and a key: the same pure functions every ratelock
//! adapter calls, for middleware on edge runtimes.

use std::time::Duration;

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::{arguments, invalid_argument, now_us, option, option_number, option_string, to_js};

#[wasm_bindgen(typescript_custom_section)]
const HTTP_ANSWER_TYPE: &str = r#"
/** What an adapter sends: proceed (adding `headers`), or refuse with `status`, `headers` and `body`. */
export interface HttpAnswer {
  proceed: boolean;
  status: number;
  /** Names and values, alternating. */
  headers: string[];
  contentType: string;
  body: string;
}
"#;

/// How an adapter answers: rate-limit headers, the denial's body and status.
#[wasm_bindgen]
pub struct HttpOptions {
    inner: ratelock::http::HttpOptions,
    algorithm: ratelock::Algorithm,
    rules: ratelock::RuleCache<ratelock::Rules>,
}

#[wasm_bindgen]
impl HttpOptions {
    /// `options`: `{ standardHeaders?: string | boolean, legacyHeaders?: boolean, partitionKey?: boolean,
    /// deniedBody?: 'text' | 'json' | 'problem', statusCode?: number, defaultAlgorithm?: string }`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: Option<Object>) -> Result<HttpOptions, JsValue> {
        let mut inner = ratelock::http::HttpOptions::default();
        let mut algorithm = ratelock::Algorithm::Gcra;
        if let Some(options) = options {
            if let Some(status) = option_number(&options, "statusCode")? {
                let status = if status.fract() == 0.0 && (0.0..=65535.0).contains(&status) {
                    status as u16
                } else {
                    return Err(invalid_argument(
                        "statusCode",
                        format!("expected an HTTP status, got {status}"),
                    ));
                };
                inner = inner.with_status(status).map_err(to_js)?;
            }
            let standard = Reflect::get(&options, &"standardHeaders".into())?;
            if let Some(on) = standard.as_bool() {
                inner.headers.standard = on.then_some(ratelock::http::HeaderStyle::LATEST);
            } else if let Some(style) = standard.as_string() {
                inner.headers.standard = Some(style.parse().map_err(to_js)?);
            } else if !standard.is_undefined() && !standard.is_null() {
                return Err(invalid_argument(
                    "standardHeaders",
                    "expected a draft's name, true or false".into(),
                ));
            }
            if let Some(legacy) = option(&options, "legacyHeaders", "a boolean", JsValue::as_bool)? {
                inner.headers.legacy = legacy;
            }
            if let Some(pk) = option(&options, "partitionKey", "a boolean", JsValue::as_bool)? {
                inner.headers.partition_key = pk;
            }
            if let Some(body) = option_string(&options, "deniedBody")? {
                inner.denied_body = body.parse().map_err(to_js)?;
            }
            if let Some(name) = option_string(&options, "defaultAlgorithm")? {
                algorithm = name.parse().map_err(to_js)?;
            }
        }
        Ok(HttpOptions {
            inner,
            algorithm,
            rules: ratelock::RuleCache::default(),
        })
    }

    /// The answer to `decision` (a `Decision` of `Limiter.hit`) over `rules` for the request keyed
    /// `key`, at `nowMs` (default `Date.now()`).
    #[wasm_bindgen(unchecked_return_type = "HttpAnswer")]
    pub fn answer(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] rules: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Decision")] decision: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<Object, JsValue> {
        let rules = &arguments::text("rules", &rules)?;
        let key = arguments::text("key", &key)?;
        let decision: Object = decision
            .dyn_into()
            .map_err(|_| invalid_argument("decision", "expected a Decision of `Limiter.hit`".to_owned()))?;
        let algorithm = self.algorithm;
        let parsed = self
            .rules
            .get_or_try_insert(rules, |text| ratelock::Rules::parse_with_default(text, algorithm))
            .map_err(to_js)?;
        let number = |name: &str| -> Result<f64, JsValue> {
            option_number(&decision, name)?
                .ok_or_else(|| invalid_argument("decision", format!("has no `{name}`")))
        };
        let allowed = option(&decision, "allowed", "a boolean", JsValue::as_bool)?
            .ok_or_else(|| invalid_argument("decision", "has no `allowed`".to_owned()))?;
        let degraded = option(&decision, "degraded", "a boolean", JsValue::as_bool)?.unwrap_or(false);
        let rule_index = number("ruleIndex")?;
        let rule = usize::try_from(rule_index as i64)
            .ok()
            .filter(|&at| rule_index.fract() == 0.0 && at < parsed.len())
            .and_then(|at| parsed.get(at).map(|rule| (at, rule)));
        let Some((rule_index, rule)) = rule else {
            return Err(invalid_argument(
                "decision",
                format!(
                    "`ruleIndex` {rule_index} names none of the {} rules",
                    parsed.len()
                ),
            ));
        };
        // The limit the store decided on (a key's override), as the headers must name it; a decision
        // without one (made by hand) names the rule's own.
        let limit = match option_number(&decision, "limit")? {
            Some(limit) if limit.is_finite() && limit >= 0.0 => limit as u64,
            _ => rule.limit(),
        };
        let summary = ratelock::Decision::summary(
            allowed,
            limit,
            number("remaining")?.max(0.0) as u64,
            micros(number("resetAfterMs")?),
            micros(number("retryAfterMs")?),
            rule_index,
            degraded,
        );
        let now_ms = now_us(now_ms)?.map_or(0, |us| us / 1000);
        answer_object(self.inner.answer(&summary, parsed, key.as_bytes(), now_ms))
    }

    /// The answer when a limiter failed with `code`: 503 for an outage, `null` otherwise.
    #[wasm_bindgen(unchecked_return_type = "HttpAnswer | null")]
    pub fn failure(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] code: JsValue,
    ) -> Result<JsValue, JsValue> {
        let code = &arguments::text("code", &code)?;
        let code = code.strip_prefix("ERR_RATELOCK_").unwrap_or(code);
        match self.inner.failure(code) {
            Some(answer) => answer_object(answer).map(Into::into),
            None => Ok(JsValue::NULL),
        }
    }

    /// The answer to a request with no usable key: 400.
    #[wasm_bindgen(js_name = badKey, unchecked_return_type = "HttpAnswer")]
    pub fn bad_key(&self) -> Result<Object, JsValue> {
        answer_object(self.inner.bad_key())
    }
}

/// How the client address of a request becomes its key.
#[wasm_bindgen]
pub struct ClientAddress {
    inner: ratelock::http::ClientAddress,
}

#[wasm_bindgen]
impl ClientAddress {
    /// `options`: `{ ipv6Subnet?: number, trustedProxies?: number | string[], proxyHeader?: string }`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: Option<Object>) -> Result<ClientAddress, JsValue> {
        let mut inner = ratelock::http::ClientAddress::default();
        if let Some(options) = options {
            if let Some(bits) = option_number(&options, "ipv6Subnet")? {
                if bits.fract() != 0.0 || !(1.0..=128.0).contains(&bits) {
                    return Err(invalid_argument(
                        "ipv6Subnet",
                        format!("expected a prefix length from 1 to 128, got {bits}"),
                    ));
                }
                inner = inner.with_ipv6_subnet(bits as u8).map_err(to_js)?;
            }
            if let Some(header) = option_string(&options, "proxyHeader")? {
                inner = inner.with_header(header.parse().map_err(to_js)?);
            }
            let trusted = Reflect::get(&options, &"trustedProxies".into())?;
            if let Some(hops) = trusted.as_f64() {
                // Read as given, never coerced: `Infinity` trusted every hop (the client's own entry
                // became the key), `1.5` one, `-1` none.
                if hops.fract() != 0.0 || !(0.0..=f64::from(u32::MAX)).contains(&hops) {
                    return Err(invalid_argument(
                        "trustedProxies",
                        format!("expected a whole hop count from 0, got {hops}"),
                    ));
                }
                inner = inner.with_trusted(ratelock::http::TrustedProxies::Hops(hops as u32));
            } else if Array::is_array(&trusted) {
                let mut networks = Vec::new();
                for network in Array::from(&trusted).iter() {
                    let Some(text) = network.as_string() else {
                        return Err(invalid_argument(
                            "trustedProxies",
                            "expected every network as a string (\"10.0.0.0/8\", \"loopback\")".into(),
                        ));
                    };
                    networks.push(text);
                }
                inner = inner
                    .trust_networks(networks.iter().map(String::as_str))
                    .map_err(to_js)?;
            } else if !trusted.is_undefined() && !trusted.is_null() {
                return Err(invalid_argument(
                    "trustedProxies",
                    "expected a hop count or a list of networks".into(),
                ));
            }
        }
        Ok(ClientAddress { inner })
    }

    /// The key of a request from `peer` whose proxy header reads `forwarded`.
    pub fn key(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] peer: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] forwarded: Option<JsValue>,
    ) -> Result<String, JsValue> {
        let peer = arguments::optional_text("peer", peer)?;
        let forwarded = arguments::optional_text("forwarded", forwarded)?;
        Ok(self
            .inner
            .key(peer.as_deref().unwrap_or(""), forwarded.as_deref()))
    }
}

/// `<scope>:<key>` with the scope's `%` and `:` escaped, so no two (scope, key) pairs meet.
#[wasm_bindgen(js_name = scopedKey)]
pub fn scoped_key(
    #[wasm_bindgen(unchecked_param_type = "string")] scope: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
) -> Result<String, JsValue> {
    let (scope, key) = (arguments::text("scope", &scope)?, arguments::text("key", &key)?);
    let joined = ratelock::http::scoped_key(&scope, key.as_bytes()).map_err(to_js)?;
    Ok(String::from_utf8(joined).expect("a joined text key is UTF-8"))
}

fn micros(ms: f64) -> Duration {
    if ms.is_finite() && ms > 0.0 {
        Duration::from_micros((ms * 1000.0).round() as u64)
    } else {
        Duration::ZERO
    }
}

/// The answer as a plain object; a property JavaScript refuses to set is thrown, not dropped.
fn answer_object(answer: ratelock::http::HttpAnswer) -> Result<Object, JsValue> {
    let object = Object::new();
    let headers = Array::new();
    for (name, value) in &answer.headers {
        headers.push(&JsValue::from_str(name));
        headers.push(&JsValue::from_str(value));
    }
    let fields: [(&str, JsValue); 5] = [
        ("proceed", answer.proceed.into()),
        ("status", f64::from(answer.status).into()),
        ("headers", headers.into()),
        ("contentType", answer.content_type.into()),
        ("body", answer.body.into()),
    ];
    for (name, value) in fields {
        Reflect::set(&object, &name.into(), &value)?;
    }
    Ok(object)
}
