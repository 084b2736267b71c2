//! ratelock's sans-IO core for WebAssembly (browsers, edge runtimes, Node): an in-memory `Limiter`
//! with the rule syntax, algorithms and decisions of every other ratelock package. Time is always an
//! argument to the core; here it is the caller's `nowMs` or `Date.now()`. No Redis, no threads.

use js_sys::{Error as JsError, Object, Reflect};
use wasm_bindgen::prelude::*;

mod arguments;
mod http;

pub use http::{scoped_key, ClientAddress, HttpOptions};

#[wasm_bindgen(typescript_custom_section)]
const DECISION_TYPE: &str = r#"
/** The answer to `hit` or `peek` (the fields of the Node package's decisions). */
export interface Decision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetAfterMs: number;
  retryAfterMs: number;
  degraded: boolean;
  /** The deciding rule, as canonical text. */
  rule: string;
  ruleIndex: number;
  periodMs: number;
  /** What decided: the rules, a ban, the deny list or the allow list. */
  reason: 'rule' | 'ban' | 'deny_list' | 'allow_list';
  /** Let through only because what denied it is in shadow; the figures are enforcement's. */
  wouldDeny: boolean;
  /** Always false here: the memory store is this process's already (the Node package's deny cache). */
  cached: boolean;
}
"#;

/// An in-memory limiter: every rule of a key checked at once, all or nothing.
#[wasm_bindgen]
pub struct Limiter {
    inner: ratelock::Limiter,
    rules: ratelock::RuleCache<ParsedRules>,
    /// The decision's property names as JS strings, made once (making them per call costs more than
    /// the decision itself).
    names: [JsValue; 12],
    /// Each reason's name as a JS string, by its code.
    reasons: [JsValue; 4],
}

/// The decision's properties, in the order of `Limiter::names`.
const DECISION_FIELDS: [&str; 12] = [
    "allowed",
    "limit",
    "remaining",
    "resetAfterMs",
    "retryAfterMs",
    "degraded",
    "rule",
    "ruleIndex",
    "periodMs",
    "reason",
    "wouldDeny",
    "cached",
];

/// The core's prepared rules (parsed once by the limiter) with each rule's canonical text as a JS string,
/// made once: this binding's memo of its own values, by rule text.
struct ParsedRules {
    rules: std::sync::Arc<ratelock::Rules>,
    texts: Vec<JsValue>,
}

#[wasm_bindgen]
impl Limiter {
    /// A limiter with its own memory. `options`: `{ prefix?: string, defaultAlgorithm?: string,
    /// maxKeys?: number, whenFull?: 'refuse' | 'evict', shadow?: boolean }` (no bound unless `maxKeys` is given; expired
    /// keys are always reclaimed; a full store refuses new keys, or evicts with `whenFull: 'evict'`).
    #[wasm_bindgen(constructor)]
    pub fn new(options: Option<Object>) -> Result<Limiter, JsValue> {
        let mut settings = ratelock::LimiterOptions::default();
        let mut store = settings.store.clone();
        if let Some(options) = options {
            if let Some(prefix) = option_string(&options, "prefix")? {
                settings = settings.with_prefix(prefix);
            }
            if let Some(shadow) = option_bool(&options, "shadow")? {
                settings = settings.with_shadow(shadow);
            }
            if let Some(algorithm) = option_string(&options, "defaultAlgorithm")? {
                settings = settings.with_default_algorithm(algorithm.parse().map_err(to_js)?);
            }
            store = store
                .with_memory_bound(
                    option_number(&options, "maxKeys")?,
                    option_string(&options, "whenFull")?.as_deref(),
                    ["maxKeys", "whenFull"],
                )
                .map_err(to_js)?;
        }
        let store = ratelock::Store::Memory(ratelock::store::MemoryStore::for_options(&store));
        Ok(Limiter {
            inner: ratelock::Limiter::with_store(store, settings).map_err(to_js)?,
            rules: ratelock::RuleCache::default(),
            names: DECISION_FIELDS.map(JsValue::from_str),
            reasons: ratelock::Reason::ALL.map(|reason| JsValue::from_str(reason.name())),
        })
    }

    /// Takes `cost` units (default 1) from every rule for `key` if every enforcing rule allows it (a
    /// `shadow` rule that denies is not charged), at `nowMs`
    /// (default `Date.now()`); otherwise takes nothing.
    #[wasm_bindgen(unchecked_return_type = "Decision")]
    pub fn hit(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] rules: JsValue,
        cost: Option<f64>,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<Object, JsValue> {
        let key = &arguments::text("key", &key)?; // its size: the core's request checks it
        let rules = &arguments::text("rules", &rules)?;
        self.check(key, rules, cost, now_ms, true)
    }

    /// Answers what `hit` would answer, without taking anything.
    #[wasm_bindgen(unchecked_return_type = "Decision")]
    pub fn peek(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] rules: JsValue,
        cost: Option<f64>,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<Object, JsValue> {
        let key = &arguments::text("key", &key)?; // its size: the core's request checks it
        let rules = &arguments::text("rules", &rules)?;
        self.check(key, rules, cost, now_ms, false)
    }

    /// Gives back `cost` units (default 1) of every rule for `key` at `nowMs` (default `Date.now()`),
    /// where the algorithm can; answers as `peek` of the same cost does afterwards.
    #[wasm_bindgen(unchecked_return_type = "Decision")]
    pub fn refund(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] rules: JsValue,
        cost: Option<f64>,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<Object, JsValue> {
        let key = &arguments::key(&key)?;
        let rules = &arguments::text("rules", &rules)?;
        self.ask_store(key, rules, cost, now_ms, None, |store, request| {
            store.refund(request)
        })
    }

    /// Books the earliest slot within `maxWaitMs` at which every rule admits `cost` units (default 1;
    /// gcra, token_bucket and leaky_bucket rules), at `nowMs` (default `Date.now()`): an allowed
    /// decision whose `retryAfterMs` is the wait before acting, or the denial (nothing spent) when the
    /// slot is further.
    #[wasm_bindgen(unchecked_return_type = "Decision")]
    pub fn reserve(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] rules: JsValue,
        #[wasm_bindgen(js_name = maxWaitMs)] max_wait_ms: f64,
        cost: Option<f64>,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<Object, JsValue> {
        let key = &arguments::key(&key)?;
        let rules = &arguments::text("rules", &rules)?;
        if !(max_wait_ms.is_finite()
            && (0.0..=ratelock::MAX_PERIOD.as_millis() as f64).contains(&max_wait_ms))
        {
            return Err(invalid_argument(
                "maxWaitMs",
                format!("expected a finite number of milliseconds from 0 to 366 days, got {max_wait_ms}"),
            ));
        }
        if self.inner.options().shadow {
            return Err(invalid_argument(
                "rules",
                "a reservation enforces its rules; this limiter is in shadow".to_owned(),
            ));
        }
        let max_wait_us = Some((max_wait_ms * 1000.0).round() as u64);
        self.ask_store(key, rules, cost, now_ms, max_wait_us, |store, request| {
            store.check(request)
        })
    }

    /// Gives `key` other limits for its rules of the same windows (see the Node `setOverride`), for
    /// `ttlMs` or with no end, from `nowMs` (default `Date.now()`).
    #[wasm_bindgen(js_name = setOverride)]
    pub fn set_override(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] rules: JsValue,
        #[wasm_bindgen(js_name = ttlMs)] ttl_ms: Option<f64>,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<(), JsValue> {
        let key = &arguments::key(&key)?;
        let rules = &arguments::text("rules", &rules)?;
        let now_us = now_us(now_ms)?;
        let for_us = match ttl_ms {
            None => None,
            Some(ms) if ms.is_finite() && ms >= 1.0 && ms <= ratelock::MAX_PERIOD.as_millis() as f64 => {
                Some((ms * 1000.0).round() as u64)
            }
            Some(ms) => {
                return Err(invalid_argument(
                    "ttlMs",
                    format!("expected milliseconds from 1 ms to 366 days, got {ms}"),
                ))
            }
        };
        let inner = self.inner.clone();
        let parsed = self.parse(rules)?;
        if let ratelock::Store::Memory(store) = inner.store() {
            let overrides = ratelock::algorithm::overrides::Overrides::new((*parsed.rules).clone());
            store.set_override(&ratelock::store::OverrideChange {
                prefix: &inner.options().prefix,
                key: key.as_bytes(),
                overrides: Some(&overrides),
                for_us,
                now_us,
            });
        }
        Ok(())
    }

    /// Takes `key`'s override away; true when it had one still in force at `nowMs` (default
    /// `Date.now()`: the clock of the calls that set it).
    #[wasm_bindgen(js_name = clearOverride)]
    pub fn clear_override(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<bool, JsValue> {
        let key = &arguments::key(&key)?;
        let now_us = now_us(now_ms)?;
        let inner = self.inner.clone();
        Ok(match inner.store() {
            ratelock::Store::Memory(store) => store.set_override(&ratelock::store::OverrideChange {
                prefix: &inner.options().prefix,
                key: key.as_bytes(),
                overrides: None,
                for_us: None,
                now_us,
            }),
            _ => false,
        })
    }

    /// Forgets the state of every given rule for `key`.
    pub fn reset(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] rules: JsValue,
    ) -> Result<(), JsValue> {
        let key = &arguments::key(&key)?;
        let rules = &arguments::text("rules", &rules)?;
        let inner = self.inner.clone();
        let parsed = self.parse(rules)?;
        if let ratelock::Store::Memory(store) = inner.store() {
            store.reset(&inner.options().prefix, key.as_bytes(), &parsed.rules);
        }
        Ok(())
    }

    /// Bans `key` for `durationMs` (1 ms to 366 days) from `nowMs` (default `Date.now()`): every hit
    /// and peek is denied with `reason: 'ban'`. A rule's `block` word starts the same ban when the rule
    /// denies a hit.
    pub fn block(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = durationMs)] duration_ms: f64,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<(), JsValue> {
        let key = &arguments::key(&key)?;
        self.change_entry("block", key, Some(duration_ms), now_ms)
            .map(drop)
    }

    /// Lifts `key`'s ban; true when it had one (a list entry stays).
    pub fn unblock(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<bool, JsValue> {
        let key = &arguments::key(&key)?;
        self.change_entry("unblock", key, None, now_ms)
    }

    /// Puts `key` on the deny list for `ttlMs`: every hit and peek is denied with `reason: 'deny_list'`.
    pub fn deny(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = ttlMs)] ttl_ms: f64,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<(), JsValue> {
        let key = &arguments::key(&key)?;
        self.change_entry("deny", key, Some(ttl_ms), now_ms).map(drop)
    }

    /// Puts `key` on the allow list for `ttlMs`: every hit and peek passes with `reason: 'allow_list'`,
    /// spending nothing.
    pub fn allow(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = ttlMs)] ttl_ms: f64,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<(), JsValue> {
        let key = &arguments::key(&key)?;
        self.change_entry("allow", key, Some(ttl_ms), now_ms).map(drop)
    }

    /// Takes `key` off the deny or allow list; true when it was on one (a ban stays).
    pub fn clear(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = nowMs)] now_ms: Option<f64>,
    ) -> Result<bool, JsValue> {
        let key = &arguments::key(&key)?;
        self.change_entry("clear", key, None, now_ms)
    }
}

impl Limiter {
    /// One change to `key`'s entry in the memory store (the core names the call and checks the span).
    fn change_entry(
        &self,
        op: &str,
        key: &str,
        span_ms: Option<f64>,
        now_ms: Option<f64>,
    ) -> Result<bool, JsValue> {
        let name = if op == "block" { "durationMs" } else { "ttlMs" };
        let span = match span_ms {
            Some(ms) if !(ms.is_finite() && (0.0..=1e13).contains(&ms)) => {
                return Err(invalid_argument(name, format!("expected milliseconds, got {ms}")))
            }
            Some(ms) => Some(std::time::Duration::from_micros((ms * 1000.0).round() as u64)),
            None => None,
        };
        let call = ratelock::algorithm::standing::StandingCall::named(op, span, name).map_err(to_js)?;
        let now_us = now_us(now_ms)?;
        match self.inner.store() {
            ratelock::Store::Memory(store) => {
                let prefix = &self.inner.options().prefix;
                let (key, now_us) = (key.as_bytes(), now_us);
                Ok(store.stand(&ratelock::store::EntryChange {
                    prefix,
                    key,
                    call,
                    now_us,
                }))
            }
            #[allow(unreachable_patterns)]
            _ => Err(JsError::new("ratelock: the WebAssembly limiter has only its memory store").into()),
        }
    }

    /// `call` of the memory store with the request of `key`, `rules`, `cost`, `nowMs` and `max_wait_us`
    /// (a refund's or a reservation's), answered as a decision object.
    fn ask_store(
        &mut self,
        key: &str,
        rules: &str,
        cost: Option<f64>,
        now_ms: Option<f64>,
        max_wait_us: Option<u64>,
        call: impl FnOnce(
            &ratelock::store::MemoryStore,
            &ratelock::store::LimitRequest<'_>,
        ) -> ratelock::Result<ratelock::algorithm::standing::Verdict>,
    ) -> Result<Object, JsValue> {
        let (cost, now_us) = (cost_of(cost)?, now_us(now_ms)?);
        let inner = self.inner.clone();
        let parsed = self.parse(rules)?;
        let shape = StoreCall {
            key,
            cost,
            now_us,
            max_wait_us,
        };
        let decision = on_memory_store(&inner, parsed, shape, call)?;
        let deciding = deciding(parsed, &decision);
        self.object_of(&decision, deciding)
    }

    fn check(
        &mut self,
        key: &str,
        rules: &str,
        cost: Option<f64>,
        now_ms: Option<f64>,
        spend: bool,
    ) -> Result<Object, JsValue> {
        let cost = cost_of(cost)?;
        let now_us = now_us(now_ms)?;
        let inner = self.inner.clone();
        let parsed = self.parse(rules)?;
        let answer = inner.try_check_blocking(key, &parsed.rules, cost, spend, now_us);
        // The memory store always answers on the spot.
        let decision = answer.ok_or_else(|| JsError::new("ratelock: the memory store did not answer"))?;
        let decision = decision.map_err(to_js)?;
        let deciding = deciding(parsed, &decision);
        self.object_of(&decision, deciding)
    }

    /// `decision` as a plain object (the Node package's decision fields): no wrapper class, no
    /// finalizer per call. `deciding`: its deciding rule's text and period (ms).
    fn object_of(&self, decision: &ratelock::Decision, deciding: (JsValue, f64)) -> Result<Object, JsValue> {
        let index = decision.rule_index;
        let answer = Object::new();
        let values: [JsValue; 12] = [
            decision.allowed.into(),
            (decision.limit as f64).into(),
            (decision.remaining as f64).into(),
            (decision.reset_after.as_secs_f64() * 1000.0).into(),
            (decision.retry_after.as_secs_f64() * 1000.0).into(),
            decision.degraded.into(),
            deciding.0,
            (index as u32).into(),
            deciding.1.into(),
            self.reasons[decision.reason.code() as usize].clone(),
            decision.would_deny.into(),
            decision.cached.into(),
        ];
        for (name, value) in self.names.iter().zip(&values) {
            Reflect::set(&answer, name, value)?;
        }
        Ok(answer)
    }

    fn parse(&mut self, text: &str) -> Result<&ParsedRules, JsValue> {
        let inner = &self.inner;
        self.rules.get_or_try_insert(text, |text| {
            let prepared = inner.prepared(text).map_err(to_js)?;
            let rules = prepared.rules().clone();
            let texts = (0..rules.len())
                .map(|index| JsValue::from_str(&prepared.text(index)))
                .collect();
            Ok(ParsedRules { rules, texts })
        })
    }
}

/// A core error as a JavaScript `Error` with a `name` and a stable `code` (as in the Node package).
fn to_js(err: ratelock::Error) -> JsValue {
    // The names of the Node package's classes for the same codes.
    let name = match err.code() {
        "INVALID_RULE" => "InvalidRuleError",
        "INVALID_ARGUMENT" => "InvalidArgumentError",
        "COST_EXCEEDS_CAPACITY" => "CostExceedsCapacityError",
        "STORE_UNAVAILABLE" => "StoreUnavailableError",
        "TIMEOUT" => "StoreTimeoutError",
        "WAIT_TIMEOUT" => "WaitTimeoutError",
        "LOCK_NOT_OWNED" => "LockNotOwnedError",
        "LOCK_LOST" => "LockLostError",
        "PROTOCOL" => "ProtocolError",
        "CONFIGURATION" => "ConfigurationError",
        _ => "RatelockError",
    };
    coded(name, &format!("ERR_RATELOCK_{}", err.code()), &err.to_string())
}

fn invalid_argument(name: &str, problem: String) -> JsValue {
    coded(
        "InvalidArgumentError",
        "ERR_RATELOCK_INVALID_ARGUMENT",
        &format!("invalid argument `{name}`: {problem}"),
    )
}

fn coded(name: &str, code: &str, message: &str) -> JsValue {
    let error = JsError::new(message);
    error.set_name(name);
    let _ = Reflect::set(&error, &"code".into(), &code.into());
    error.into()
}

fn option_string(options: &Object, name: &str) -> Result<Option<String>, JsValue> {
    option(options, name, "a string", JsValue::as_string)
}

fn option_number(options: &Object, name: &str) -> Result<Option<f64>, JsValue> {
    option(options, name, "a number", JsValue::as_f64)
}

fn option_bool(options: &Object, name: &str) -> Result<Option<bool>, JsValue> {
    option(options, name, "a boolean", JsValue::as_bool)
}

/// Option `name` of `options` read by `read` (`None` when absent); an invalid argument naming it when
/// it is not what `read` takes (`expected`).
fn option<T>(
    options: &Object,
    name: &str,
    expected: &str,
    read: impl FnOnce(&JsValue) -> Option<T>,
) -> Result<Option<T>, JsValue> {
    let value = Reflect::get(options, &name.into())?;
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    read(&value)
        .map(Some)
        .ok_or_else(|| invalid_argument(name, format!("expected {expected}")))
}

/// `nowMs` (default `Date.now()`) in µs, checked: milliseconds since the Unix epoch, exact in µs.
fn now_us(now_ms: Option<f64>) -> Result<Option<u64>, JsValue> {
    let now_ms = now_ms.unwrap_or_else(js_sys::Date::now);
    if !(now_ms.is_finite() && now_ms >= 0.0 && now_ms * 1000.0 <= 9_007_199_254_740_991.0) {
        return Err(invalid_argument(
            "nowMs",
            format!("expected milliseconds since the Unix epoch, got {now_ms}"),
        ));
    }
    Ok(Some((now_ms * 1000.0).round() as u64))
}

/// `call` on `inner`'s memory store (the only store here) with the request `shape` describes (a refund
/// without `max_wait_us`, a reservation with it): its decision.
fn on_memory_store(
    inner: &ratelock::Limiter,
    parsed: &ParsedRules,
    shape: StoreCall<'_>,
    call: impl FnOnce(
        &ratelock::store::MemoryStore,
        &ratelock::store::LimitRequest<'_>,
    ) -> ratelock::Result<ratelock::algorithm::standing::Verdict>,
) -> Result<ratelock::Decision, JsValue> {
    let ratelock::Store::Memory(store) = inner.store() else {
        return Err(JsError::new("ratelock: the WebAssembly limiter has only its memory store").into());
    };
    let request = ratelock::store::LimitRequest {
        prefix: &inner.options().prefix,
        key: shape.key.as_bytes(),
        rules: &parsed.rules,
        cost: shape.cost,
        now_us: shape.now_us,
        spend: shape.max_wait_us.is_some(),
        max_wait_us: shape.max_wait_us,
    };
    let verdict = call(store, &request).map_err(to_js)?;
    Ok(ratelock::Decision::decided(verdict, &parsed.rules))
}

/// What a refund or a reservation asks of the memory store.
struct StoreCall<'a> {
    key: &'a str,
    cost: u64,
    now_us: Option<u64>,
    max_wait_us: Option<u64>,
}

/// `cost` (default 1): a whole number from 1.
fn cost_of(cost: Option<f64>) -> Result<u64, JsValue> {
    match cost {
        None => Ok(1),
        Some(n) if n.fract() == 0.0 && (1.0..=9_007_199_254_740_991.0).contains(&n) => Ok(n as u64),
        Some(n) => Err(invalid_argument(
            "cost",
            format!("expected an integer >= 1, got {n}"),
        )),
    }
}

/// The deciding rule's text (made once, when the rules were parsed) and period in ms.
fn deciding(parsed: &ParsedRules, decision: &ratelock::Decision) -> (JsValue, f64) {
    let index = decision.rule_index;
    (
        parsed.texts[index].clone(),
        parsed.rules[index].period().as_secs_f64() * 1000.0,
    )
}
