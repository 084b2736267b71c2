//! The adapter core for Node (`lib/http.js` wraps it): `NativeHttpOptions` renders a decision's answer,
//! `NativeClientAddress` finds the client key, `scopedKey` joins a scope and a key. Each is the core's
//! pure function with JavaScript types at the edges; the framework adapters only call them.

use std::sync::Mutex;
use std::time::Duration;

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;
use ratelock::http::{ClientAddress, HeaderStyle, HttpAnswer, HttpOptions, TrustedProxies};
use ratelock::{Algorithm, RuleCache, Rules};

use crate::convert;
use crate::errors::{invalid_argument, to_js, Error, Result};
use crate::runtime::guarded_sync;

/// How an adapter answers (all optional).
#[napi(object)]
pub struct HttpOptionsInit {
    /// `'draft-6'`, `'draft-7'`, `'draft-8'`, `'draft-11'` (the default; also `'latest'` or `true`) or `false`.
    pub standard_headers: Option<Either<String, bool>>,
    /// `X-RateLimit-Limit`, `-Remaining`, `-Reset` (default false).
    pub legacy_headers: Option<bool>,
    /// A `pk` parameter naming the client's partition (drafts 8 and 11; default false).
    pub partition_key: Option<bool>,
    /// `'text'` (the default), `'json'` or `'problem'`.
    pub denied_body: Option<String>,
    /// The status of a denial (default 429).
    pub status_code: Option<u32>,
    /// The algorithm of rules that name none (the limiter's; default `gcra`).
    pub default_algorithm: Option<String>,
}

/// What an adapter sends.
#[napi(object)]
pub struct HttpAnswerJs {
    /// True when the request goes on; `headers` are then added to the app's response.
    pub proceed: bool,
    pub status: u32,
    /// Names and values, alternating: `[name, value, name, value, ...]`.
    pub headers: Vec<String>,
    pub content_type: String,
    pub body: String,
}

impl From<HttpAnswer> for HttpAnswerJs {
    fn from(answer: HttpAnswer) -> Self {
        let mut headers = Vec::with_capacity(answer.headers.len() * 2);
        for (name, value) in answer.headers {
            headers.push(name.to_owned());
            headers.push(value);
        }
        HttpAnswerJs {
            proceed: answer.proceed,
            status: u32::from(answer.status),
            headers,
            content_type: answer.content_type.to_owned(),
            body: answer.body,
        }
    }
}

/// The answer options of one adapter, with the rule texts it has seen parsed once.
#[napi]
pub struct NativeHttpOptions {
    inner: HttpOptions,
    algorithm: Algorithm,
    rules: Mutex<RuleCache<Rules>>,
}

#[napi]
impl NativeHttpOptions {
    #[napi(constructor)]
    pub fn new(init: HttpOptionsInit) -> Result<Self> {
        let status = init.status_code.unwrap_or(429);
        let status = u16::try_from(status)
            .map_err(|_| invalid_argument("statusCode", format!("expected an HTTP status, got {status}")))?;
        let mut inner = HttpOptions::default()
            .with_status(status)
            .map_err(option_error("statusCode"))?;
        inner.headers.standard = match init.standard_headers {
            None | Some(Either::B(true)) => Some(HeaderStyle::LATEST),
            Some(Either::B(false)) => None,
            Some(Either::A(style)) => Some(style.parse().map_err(option_error("standardHeaders"))?),
        };
        inner.headers.legacy = init.legacy_headers.unwrap_or(false);
        inner.headers.partition_key = init.partition_key.unwrap_or(false);
        inner.denied_body = match init.denied_body {
            None => Default::default(),
            Some(body) => body.parse().map_err(option_error("deniedBody"))?,
        };
        let algorithm = match init.default_algorithm {
            None => Algorithm::Gcra,
            Some(algorithm) => algorithm.parse().map_err(to_js)?,
        };
        Ok(NativeHttpOptions {
            inner,
            algorithm,
            rules: Mutex::new(RuleCache::default()),
        })
    }

    /// The answer to a decision (given by its deciding rule's figures, in ms) over `rules` for the
    /// request keyed `key`, at `nowMs` (Unix ms). `limit` is the limit the store decided on (a key's
    /// override); none: the deciding rule's own.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn answer(
        &self,
        rules: String,
        allowed: bool,
        remaining: f64,
        reset_after_ms: f64,
        retry_after_ms: f64,
        rule_index: u32,
        degraded: bool,
        key: Either<String, Buffer>,
        now_ms: f64,
        limit: Option<f64>,
    ) -> Result<HttpAnswerJs> {
        guarded_sync(|| {
            let mut cache = self.rules.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let algorithm = self.algorithm;
            let rules = cache
                .get_or_try_insert(&rules, |text| Rules::parse_with_default(text, algorithm))
                .map_err(to_js)?;
            let limit = match limit {
                Some(limit) if limit.is_finite() && limit >= 0.0 => limit as u64,
                _ => rules.get(rule_index as usize).map_or(0, |rule| rule.limit()),
            };
            let decision = ratelock::Decision::summary(
                allowed,
                limit,
                remaining.max(0.0) as u64,
                micros(reset_after_ms),
                micros(retry_after_ms),
                rule_index as usize,
                degraded,
            );
            let now_ms = if now_ms.is_finite() && now_ms >= 0.0 {
                now_ms as u64
            } else {
                0
            };
            Ok(self
                .inner
                .answer(&decision, rules, &convert::key(key), now_ms)
                .into())
        })
    }

    /// The answer when the limiter threw the error whose code is given (with or without the
    /// `ERR_RATELOCK_` prefix): 503 for an outage, `null` for anything else (which the adapter rethrows).
    #[napi]
    pub fn failure(&self, code: String) -> Option<HttpAnswerJs> {
        let code = code.strip_prefix("ERR_RATELOCK_").unwrap_or(&code);
        self.inner.failure(code).map(Into::into)
    }

    /// The answer to a request with no usable key: 400.
    #[napi]
    pub fn bad_key(&self) -> HttpAnswerJs {
        self.inner.bad_key().into()
    }
}

/// A core error about an option, naming the option as JavaScript spells it.
fn option_error(name: &str) -> impl Fn(ratelock::Error) -> Error + '_ {
    move |error| match error {
        ratelock::Error::InvalidArgument { reason, .. } => invalid_argument(name, reason),
        other => to_js(other),
    }
}

/// Milliseconds (fractions kept to the µs) as a duration.
fn micros(ms: f64) -> Duration {
    if ms.is_finite() && ms > 0.0 {
        Duration::from_micros((ms * 1000.0).round() as u64)
    } else {
        Duration::ZERO
    }
}

/// How the client address of a request becomes its key (all optional).
#[napi(object)]
pub struct ClientAddressInit {
    /// IPv6 addresses sharing this many leading bits share a key (1 to 128, default 56).
    pub ipv6_subnet: Option<u32>,
    /// Proxies whose header is believed: a hop count, or networks (`'10.0.0.0/8'`, `'loopback'`,
    /// `'private'`, `'linklocal'`); none by default.
    pub trusted_proxies: Option<Either<u32, Vec<String>>>,
    /// `'x-forwarded-for'` (the default) or `'forwarded'`.
    pub proxy_header: Option<String>,
}

/// The client-address rules of one adapter.
#[napi]
pub struct NativeClientAddress {
    inner: ClientAddress,
    trusts: bool,
}

#[napi]
impl NativeClientAddress {
    #[napi(constructor)]
    pub fn new(init: ClientAddressInit) -> Result<Self> {
        let subnet = init.ipv6_subnet.unwrap_or(56);
        let subnet = u8::try_from(subnet)
            .map_err(|_| invalid_argument("ipv6Subnet", format!("expected 1 to 128, got {subnet}")))?;
        let mut inner = ClientAddress::default()
            .with_ipv6_subnet(subnet)
            .map_err(option_error("ipv6Subnet"))?;
        if let Some(header) = &init.proxy_header {
            inner = inner.with_header(header.parse().map_err(option_error("proxyHeader"))?);
        }
        let trusts = init.trusted_proxies.is_some();
        inner = match init.trusted_proxies {
            None => inner,
            Some(Either::A(hops)) => inner.with_trusted(TrustedProxies::Hops(hops)),
            Some(Either::B(networks)) => inner
                .trust_networks(networks.iter().map(String::as_str))
                .map_err(option_error("trustedProxies"))?,
        };
        Ok(NativeClientAddress { inner, trusts })
    }

    /// The key of a request from `peer` whose proxy header reads `forwarded`.
    #[napi]
    pub fn key(&self, peer: Option<String>, forwarded: Option<String>) -> String {
        self.inner
            .key(peer.as_deref().unwrap_or(""), forwarded.as_deref())
    }

    /// The header adapters must read (lower case), or `null` when no proxy is trusted.
    #[napi(getter)]
    pub fn proxy_header(&self) -> Option<&'static str> {
        self.trusts.then(|| self.inner.header.name())
    }
}

/// `<scope>:<key>` with the scope's `%` and `:` escaped, so no two (scope, key) pairs meet: a string
/// for a string key, a Buffer for a Buffer key.
#[napi]
pub fn scoped_key(scope: String, key: Either<String, Buffer>) -> Result<Either<String, Buffer>> {
    let text = matches!(key, Either::A(_));
    let joined = ratelock::http::scoped_key(&scope, &convert::key(key)).map_err(to_js)?;
    Ok(if text {
        // Both halves are UTF-8, and escaping only writes ASCII.
        Either::A(String::from_utf8(joined).map_err(|_| invalid_argument("key", "not UTF-8"))?)
    } else {
        Either::B(joined.into())
    })
}

/// The canonical text of each rule in `text`, rules without `using` taking `defaultAlgorithm`; throws
/// `ERR_RATELOCK_INVALID_RULE` naming the bad part. For checking rules when an app starts.
#[napi]
pub fn parse_rules(text: String, default_algorithm: Option<String>) -> Result<Vec<String>> {
    let algorithm = match default_algorithm {
        None => Algorithm::Gcra,
        Some(algorithm) => algorithm.parse().map_err(to_js)?,
    };
    let rules = Rules::parse_with_default(&text, algorithm).map_err(to_js)?;
    Ok(rules.iter().map(ToString::to_string).collect())
}
