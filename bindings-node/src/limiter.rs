//! `Limiter` for Node: the core limiter with JavaScript types at the edges (milliseconds, string or
//! Buffer keys, rule text parsed once). Redis calls run on the runtime and their answers come back in
//! batches (`completions.rs`); on the memory store `checkInto` answers at once on the JavaScript thread
//! (nothing there ever waits).

use std::sync::Arc;

use napi::bindgen_prelude::{Buffer, Either, PromiseRaw};
use napi::Env;
use napi_derive::napi;
use ratelock::algorithm::standing::StandingCall;

use crate::completions::{Batch, Completions};
use crate::convert;
use crate::decision_numbers::{numbers, DECISION_FIELDS};
use crate::errors::{invalid_argument, to_js, Result};
use crate::handle::{Handed, Handle, RulesArg};
use crate::runtime::{guarded, guarded_sync, promise_of, spawn};
use crate::stores::StoreSettings;

/// How a limiter is made (all optional).
#[napi(object, object_to_js = false)]
pub struct LimiterOptions {
    /// Where the keys live.
    pub store: StoreSettings,
    /// What a store failure answers: `raise` (reject, the default), `allow` or `deny`.
    pub on_error: Option<String>,
    /// Algorithm of rules that name none (default `gcra`).
    pub default_algorithm: Option<String>,
    /// `store` (the store's clock, the default) or `local` (this process's clock).
    pub clock: Option<String>,
    /// Under `onError: 'local'`: how many processes share the limits (default 1).
    pub instances: Option<f64>,
    /// Shadow mode: a denial is let through with `wouldDeny` set (default false).
    pub shadow: Option<bool>,
    /// A local deny cache of about this many keys (none by default).
    pub deny_cache: Option<f64>,
    /// The longest the deny cache holds a denial, in ms (default: until its `retryAfterMs`).
    pub deny_cache_max_age_ms: Option<f64>,
    /// Called with every measurement (`lib/otel.js`'s `Metrics` passes its own `record`).
    #[napi(
        ts_type = "(name: string, value: number, attributes: Record<string, string>, dropped: number) => void"
    )]
    pub metrics: Option<crate::metrics::Record>,
}

/// The TypeScript name of the core's prepared rules inside `ExternalObject` (opaque to JavaScript; the
/// declaration generator names an external by its Rust type).
#[napi(object, object_from_js = false)]
#[allow(
    dead_code,
    reason = "only its TypeScript declaration is used, as ExternalObject<PreparedRules>"
)]
pub struct PreparedRules {}

/// A rule text prepared by `prepareRules`: the core's rules for `checkInto`/`submit`, and what
/// JavaScript needs to describe a decision of each rule.
///
/// `rules` is the core's `PreparedRules` (a rule text parsed once per limiter: `Limiter::prepared`) as
/// an external value, passed back with every call that uses them: the addon reads it back faster than
/// a class instance (an awaited `hit` on the memory store took 1,230 ns with a class, 1,080 ns with an
/// external value, 1,057 ns with the numbered slab this replaces).
#[napi(object, object_from_js = false)]
pub struct RulesInfo {
    #[napi(ts_type = "ExternalObject<PreparedRules>")]
    pub rules: Handed<Arc<ratelock::PreparedRules>>,
    /// Each rule's canonical text.
    pub texts: Vec<String>,
    /// Each rule's period in milliseconds.
    pub periods_ms: Vec<f64>,
}

/// The native limiter behind `Limiter` in `lib/limiter.js`. Rule texts are prepared by the core
/// (`prepareRules`); decisions travel as numbers, and `lib/limiter.js` builds the objects.
#[napi]
pub struct NativeLimiter {
    inner: ratelock::Limiter,
    completions: Arc<Completions>,
}

/// Opens (or reuses) the store and makes a limiter.
#[napi(ts_return_type = "Promise<NativeLimiter>")]
pub fn connect_limiter(env: &Env, mut options: LimiterOptions) -> Result<PromiseRaw<'_, NativeLimiter>> {
    promise_of(env, async move { new_limiter(&mut options) })
}

/// Makes a limiter now, without waiting: on the process's shared store for the URL, opened without I/O
/// (the memory store answers at once; a Redis store would connect on its first call). For `hitSync`.
#[napi]
pub fn open_limiter_now(mut options: LimiterOptions) -> Result<NativeLimiter> {
    guarded_sync(|| new_limiter(&mut options))
}

/// A limiter on the process's shared store for `options` (no I/O: a Redis store connects on its first
/// call).
fn new_limiter(options: &mut LimiterOptions) -> Result<NativeLimiter> {
    let settings = limiter_options(options)?;
    let store = crate::stores::shared_now(options.store.url.as_deref(), &settings.store).map_err(to_js)?;
    let inner = ratelock::Limiter::with_store(store, settings).map_err(to_js)?;
    Ok(NativeLimiter {
        inner,
        completions: Arc::default(),
    })
}

/// Where the circuit breaker of the store `url` and `timeoutMs` name stands, before any limiter on it
/// is connected: `closed`, `open` or `half-open`, `null` for the memory store. The store is the
/// process's shared one (made here if it is not yet: no I/O).
#[napi]
pub fn breaker_state_of(store: StoreSettings) -> Result<Option<&'static str>> {
    guarded_sync(|| {
        let options = store.options()?;
        let store = crate::stores::shared_now(store.url.as_deref(), &options).map_err(to_js)?;
        Ok(store.breaker_state().map(|state| state.as_str()))
    })
}

#[napi]
impl NativeLimiter {
    /// Whether the store answers in memory (then `checkInMemory` answers at once).
    #[napi(getter)]
    pub fn is_local(&self) -> bool {
        !self.inner.store().does_io()
    }

    /// Reaches the store now (connecting first if needed): rejects with configuration errors and
    /// outages alike, whatever `onError` says.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn ping<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let inner = self.inner.clone();
        promise_of(env, async move { inner.ping().await.map_err(to_js) })
    }

    /// Where the store's circuit breaker stands in this process: `closed`, `open` or `half-open`;
    /// `null` for the memory store.
    #[napi(getter)]
    pub fn breaker_state(&self) -> Option<&'static str> {
        self.inner.breaker_state().map(|state| state.as_str())
    }

    /// The key prefix.
    #[napi(getter)]
    pub fn prefix(&self) -> String {
        self.inner.options().prefix.clone()
    }

    /// The rules of `text`, parsed once per limiter by the core; throws `ERR_RATELOCK_INVALID_RULE`
    /// naming the bad part.
    #[napi]
    pub fn prepare_rules(&self, text: String) -> Result<RulesInfo> {
        guarded_sync(|| {
            let prepared = self.inner.prepared(&text).map_err(to_js)?;
            let rules = prepared.rules();
            Ok(RulesInfo {
                texts: (0..rules.len()).map(|i| prepared.text(i).to_string()).collect(),
                periods_ms: rules
                    .iter()
                    .map(|rule| convert::to_millis(rule.period()))
                    .collect(),
                rules: Handed(prepared),
            })
        })
    }

    /// Starts `hit` (spend) or `peek` as call `id`; its answer comes in a later `nextBatch()`.
    #[napi]
    pub fn submit(
        &self,
        key: Either<String, Buffer>,
        #[napi(ts_arg_type = "ExternalObject<PreparedRules>")] rules: Handle<Arc<ratelock::PreparedRules>>,
        cost: Option<f64>,
        now_ms: Option<f64>,
        spend: bool,
        id: u32,
    ) -> Result<()> {
        let check = self.check(key, &rules, cost, now_ms, spend)?;
        let completions = self.completions.clone();
        spawn(async move {
            match guarded(check.decide()).await {
                Ok(answer) => completions.answer(id, answer),
                Err(error) => completions.fail(id, error),
            }
        })
    }

    /// The answers of submitted calls, as soon as there is at least one.
    #[napi(ts_return_type = "Promise<Batch>")]
    pub fn next_batch<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Batch>> {
        let completions = self.completions.clone();
        promise_of(env, async move { Ok(completions.next_batch().await) })
    }

    /// Forgets the state of every given rule for `key`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn reset<'env>(
        &self,
        env: &'env Env,
        key: Either<String, Buffer>,
        #[napi(ts_arg_type = "ExternalObject<PreparedRules>")] rules: RulesArg,
    ) -> Result<PromiseRaw<'env, ()>> {
        let (key, parsed, limiter) = (convert::key(key), rules.rules().clone(), self.inner.clone());
        promise_of(
            env,
            async move { limiter.reset(&key, &parsed).await.map_err(to_js) },
        )
    }

    /// Gives back `cost` units of every rule for `key` where the algorithm can; resolves to the numbers
    /// of the decision a peek of the same cost gives afterwards (the layout of `decisionLayout()`).
    #[napi(ts_return_type = "Promise<Array<number>>")]
    pub fn refund<'env>(
        &self,
        env: &'env Env,
        key: Either<String, Buffer>,
        #[napi(ts_arg_type = "ExternalObject<PreparedRules>")] rules: RulesArg,
        cost: Option<f64>,
        now_ms: Option<f64>,
    ) -> Result<PromiseRaw<'env, Vec<f64>>> {
        let (key, parsed, limiter) = (convert::key(key), rules.rules().clone(), self.inner.clone());
        promise_of(env, async move {
            let (cost, now_us) = (convert::cost(cost)?, convert::now_us(now_ms)?);
            let decision = limiter.refund(&key, &parsed, cost, now_us).await.map_err(to_js)?;
            Ok(numbers(&decision).to_vec())
        })
    }

    /// Books the earliest slot within `max_wait_ms` at which every rule admits `cost` units; resolves to
    /// the numbers of the decision (allowed with the wait before the slot as `retryAfterMs`, or the
    /// denial when the slot is further).
    #[napi(ts_return_type = "Promise<Array<number>>")]
    pub fn reserve<'env>(
        &self,
        env: &'env Env,
        key: Either<String, Buffer>,
        #[napi(ts_arg_type = "ExternalObject<PreparedRules>")] rules: RulesArg,
        cost: Option<f64>,
        max_wait_ms: f64,
        now_ms: Option<f64>,
    ) -> Result<PromiseRaw<'env, Vec<f64>>> {
        let (key, parsed, limiter) = (convert::key(key), rules.rules().clone(), self.inner.clone());
        promise_of(env, async move {
            let (cost, now_us) = (convert::cost(cost)?, convert::now_us(now_ms)?);
            let max_wait = convert::max_wait(max_wait_ms)?;
            let decision = limiter
                .reserve(&key, &parsed, cost, max_wait, now_us)
                .await
                .map_err(to_js)?;
            Ok(numbers(&decision).to_vec())
        })
    }

    /// Sets `key`'s override to `rules` (for `ttl_ms`, or with no end), or clears it when `rules` is
    /// absent; resolves to true when one was set or cleared.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn change_override<'env>(
        &self,
        env: &'env Env,
        key: Either<String, Buffer>,
        #[napi(ts_arg_type = "ExternalObject<PreparedRules> | undefined | null")] rules: Option<RulesArg>,
        ttl_ms: Option<f64>,
        now_ms: Option<f64>,
    ) -> Result<PromiseRaw<'env, bool>> {
        let rules = rules.map(|rules| rules.rules().clone());
        let (key, limiter) = (convert::key(key), self.inner.clone());
        promise_of(env, async move {
            let ttl = ttl_ms.map(|ms| convert::millis("ttlMs", ms)).transpose()?;
            let now_us = convert::now_us(now_ms)?;
            match rules {
                Some(rules) => limiter
                    .set_override(&key, &rules, ttl, now_us)
                    .await
                    .map(|()| true),
                None => limiter.clear_override(&key).await,
            }
            .map_err(to_js)
        })
    }

    /// Changes `key`'s ban or list entry: `op` is `block`, `deny` or `allow` (for `spanMs`), `unblock`
    /// or `clear`; resolves to true when an entry was put or removed.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn change_entry<'env>(
        &self,
        env: &'env Env,
        op: String,
        key: Either<String, Buffer>,
        span_ms: Option<f64>,
        now_ms: Option<f64>,
    ) -> Result<PromiseRaw<'env, bool>> {
        let (key, limiter) = (convert::key(key), self.inner.clone());
        promise_of(env, async move {
            // The argument as the public methods name it (`block`'s durationMs, `deny`'s and `allow`'s
            // ttlMs).
            let name = match op.as_str() {
                "block" => "durationMs",
                "deny" | "allow" => "ttlMs",
                _ => "spanMs",
            };
            let span = span_ms.map(|ms| convert::millis(name, ms)).transpose()?;
            let call = StandingCall::named(&op, span, name).map_err(to_js)?;
            let now_us = convert::now_us(now_ms)?;
            limiter.stand(&key, call, now_us).await.map_err(to_js)
        })
    }
}

/// One `hit` or `peek`, its arguments converted.
struct Check {
    limiter: ratelock::Limiter,
    key: Vec<u8>,
    rules: Arc<ratelock::Rules>,
    cost: u64,
    now_us: Option<u64>,
    spend: bool,
}

impl Check {
    async fn decide(self) -> Result<[f64; DECISION_FIELDS]> {
        let (limiter, key, rules, cost) = (&self.limiter, &self.key, &*self.rules, self.cost);
        let decision = limiter.check(key, rules, cost, self.spend, self.now_us).await;
        decision.map(|decision| numbers(&decision)).map_err(to_js)
    }
}

impl NativeLimiter {
    /// The core limiter.
    pub(crate) fn core(&self) -> &ratelock::Limiter {
        &self.inner
    }

    fn check(
        &self,
        key: Either<String, Buffer>,
        rules: &ratelock::PreparedRules,
        cost: Option<f64>,
        now_ms: Option<f64>,
        spend: bool,
    ) -> Result<Check> {
        Ok(Check {
            limiter: self.inner.clone(),
            key: convert::key(key),
            rules: rules.rules().clone(),
            cost: convert::cost(cost)?,
            now_us: convert::now_us(now_ms)?,
            spend,
        })
    }
}

/// Limiter options from the JavaScript ones.
fn limiter_options(options: &mut LimiterOptions) -> Result<ratelock::LimiterOptions> {
    let mut settings = ratelock::LimiterOptions::default().with_store(options.store.options()?);
    if let Some(prefix) = &options.store.prefix {
        settings = settings.with_prefix(prefix.as_str());
    }
    if let Some(on_error) = &options.on_error {
        settings = settings.with_on_error(on_error.parse().map_err(to_js)?);
    }
    if let Some(algorithm) = &options.default_algorithm {
        settings = settings.with_default_algorithm(algorithm.parse().map_err(to_js)?);
    }
    if let Some(clock) = &options.clock {
        settings = settings.with_clock(clock.parse().map_err(to_js)?);
    }
    if let Some(instances) = options.instances {
        // The core's range (`MAX_INSTANCES`), checked on the JavaScript number before it is converted.
        if !(instances >= 1.0 && instances.fract() == 0.0 && instances <= ratelock::MAX_INSTANCES as f64) {
            return Err(invalid_argument(
                "instances",
                format!(
                    "expected a whole number from 1 to {}, got {}",
                    ratelock::MAX_INSTANCES,
                    ratelock::excerpt::of(&instances.to_string())
                ),
            ));
        }
        settings = settings.with_instances(instances as u64);
    }
    match (options.deny_cache, options.deny_cache_max_age_ms) {
        (Some(capacity), max_age_ms) => {
            let mut cache = ratelock::DenyCache::new(convert::count("denyCache", capacity)? as usize);
            if let Some(ms) = max_age_ms {
                cache = cache.with_max_age(convert::millis("denyCacheMaxAgeMs", ms)?);
            }
            settings = settings.with_deny_cache_of(cache);
        }
        (None, Some(_)) => {
            return Err(invalid_argument(
                "denyCacheMaxAgeMs",
                "applies only with `denyCache`",
            ));
        }
        (None, None) => {}
    }
    let settings = settings.with_shadow(options.shadow.unwrap_or(false));
    // Metrics come last: they see the answer every other hook made.
    Ok(match options.metrics.take() {
        Some(record) => settings.with_hook(crate::metrics::hook_of(record)),
        None => settings,
    })
}
