//! `Limiter` for Node: the core limiter with JavaScript types at the edges (milliseconds, string or
//! Buffer keys, rule text). Redis calls run on the runtime and answer a Promise; on the memory store
//! `hitLocal`/`peekLocal` answer at once on the JavaScript thread (nothing there ever waits).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;

use crate::convert;
use crate::errors::{invalid_argument, to_js};
use crate::runtime::{guarded, guarded_sync};

/// Rule texts parsed per limiter, so a rule string is parsed once.
const RULE_CACHE_LIMIT: usize = 1024;

/// How a limiter is made (all optional).
#[napi(object)]
pub struct LimiterOptions {
    /// `redis://...` or `rediss://...`; none: the embedded memory store.
    pub url: Option<String>,
    /// Key prefix, `rl` by default.
    pub prefix: Option<String>,
    /// What a store failure answers: `raise` (reject, the default), `allow` or `deny`.
    pub on_error: Option<String>,
    /// Each store call's timeout in milliseconds (default 1000).
    pub timeout_ms: Option<f64>,
    /// Algorithm of rules that name none (default `gcra`).
    pub default_algorithm: Option<String>,
    /// `store` (the store's clock, the default) or `local` (this process's clock).
    pub clock: Option<String>,
}

/// The answer to `hit` or `peek`.
#[napi(object)]
pub struct Decision {
    pub allowed: bool,
    pub limit: f64,
    pub remaining: f64,
    pub reset_after_ms: f64,
    pub retry_after_ms: f64,
    pub degraded: bool,
    /// The deciding rule, as canonical text.
    pub rule: String,
    /// The deciding rule's position in the rule text.
    pub rule_index: u32,
    /// The deciding rule's period in milliseconds.
    pub period_ms: f64,
}

/// The native limiter behind `Limiter` in `index.js`.
#[napi]
pub struct NativeLimiter {
    inner: ratelock::Limiter,
    rules: Mutex<HashMap<String, Arc<ParsedRules>>>,
}

/// Rule text parsed once, with each rule's canonical text ready for decisions.
struct ParsedRules {
    rules: ratelock::Rules,
    texts: Vec<String>,
}

/// Opens (or reuses) the store and makes a limiter.
#[napi]
pub async fn connect_limiter(options: LimiterOptions) -> napi::Result<NativeLimiter> {
    guarded(async move {
        let settings = limiter_options(&options)?;
        let store = crate::stores::shared(options.url, settings.store.timeout)
            .await
            .map_err(to_js)?;
        let inner = ratelock::Limiter::with_store(store, settings).map_err(to_js)?;
        Ok(NativeLimiter {
            inner,
            rules: Mutex::new(HashMap::new()),
        })
    })
    .await
}

#[napi]
impl NativeLimiter {
    /// Whether the store answers in memory (then use `hitLocal`/`peekLocal`).
    #[napi(getter)]
    pub fn is_local(&self) -> bool {
        !self.inner.store().does_io()
    }

    /// The key prefix.
    #[napi(getter)]
    pub fn prefix(&self) -> String {
        self.inner.options().prefix.clone()
    }

    /// Takes `cost` units from every rule for `key` if all allow it; otherwise takes nothing.
    #[napi]
    pub async fn hit(
        &self,
        key: Either<String, Buffer>,
        rules: String,
        cost: Option<f64>,
        now_ms: Option<f64>,
    ) -> napi::Result<Decision> {
        let check = self.prepare(key, &rules, cost, now_ms, true)?;
        guarded(check.decide()).await
    }

    /// Answers what `hit` would answer, without spending anything.
    #[napi]
    pub async fn peek(
        &self,
        key: Either<String, Buffer>,
        rules: String,
        cost: Option<f64>,
        now_ms: Option<f64>,
    ) -> napi::Result<Decision> {
        let check = self.prepare(key, &rules, cost, now_ms, false)?;
        guarded(check.decide()).await
    }

    /// `hit` on the memory store, answered on the calling thread.
    #[napi]
    pub fn hit_local(
        &self,
        key: Either<String, Buffer>,
        rules: String,
        cost: Option<f64>,
        now_ms: Option<f64>,
    ) -> napi::Result<Decision> {
        guarded_sync(|| self.prepare(key, &rules, cost, now_ms, true)?.decide_local())
    }

    /// `peek` on the memory store, answered on the calling thread.
    #[napi]
    pub fn peek_local(
        &self,
        key: Either<String, Buffer>,
        rules: String,
        cost: Option<f64>,
        now_ms: Option<f64>,
    ) -> napi::Result<Decision> {
        guarded_sync(|| self.prepare(key, &rules, cost, now_ms, false)?.decide_local())
    }

    /// Forgets the state of every given rule for `key`.
    #[napi]
    pub async fn reset(&self, key: Either<String, Buffer>, rules: String) -> napi::Result<()> {
        let (key, parsed, limiter) = (convert::key(key), self.parse(&rules)?, self.inner.clone());
        guarded(async move { limiter.reset(&key, &parsed.rules).await.map_err(to_js) }).await
    }
}

/// One `hit` or `peek`, its arguments converted.
struct Check {
    limiter: ratelock::Limiter,
    key: Vec<u8>,
    rules: Arc<ParsedRules>,
    cost: u64,
    now_us: Option<u64>,
    spend: bool,
}

impl Check {
    async fn decide(self) -> napi::Result<Decision> {
        let (limiter, key, rules, cost) = (&self.limiter, &self.key, &self.rules.rules, self.cost);
        let decision = match (self.now_us, self.spend) {
            (Some(now), true) => limiter.hit_at(key, rules, cost, now).await,
            (Some(now), false) => limiter.peek_at(key, rules, cost, now).await,
            (None, true) => limiter.hit(key, rules, cost).await,
            (None, false) => limiter.peek(key, rules, cost).await,
        };
        decision
            .map(|decision| self.rules.decision(&decision))
            .map_err(to_js)
    }

    fn decide_local(self) -> napi::Result<Decision> {
        let (limiter, key, rules, cost) = (&self.limiter, &self.key, &self.rules.rules, self.cost);
        let decision = if self.spend {
            limiter.try_hit_blocking(key, rules, cost, self.now_us)
        } else {
            limiter.try_peek_blocking(key, rules, cost, self.now_us)
        };
        match decision {
            Some(decision) => decision
                .map(|decision| self.rules.decision(&decision))
                .map_err(to_js),
            None => Err(invalid_argument(
                "store",
                "hitLocal/peekLocal need the memory store",
            )),
        }
    }
}

impl NativeLimiter {
    fn prepare(
        &self,
        key: Either<String, Buffer>,
        rules: &str,
        cost: Option<f64>,
        now_ms: Option<f64>,
        spend: bool,
    ) -> napi::Result<Check> {
        Ok(Check {
            limiter: self.inner.clone(),
            key: convert::key(key),
            rules: self.parse(rules)?,
            cost: convert::cost(cost)?,
            now_us: convert::now_us(now_ms)?,
            spend,
        })
    }

    fn parse(&self, text: &str) -> napi::Result<Arc<ParsedRules>> {
        let mut cache = self.rules.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(parsed) = cache.get(text) {
            return Ok(parsed.clone());
        }
        let rules = self.inner.rules(text).map_err(to_js)?;
        let texts = rules.iter().map(ToString::to_string).collect();
        let parsed = Arc::new(ParsedRules { rules, texts });
        if cache.len() >= RULE_CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(text.to_owned(), parsed.clone());
        Ok(parsed)
    }
}

impl ParsedRules {
    fn decision(&self, decision: &ratelock::Decision) -> Decision {
        let index = decision.rule_index;
        Decision {
            allowed: decision.allowed,
            limit: decision.limit as f64,
            remaining: decision.remaining as f64,
            reset_after_ms: convert::to_millis(decision.reset_after),
            retry_after_ms: convert::to_millis(decision.retry_after),
            degraded: decision.degraded,
            rule: self.texts[index].clone(),
            rule_index: index as u32,
            period_ms: convert::to_millis(self.rules[index].period()),
        }
    }
}

/// Limiter options from the JavaScript ones.
fn limiter_options(options: &LimiterOptions) -> napi::Result<ratelock::LimiterOptions> {
    let mut settings = ratelock::LimiterOptions::default();
    if let Some(prefix) = &options.prefix {
        settings = settings.with_prefix(prefix.as_str());
    }
    if let Some(on_error) = &options.on_error {
        settings = settings.with_on_error(on_error.parse().map_err(to_js)?);
    }
    if let Some(algorithm) = &options.default_algorithm {
        settings = settings.with_default_algorithm(algorithm.parse().map_err(to_js)?);
    }
    if let Some(clock) = &options.clock {
        settings = settings.with_clock(match clock.as_str() {
            "store" => ratelock::ClockSource::Store,
            "local" => ratelock::ClockSource::Local,
            other => {
                return Err(invalid_argument(
                    "clock",
                    format!("expected \"store\" or \"local\", got {other:?}"),
                ))
            }
        });
    }
    if let Some(timeout) = options.timeout_ms {
        settings = settings.with_timeout(convert::millis("timeoutMs", timeout)?);
    }
    Ok(settings)
}
