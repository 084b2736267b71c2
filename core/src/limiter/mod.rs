//! `Limiter`: the public rate-limiting API (`hit`, `peek`, `reset`) over a store, with a key prefix,
//! a default algorithm for rule text, a clock choice and a failure policy.

#[cfg(feature = "redis")]
mod wire_calls;

use std::sync::Arc;
use std::time::Duration;

use crate::algorithm::overrides::Overrides;
use crate::algorithm::standing::{Standing, StandingCall, BANS, LIST_ENTRIES};
use crate::clock::now_us;
use crate::decision::Decision;
use crate::deny_cache::DenyCache;
use crate::error::{Error, Result};
use crate::fallback::LocalFallback;
use crate::hook::{Answered, Hook, Hooks, LimitCall};
use crate::key::{check_key, check_prefix};
use crate::rule::{Algorithm, PreparedCache, PreparedRules, Rules};
use crate::store::connection_core::BreakerState;
use crate::store::{EntryChange, LimitRequest, LimitStore, MemoryStore, OverrideChange, Store, StoreOptions};

/// A store's answer where neither its time nor its route is known (the paths without hooks, and a
/// call that never reached the store).
pub(crate) const UNTIMED: Answered = Answered::ByStore {
    elapsed: None,
    route: None,
};

/// What a limiter answers when its store fails or times out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FailurePolicy {
    /// Return the error (the default).
    #[default]
    Raise,
    /// Allow the request; the decision says `degraded = true`.
    Allow,
    /// Deny the request; the decision says `degraded = true`.
    Deny,
    /// Decide in this process, on its share of every rule (see [`LimiterOptions::instances`]); the
    /// decision says `degraded = true`. When the store answers again, the local state is dropped.
    Local,
}

impl std::str::FromStr for FailurePolicy {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "raise" => Ok(FailurePolicy::Raise),
            "allow" => Ok(FailurePolicy::Allow),
            "deny" => Ok(FailurePolicy::Deny),
            "local" => Ok(FailurePolicy::Local),
            _ => Err(Error::invalid_argument(
                "on_error",
                format!(
                    "{:?} is not raise, allow, deny or local",
                    crate::excerpt::of(text)
                ),
            )),
        }
    }
}

/// Whose clock decides: the store's (Redis `TIME`, the default: no client clock skew) or this process's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClockSource {
    /// The store reads its own clock (Redis `TIME`; the memory store reads the local clock).
    #[default]
    Store,
    /// This process sends its wall-clock time with every call.
    Local,
}

impl std::str::FromStr for ClockSource {
    type Err = Error;

    /// `"store"` or `"local"`, the names every binding takes.
    ///
    /// ```
    /// use ratelock::ClockSource;
    /// assert_eq!("local".parse::<ClockSource>()?, ClockSource::Local);
    /// assert!("sundial".parse::<ClockSource>().unwrap_err().to_string().contains("clock"));
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "store" => Ok(ClockSource::Store),
            "local" => Ok(ClockSource::Local),
            other => Err(Error::invalid_argument(
                "clock",
                format!(
                    "expected \"store\" or \"local\", got {:?}",
                    crate::excerpt::of(other)
                ),
            )),
        }
    }
}

/// How a [`Limiter`] is set up. Start from `LimiterOptions::default()` and change what you need.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LimiterOptions {
    /// Prefix of every storage key (no braces). Default `"rl"`.
    pub prefix: String,
    /// What to answer when the store fails.
    pub on_error: FailurePolicy,
    /// Algorithm of rules given as text without `using`.
    pub default_algorithm: Algorithm,
    /// Whose clock decides.
    pub clock: ClockSource,
    /// The store's settings (timeout, memory bound).
    pub store: StoreOptions,
    /// `retry_after` of a degraded denial.
    pub degraded_retry_after: Duration,
    /// Under [`FailurePolicy::Local`]: how many processes (across all hosts) share the limits, so
    /// that each decides on its share while the store is out. From 1 to [`MAX_INSTANCES`]; default 1.
    pub instances: u64,
    /// What sees (and may change) every decision: see [`Hook`]. None by default.
    pub hooks: Hooks,
    /// Shadow mode for every rule: decisions are made and spent as usual, but a denial is let through
    /// with [`Decision::would_deny`] set (see [`with_shadow`](Self::with_shadow)). Default false.
    pub shadow: bool,
    /// The local deny cache, when one is attached (see [`with_deny_cache`](Self::with_deny_cache)).
    pub deny_cache: Option<Arc<DenyCache>>,
}

/// The most processes [`LimiterOptions::instances`] may name (2^32 − 1, as in every binding).
///
/// ```
/// use ratelock::{Limiter, LimiterOptions, Store, MAX_INSTANCES};
/// let store = Store::new("memory://", &Default::default())?;
/// for instances in [0, MAX_INSTANCES + 1] {
///     let options = LimiterOptions::default().with_instances(instances);
///     let err = Limiter::with_store(store.clone(), options).err().unwrap();
///     assert!(err.to_string().contains("instances"));
/// }
/// # Ok::<(), ratelock::Error>(())
/// ```
pub const MAX_INSTANCES: u64 = u32::MAX as u64;

impl LimiterOptions {
    /// The same options in shadow mode (or not): every decision is made and spent exactly as when
    /// enforcing (the store's state is what enforcement would leave), but a denial of any kind (a rule,
    /// a ban, the deny list, the failure policy's `deny`) comes back allowed, with
    /// [`Decision::would_deny`] set and enforcement's figures. For rolling a new limit out: watch what
    /// it would deny, then turn shadow off. One rule alone: its `shadow` word. A rule that `block`s is
    /// refused ([`Error::InvalidRule`](crate::Error)): its ban is the key's entry, which every limiter on
    /// the prefix obeys, so it would deny for real.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use ratelock::{Limiter, LimiterOptions, Store};
    /// let store = Store::new("memory://", &Default::default())?;
    /// let limiter = Limiter::with_store(store, LimiterOptions::default().with_shadow(true))?;
    /// let rules = limiter.rules("1/minute")?;
    /// assert!(!limiter.hit("k", &rules, 1).await?.would_deny);
    /// let second = limiter.hit("k", &rules, 1).await?;
    /// assert!(second.allowed && second.would_deny && second.retry_after.as_secs() > 0);
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub fn with_shadow(mut self, shadow: bool) -> Self {
        self.shadow = shadow;
        self
    }

    /// The same options with a local deny cache of about `capacity` keys: once the store denies a key,
    /// further calls with the same key, rules and cost are denied from this process's memory until the
    /// denial's `retry_after` (no round trip; [`Decision::cached`] set). Allows are never cached. For
    /// sparing the store during a flood from a few keys. See [`with_deny_cache_of`](Self::with_deny_cache_of)
    /// to bound how long a denial is held.
    pub fn with_deny_cache(self, capacity: usize) -> Self {
        self.with_deny_cache_of(DenyCache::new(capacity))
    }

    /// The same options with `cache` as the local deny cache (e.g. with a `max_age`), attached as a hook.
    pub fn with_deny_cache_of(mut self, cache: DenyCache) -> Self {
        let cache = Arc::new(cache);
        self.deny_cache = Some(cache.clone());
        self.with_hook(cache)
    }

    /// The same options with another key prefix.
    ///
    /// ```
    /// use ratelock::{FailurePolicy, LimiterOptions};
    /// let options = LimiterOptions::default().with_prefix("api").with_on_error(FailurePolicy::Allow);
    /// assert_eq!(options.prefix, "api");
    /// ```
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The same options with another failure policy.
    pub fn with_on_error(mut self, on_error: FailurePolicy) -> Self {
        self.on_error = on_error;
        self
    }

    /// The same options with another default algorithm for rule text.
    pub fn with_default_algorithm(mut self, algorithm: Algorithm) -> Self {
        self.default_algorithm = algorithm;
        self
    }

    /// The same options with another clock source.
    pub fn with_clock(mut self, clock: ClockSource) -> Self {
        self.clock = clock;
        self
    }

    /// The same options with another store timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.store.timeout = timeout;
        self
    }

    /// The same options with another count of processes sharing the limits (for
    /// [`FailurePolicy::Local`]; from 1 to [`MAX_INSTANCES`], checked when the limiter is made).
    pub fn with_instances(mut self, instances: u64) -> Self {
        self.instances = instances;
        self
    }

    /// The same options with `hook` attached after any already attached: it sees every decision.
    ///
    /// ```
    /// use std::sync::Arc;
    /// struct Quiet;
    /// impl ratelock::hook::Hook for Quiet {}
    /// let options = ratelock::LimiterOptions::default().with_hook(Arc::new(Quiet));
    /// assert!(!options.hooks.is_empty());
    /// ```
    pub fn with_hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks = self.hooks.with(hook);
        self
    }

    /// `Ok` for options a limiter can work with; else the invalid argument naming what is wrong.
    fn check(&self) -> Result<()> {
        check_prefix(&self.prefix)?;
        if !(1..=MAX_INSTANCES).contains(&self.instances) {
            return Err(Error::invalid_argument(
                "instances",
                format!(
                    "expected a whole number from 1 to {MAX_INSTANCES}, got {}",
                    self.instances
                ),
            ));
        }
        self.store.check()
    }

    /// The same options with other store settings.
    pub fn with_store(mut self, store: StoreOptions) -> Self {
        self.store = store;
        self
    }
}

impl Default for LimiterOptions {
    fn default() -> Self {
        LimiterOptions {
            prefix: "rl".to_owned(),
            on_error: FailurePolicy::Raise,
            default_algorithm: Algorithm::Gcra,
            clock: ClockSource::Store,
            store: StoreOptions::default(),
            degraded_retry_after: Duration::from_secs(1),
            instances: 1,
            hooks: Hooks::default(),
            shadow: false,
            deny_cache: None,
        }
    }
}

/// A booked slot [`Limiter::wait`] sleeps toward: dropped before the slot (the wait was cancelled), it
/// gives the units back with a refund spawned on the current runtime.
#[cfg(feature = "runtime")]
struct Booking<'a> {
    limiter: &'a Limiter,
    key: &'a [u8],
    rules: &'a Rules,
    cost: u64,
    kept: bool,
}

#[cfg(feature = "runtime")]
impl Drop for Booking<'_> {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (limiter, key, rules, cost) = (
            self.limiter.clone(),
            self.key.to_vec(),
            self.rules.clone(),
            self.cost,
        );
        runtime.spawn(async move {
            // Nobody is left to tell: a refund that fails leaves the slot spent, as a hit would be.
            let _ = limiter.refund(&key, &rules, cost, None).await;
        });
    }
}

/// A store request as hooks see it, on `store`.
fn call_of<'a>(request: &LimitRequest<'a>, store: &Store) -> LimitCall<'a> {
    LimitCall {
        store: store.kind(),
        prefix: request.prefix,
        key: request.key,
        rules: request.rules,
        cost: request.cost,
        spend: request.spend,
        now_us: request.now_us,
        max_wait_us: request.max_wait_us,
    }
}

/// Checks keys against rules: every rule of a key in one round trip, all or nothing.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use ratelock::Limiter;
/// let limiter = Limiter::memory();
/// let rules = limiter.rules("2/second; 3/minute")?;
/// assert!(limiter.hit("user:42", &rules, 2).await?.allowed);
/// let denied = limiter.hit("user:42", &rules, 2).await?;
/// assert!(!denied.allowed);
/// assert_eq!(denied.rule_index, 1); // the per-minute rule has the longer wait
/// # Ok::<(), ratelock::Error>(()) });
/// ```
///
/// Cloning is cheap (two reference counts): clones share the store, the options and the rule texts
/// prepared so far.
#[derive(Debug, Clone)]
pub struct Limiter {
    store: Store,
    shared: Arc<Shared>,
}

/// What a limiter's clones share besides the store.
#[derive(Debug)]
struct Shared {
    options: LimiterOptions,
    /// Under [`FailurePolicy::Local`]: the decisions made while the store is out.
    fallback: Option<LocalFallback>,
    /// Rule texts parsed once (see [`Limiter::prepared`]).
    prepared: PreparedCache,
}

impl Shared {
    fn new(options: LimiterOptions) -> Arc<Self> {
        let fallback = (options.on_error == FailurePolicy::Local)
            .then(|| LocalFallback::new(options.instances, &options.store));
        Arc::new(Shared {
            options,
            fallback,
            prepared: PreparedCache::new(PreparedCache::CAPACITY),
        })
    }
}

impl Limiter {
    /// A limiter on a new embedded memory store with default options.
    pub fn memory() -> Self {
        let options = LimiterOptions::default();
        Limiter {
            store: Store::Memory(MemoryStore::for_options(&options.store)),
            shared: Shared::new(options),
        }
    }

    /// Connects to `url` (`memory://`, `redis://`, `rediss://`) with default options.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, LimiterOptions::default()).await
    }

    /// A limiter for `url` with the given options. No I/O happens here (lazy start): the first calls
    /// connect, following the failure policy while they do. Use [`ping`](Self::ping) to fail at boot.
    pub async fn connect_with(url: &str, options: LimiterOptions) -> Result<Self> {
        options.check()?;
        let store = Store::connect(url, &options.store).await?;
        Self::with_store(store, options)
    }

    /// A limiter over an existing store (shared with other limiters or locks).
    pub fn with_store(store: Store, options: LimiterOptions) -> Result<Self> {
        options.check()?;
        Ok(Limiter {
            store,
            shared: Shared::new(options),
        })
    }

    /// Reaches the store now (a `PING`, connecting first if needed), for a service that wants to fail
    /// at boot: configuration errors and outages alike are returned; no failure policy applies.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use ratelock::{Limiter, LimiterOptions, FailurePolicy};
    /// // Lazy start: a limiter on a server that is down is built without error...
    /// let options = LimiterOptions::default().with_on_error(FailurePolicy::Allow);
    /// let limiter = Limiter::connect_with("redis://127.0.0.1:1/", options).await?;
    /// // ...its calls follow the failure policy, and `ping` says the server is out.
    /// let rules = limiter.rules("10/second")?;
    /// assert!(limiter.hit("k", &rules, 1).await?.degraded);
    /// assert!(limiter.ping().await.unwrap_err().is_store_failure());
    /// assert!(Limiter::memory().ping().await.is_ok());
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub async fn ping(&self) -> Result<()> {
        self.store.ping().await
    }

    /// Where the store's circuit breaker stands (`None` for the memory store, which has none).
    pub fn breaker_state(&self) -> Option<BreakerState> {
        self.store.breaker_state()
    }

    /// The store this limiter uses.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The limiter's options.
    pub fn options(&self) -> &LimiterOptions {
        &self.shared.options
    }

    /// Parses rule text with this limiter's default algorithm.
    pub fn rules(&self, text: &str) -> Result<Rules> {
        Rules::parse_with_default(text, self.shared.options.default_algorithm)
    }

    /// The rules of `text` with each rule's canonical text, parsed once per limiter (shared by its
    /// clones and threads, at most 1,024 distinct texts): for callers that pass rules as text on every
    /// call, as the bindings do.
    ///
    /// ```
    /// let limiter = ratelock::Limiter::memory();
    /// let first = limiter.prepared("5/minute")?;
    /// assert!(std::sync::Arc::ptr_eq(&first, &limiter.clone().prepared("5/minute")?));
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn prepared(&self, text: &str) -> Result<Arc<PreparedRules>> {
        self.shared.prepared.get(text, self.options().default_algorithm)
    }

    /// Takes `cost` units from every rule for `key` if all of them allow it; otherwise takes nothing.
    /// A key longer than [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES) (64 KiB) is an invalid argument
    /// (`key`), here and in every other method that takes a key.
    pub async fn hit(&self, key: impl AsRef<[u8]>, rules: &Rules, cost: u64) -> Result<Decision> {
        self.run(key.as_ref(), rules, cost, None, true).await
    }

    /// Like [`hit`](Self::hit) at an explicit time (µs since the Unix epoch) instead of a clock.
    pub async fn hit_at(
        &self,
        key: impl AsRef<[u8]>,
        rules: &Rules,
        cost: u64,
        now_us: u64,
    ) -> Result<Decision> {
        self.run(key.as_ref(), rules, cost, Some(now_us), true).await
    }

    /// Answers what [`hit`](Self::hit) would answer, without spending anything.
    pub async fn peek(&self, key: impl AsRef<[u8]>, rules: &Rules, cost: u64) -> Result<Decision> {
        self.run(key.as_ref(), rules, cost, None, false).await
    }

    /// Like [`peek`](Self::peek) at an explicit time (µs since the Unix epoch).
    pub async fn peek_at(
        &self,
        key: impl AsRef<[u8]>,
        rules: &Rules,
        cost: u64,
        now_us: u64,
    ) -> Result<Decision> {
        self.run(key.as_ref(), rules, cost, Some(now_us), false).await
    }

    /// The one check every binding calls: [`hit`](Self::hit) when `spend`, else [`peek`](Self::peek),
    /// at `now_us` (µs since the Unix epoch) when given, else by the limiter's clock.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = limiter.rules("1/minute")?;
    /// assert!(limiter.check("k", &rules, 1, false, None).await?.allowed); // a peek spends nothing
    /// assert!(limiter.check("k", &rules, 1, true, Some(1_000_000)).await?.allowed);
    /// assert!(!limiter.check("k", &rules, 1, true, Some(1_000_001)).await?.allowed);
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub async fn check(
        &self,
        key: impl AsRef<[u8]>,
        rules: &Rules,
        cost: u64,
        spend: bool,
        now_us: Option<u64>,
    ) -> Result<Decision> {
        self.run(key.as_ref(), rules, cost, now_us, spend).await
    }

    /// [`check`](Self::check) on the calling thread without an async runtime when that is possible (see
    /// [`try_hit_blocking`](Self::try_hit_blocking)); `None` means: use `check`.
    pub fn try_check_blocking(
        &self,
        key: impl AsRef<[u8]>,
        rules: &Rules,
        cost: u64,
        spend: bool,
        now_us: Option<u64>,
    ) -> Option<Result<Decision>> {
        self.run_blocking(key.as_ref(), rules, cost, now_us, spend)
    }

    /// Forgets the state of every given rule for `key`.
    pub async fn reset(&self, key: impl AsRef<[u8]>, rules: &Rules) -> Result<()> {
        check_key("key", key.as_ref())?;
        let reset = self
            .store
            .reset(&self.shared.options.prefix, key.as_ref(), rules)
            .await;
        self.forget_denials(key.as_ref());
        reset
    }

    /// Gives back `cost` units of every rule for `key` (a request that failed downstream should not
    /// count), where the algorithm can: never below an empty state, never beyond what was spent in the
    /// rule's window (see [`refund`](crate::algorithm::refund::refund) for each algorithm). Answers as a
    /// [`peek`](Self::peek) of the same cost would afterwards. `now_us` replaces the clock as in
    /// [`hit_at`](Self::hit_at). An outage raises (there is no failure policy for a refund).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = limiter.rules("2/minute using fixed_window")?;
    /// limiter.hit("k", &rules, 2).await?;
    /// assert!(!limiter.peek("k", &rules, 1).await?.allowed);
    /// let after = limiter.refund("k", &rules, 1, None).await?;
    /// assert!(after.allowed, "one unit back: a request of 1 fits again");
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub async fn refund(
        &self,
        key: impl AsRef<[u8]>,
        rules: &Rules,
        cost: u64,
        now_us: Option<u64>,
    ) -> Result<Decision> {
        for rule in rules.iter() {
            crate::algorithm::check_cost(rule, cost)?;
        }
        let request = self.request(key.as_ref(), rules, cost, now_us, false)?;
        let verdict = self.store.refund(&request).await?;
        self.forget_denials(key.as_ref());
        Ok(Decision::decided(verdict, rules))
    }

    /// Books the earliest moment within `max_wait` at which every rule admits `cost` units, instead of
    /// a denial: waiters are served in booking order, one round trip each, and nobody polls. The
    /// decision is allowed when booked, and its `retry_after` is the wait before acting (zero when the
    /// request fits now); when the slot is further than `max_wait`, nothing is spent and the decision
    /// is the denial (its `retry_after` says how far the slot was). The units are spent at booking: a
    /// caller that gives up gives them back with [`refund`](Self::refund). Only gcra, token_bucket and
    /// leaky_bucket rules can hold a booking ahead, and a reservation enforces (a rule in shadow is
    /// refused). A reservation never starts a ban. `now_us` replaces the clock as in
    /// [`hit_at`](Self::hit_at).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = limiter.rules("2/second")?;
    /// limiter.hit_at("k", &rules, 2, 0).await?;
    /// let booked = limiter.reserve("k", &rules, 1, Duration::from_secs(1), Some(0)).await?;
    /// assert!(booked.allowed);
    /// assert_eq!(booked.retry_after, Duration::from_millis(500));
    /// let next = limiter.reserve("k", &rules, 1, Duration::from_secs(1), Some(0)).await?;
    /// assert_eq!(next.retry_after, Duration::from_secs(1), "booked after the first");
    /// let too_far = limiter.reserve("k", &rules, 1, Duration::from_secs(1), Some(0)).await?;
    /// assert!(!too_far.allowed, "1.5 s away: refused, nothing spent");
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub async fn reserve(
        &self,
        key: impl AsRef<[u8]>,
        rules: &Rules,
        cost: u64,
        max_wait: Duration,
        now_us: Option<u64>,
    ) -> Result<Decision> {
        let max_wait_us = crate::clock::micros(max_wait);
        // The cost, the rules and the longest wait are checked where every store checks a request.
        if self.shared.options.shadow {
            return Err(Error::invalid_argument(
                "rules",
                "a reservation enforces its rules; this limiter is in shadow",
            ));
        }
        let mut request = self.request(key.as_ref(), rules, cost, now_us, true)?;
        request.max_wait_us = Some(max_wait_us);
        self.run_request(request).await
    }

    /// [`reserve`](Self::reserve)s, then sleeps until the booked slot. It returns the reservation's
    /// decision: allowed when the caller may act now (its `retry_after` is how long it slept), or the
    /// denial (nothing spent, nothing slept) when the slot was further than `max_wait`. Dropping the future while it sleeps gives the booking back (a
    /// [`refund`](Self::refund), on the runtime, where it can).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// use std::time::{Duration, Instant};
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = limiter.rules("20/second burst 1")?;
    /// let started = Instant::now();
    /// for _ in 0..3 {
    ///     assert!(limiter.wait("k", &rules, 1, Duration::from_secs(1)).await?.allowed);
    /// }
    /// assert!(started.elapsed() >= Duration::from_millis(100), "paced at 50 ms each");
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    #[cfg(feature = "runtime")]
    pub async fn wait(
        &self,
        key: impl AsRef<[u8]>,
        rules: &Rules,
        cost: u64,
        max_wait: Duration,
    ) -> Result<Decision> {
        let key = key.as_ref();
        let decision = self.reserve(key, rules, cost, max_wait, None).await?;
        if decision.allowed && !decision.retry_after.is_zero() {
            // A degraded booking (the local fallback's, in memory) is not the store's to refund: a
            // refund sent there once it is back would give back units never spent there.
            let mut booking = Booking {
                limiter: self,
                key,
                rules,
                cost,
                kept: decision.degraded,
            };
            tokio::time::sleep(decision.retry_after).await;
            booking.kept = true;
        }
        Ok(decision)
    }

    /// Bans `key` under this limiter's prefix for `duration` (1 ms to 366 days): every hit and peek on
    /// it is denied with [`Reason::Ban`](crate::Reason::Ban), waiting out the ban, in every process and
    /// language that shares the store. Replaces any ban or list entry the key had. A rule's `block`
    /// word starts the same ban by itself when the rule denies a hit.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = limiter.rules("100/minute")?;
    /// limiter.block("abuser", Duration::from_secs(600)).await?;
    /// let denied = limiter.hit("abuser", &rules, 1).await?;
    /// assert_eq!((denied.allowed, denied.reason), (false, ratelock::Reason::Ban));
    /// assert!(limiter.unblock("abuser").await?);
    /// assert!(limiter.hit("abuser", &rules, 1).await?.allowed);
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub async fn block(&self, key: impl AsRef<[u8]>, duration: Duration) -> Result<()> {
        self.set_standing(key.as_ref(), Standing::Banned, "duration", duration)
            .await
    }

    /// Lifts `key`'s ban; true when it had one (a list entry stays: see [`clear`](Self::clear)).
    pub async fn unblock(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        self.change_standing(key.as_ref(), StandingCall::Remove(BANS))
            .await
    }

    /// Puts `key` on this prefix's deny list for `ttl` (1 ms to 366 days): every hit and peek is denied
    /// with [`Reason::DenyList`](crate::Reason::DenyList), checked in the same call as the rules.
    /// Replaces any ban or list entry the key had.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = limiter.rules("1/minute")?;
    /// limiter.allow("health-check", Duration::from_secs(3600)).await?;
    /// for _ in 0..5 {
    ///     let passed = limiter.hit("health-check", &rules, 1).await?;
    ///     assert_eq!((passed.allowed, passed.reason), (true, ratelock::Reason::AllowList));
    /// }
    /// limiter.deny("scraper", Duration::from_secs(3600)).await?;
    /// assert_eq!(limiter.hit("scraper", &rules, 1).await?.reason, ratelock::Reason::DenyList);
    /// assert!(limiter.clear("scraper").await?);
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub async fn deny(&self, key: impl AsRef<[u8]>, ttl: Duration) -> Result<()> {
        self.set_standing(key.as_ref(), Standing::Denied, "ttl", ttl)
            .await
    }

    /// Puts `key` on this prefix's allow list for `ttl` (1 ms to 366 days): every hit and peek passes
    /// with [`Reason::AllowList`](crate::Reason::AllowList) and spends nothing. Replaces any ban or list
    /// entry the key had.
    pub async fn allow(&self, key: impl AsRef<[u8]>, ttl: Duration) -> Result<()> {
        self.set_standing(key.as_ref(), Standing::Allowed, "ttl", ttl)
            .await
    }

    /// Takes `key` off the deny or allow list; true when it was on one (a ban stays: see
    /// [`unblock`](Self::unblock)).
    pub async fn clear(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        self.change_standing(key.as_ref(), StandingCall::Remove(LIST_ENTRIES))
            .await
    }

    /// Gives `key` other limits for the rules of the same windows (a tenant's plan), kept in the
    /// store beside its state and read in the same call as every decision, so the change applies on
    /// the next request in every process and language: each rule of a later call takes the limit and
    /// burst of the first of `rules` with its algorithm and period (a calendar rule: its unit and
    /// offset), and keeps its own state, ban and shadow. The state carries over where the algorithm
    /// allows (see [`overrides`](crate::algorithm::overrides)). For `ttl` (1 ms to 366 days), or until
    /// [`clear_override`](Self::clear_override) when `None`. `now_us` is the memory store's clock, when
    /// given.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let limiter = ratelock::Limiter::memory();
    /// let free = limiter.rules("2/minute using fixed_window")?;
    /// limiter.hit("tenant:42", &free, 2).await?;
    /// assert!(!limiter.peek("tenant:42", &free, 1).await?.allowed);
    /// limiter.set_override("tenant:42", &limiter.rules("10/minute using fixed_window")?, None, None).await?;
    /// let pro = limiter.hit("tenant:42", &free, 1).await?;
    /// assert_eq!((pro.allowed, pro.limit, pro.remaining), (true, 10, 7), "the 2 spent still count");
    /// assert!(limiter.clear_override("tenant:42").await?);
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub async fn set_override(
        &self,
        key: impl AsRef<[u8]>,
        rules: &Rules,
        ttl: Option<Duration>,
        now_us: Option<u64>,
    ) -> Result<()> {
        let key = key.as_ref();
        check_key("key", key)?;
        let for_us = ttl
            .map(|ttl| crate::algorithm::standing::span_us("ttl", ttl))
            .transpose()?;
        let overrides = Overrides::new(rules.clone());
        let change = OverrideChange {
            prefix: &self.shared.options.prefix,
            key,
            overrides: Some(&overrides),
            for_us,
            now_us,
        };
        self.store.set_override(&change).await?;
        self.forget_denials(key);
        Ok(())
    }

    /// Takes `key`'s override away: its rules decide as given again (see
    /// [`set_override`](Self::set_override)); true when it had one.
    pub async fn clear_override(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        let key = key.as_ref();
        check_key("key", key)?;
        let change = OverrideChange {
            prefix: &self.shared.options.prefix,
            key,
            overrides: None,
            for_us: None,
            now_us: None,
        };
        let cleared = self.store.set_override(&change).await?;
        self.forget_denials(key);
        Ok(cleared)
    }

    async fn set_standing(
        &self,
        key: &[u8],
        standing: Standing,
        name: &'static str,
        span: Duration,
    ) -> Result<()> {
        let call = StandingCall::set(standing, name, span)?;
        self.change_standing(key, call).await.map(drop)
    }

    async fn change_standing(&self, key: &[u8], call: StandingCall) -> Result<bool> {
        self.stand(key, call, None).await
    }

    /// The one change of a key's ban or list entry every binding calls ([`block`](Self::block),
    /// [`unblock`](Self::unblock), [`deny`](Self::deny), [`allow`](Self::allow) and
    /// [`clear`](Self::clear) are its forms), at `now_us` when given, else by the limiter's clock; true
    /// when an entry was put or removed.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use ratelock::algorithm::standing::{Standing, StandingCall, BANS};
    /// let limiter = ratelock::Limiter::memory();
    /// let ban = StandingCall::set(Standing::Banned, "duration", std::time::Duration::from_secs(60))?;
    /// limiter.stand("k", ban, Some(1_000_000)).await?;
    /// assert!(!limiter.stand("k", StandingCall::Remove(BANS), Some(61_000_000)).await?, "ended by then");
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub async fn stand(
        &self,
        key: impl AsRef<[u8]>,
        call: StandingCall,
        now_us: Option<u64>,
    ) -> Result<bool> {
        let key = key.as_ref();
        check_key("key", key)?;
        crate::clock::check_now(now_us)?;
        if let StandingCall::Set { for_us, .. } = call {
            // Built directly, a span skips `StandingCall::set`'s check: every store refuses what the
            // Lua script refuses (a span past 366 days would run past every clock's range).
            crate::algorithm::standing::span_us("for_us", Duration::from_micros(for_us))?;
        }
        let now =
            now_us.or_else(|| (self.shared.options.clock == ClockSource::Local).then(crate::clock::now_us));
        let change = EntryChange {
            prefix: &self.shared.options.prefix,
            key,
            call,
            now_us: now,
        };
        let changed = self.store.stand(&change).await;
        self.forget_denials(key);
        changed
    }

    /// The local deny cache, when the options attached one.
    pub fn deny_cache(&self) -> Option<&DenyCache> {
        self.shared.options.deny_cache.as_deref()
    }

    /// Forgets the deny cache's denials of `key` (its entry or its state has just changed).
    fn forget_denials(&self, key: &[u8]) {
        if let Some(cache) = &self.shared.options.deny_cache {
            cache.forget(key);
        }
    }

    /// Like [`hit`](Self::hit), answered on the calling thread without an async runtime when that is
    /// possible: always on the memory store, and on Redis when the store's blocking connection is free
    /// (one blocking socket round trip, no thread hand-off). `None` means: use [`hit`](Self::hit).
    /// `now_us` replaces the clock as in [`hit_at`](Self::hit_at).
    ///
    /// ```
    /// use ratelock::Limiter;
    /// let limiter = Limiter::memory();
    /// let rules = limiter.rules("1/minute")?;
    /// let first = limiter.try_hit_blocking("user:42", &rules, 1, None).expect("memory always answers")?;
    /// assert!(first.allowed);
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn try_hit_blocking(
        &self,
        key: impl AsRef<[u8]>,
        rules: &Rules,
        cost: u64,
        now_us: Option<u64>,
    ) -> Option<Result<Decision>> {
        self.run_blocking(key.as_ref(), rules, cost, now_us, true)
    }

    /// [`peek`](Self::peek) as [`try_hit_blocking`](Self::try_hit_blocking) does `hit`.
    pub fn try_peek_blocking(
        &self,
        key: impl AsRef<[u8]>,
        rules: &Rules,
        cost: u64,
        now_us: Option<u64>,
    ) -> Option<Result<Decision>> {
        self.run_blocking(key.as_ref(), rules, cost, now_us, false)
    }

    #[inline]
    pub(crate) fn request<'r>(
        &'r self,
        key: &'r [u8],
        rules: &'r Rules,
        cost: u64,
        now: Option<u64>,
        spend: bool,
    ) -> Result<LimitRequest<'r>> {
        check_key("key", key)?;
        crate::clock::check_now(now)?;
        if self.shared.options.shadow {
            refuse_bans_in_shadow(rules)?;
        }
        let now_us = now.or_else(|| (self.shared.options.clock == ClockSource::Local).then(now_us));
        Ok(self.checked_request(key, rules, cost, now_us, spend))
    }

    /// The request of a call whose key and time were checked, and whose time was chosen, before (a wire
    /// call built again for a retry).
    pub(crate) fn checked_request<'r>(
        &'r self,
        key: &'r [u8],
        rules: &'r Rules,
        cost: u64,
        now_us: Option<u64>,
        spend: bool,
    ) -> LimitRequest<'r> {
        LimitRequest {
            prefix: &self.shared.options.prefix,
            key,
            rules,
            cost,
            now_us,
            spend,
            max_wait_us: None,
        }
    }

    async fn run(
        &self,
        key: &[u8],
        rules: &Rules,
        cost: u64,
        now: Option<u64>,
        spend: bool,
    ) -> Result<Decision> {
        let request = self.request(key, rules, cost, now, spend)?;
        if let Some(answer) = self.answer_at_once(&request) {
            return answer;
        }
        // Boxed: a Redis store's call is a future of about half a KB, which every hit's future would
        // otherwise carry and move, the memory store's too (a move of 512 bytes on a path of about
        // 100 ns); one allocation beside a round trip does not show.
        Box::pin(self.run_request(request)).await
    }

    /// The memory store's answer, decided here without a future (with hooks, without a boxed one):
    /// `None` for any other store (then [`run_request`](Self::run_request)). It borrows the request
    /// rather than moving it into another future: on a path of about 100 ns, each move of a large
    /// value shows.
    #[inline]
    fn answer_at_once(&self, request: &LimitRequest<'_>) -> Option<Result<Decision>> {
        match &self.store {
            Store::Memory(store) if self.shared.options.hooks.is_empty() => {
                Some(self.decide(store.check(request), request))
            }
            Store::Memory(_) => self.run_blocking_hooked(request),
            #[cfg(feature = "redis")]
            _ => None,
        }
    }

    /// [`run`](Self::run) of a request already made (a reservation's, too).
    async fn run_request(&self, request: LimitRequest<'_>) -> Result<Decision> {
        if !self.shared.options.hooks.is_empty() {
            // Boxed: the hooked call's future stays out of this one, which a reservation awaits inline
            // (a hit's is boxed once more in `run`: an allocation beside a round trip).
            return Box::pin(self.run_hooked(request)).await;
        }
        let checked = match &self.store {
            // The memory store never waits: answer without going through a future.
            Store::Memory(store) => store.check(&request),
            #[cfg(feature = "redis")]
            other => {
                // Misuse is answered here, without a round trip.
                for rule in request.rules.iter() {
                    crate::algorithm::check_cost(rule, request.cost)?;
                }
                other.check(&request).await
            }
        };
        self.settle(checked, &request, UNTIMED)
    }

    /// The store's outcomes for `request` (misuse is answered here, without a round trip), for the
    /// hooked path ([`run`](Self::run) writes the same out, which keeps its future small).
    async fn ask_store(&self, request: &LimitRequest<'_>) -> Result<crate::algorithm::standing::Verdict> {
        match &self.store {
            // The memory store never waits: answer without going through a future.
            Store::Memory(store) => store.check(request),
            #[cfg(feature = "redis")]
            other => {
                for rule in request.rules.iter() {
                    crate::algorithm::check_cost(rule, request.cost)?;
                }
                other.check(request).await
            }
        }
    }

    /// [`run`](Self::run) with hooks attached: one may answer first; every one sees the answer, with
    /// the call's time.
    async fn run_hooked(&self, request: LimitRequest<'_>) -> Result<Decision> {
        if let Some(answer) = self.answered_by_hook(&request) {
            return answer;
        }
        let started = crate::clock::Stopwatch::start();
        let checked = self.ask_store(&request).await;
        let how = Answered::ByStore {
            elapsed: Some(started.elapsed()),
            route: self.store.limit_route(),
        };
        self.settle_hooked(checked, &request, how)
    }

    fn run_blocking(
        &self,
        key: &[u8],
        rules: &Rules,
        cost: u64,
        now: Option<u64>,
        spend: bool,
    ) -> Option<Result<Decision>> {
        let request = match self.request(key, rules, cost, now, spend) {
            Ok(request) => request,
            Err(err) => return Some(Err(err)),
        };
        if !self.shared.options.hooks.is_empty() {
            return self.run_blocking_hooked(&request);
        }
        if self.store.does_io() {
            for rule in rules.iter() {
                if let Err(err) = crate::algorithm::check_cost(rule, cost) {
                    return Some(Err(err));
                }
            }
        }
        let checked = self.store.check_blocking(&request)?;
        Some(self.settle(checked, &request, UNTIMED))
    }

    /// [`run_blocking`](Self::run_blocking) with hooks attached.
    #[inline(never)]
    fn run_blocking_hooked(&self, request: &LimitRequest<'_>) -> Option<Result<Decision>> {
        if let Some(answer) = self.answered_by_hook(request) {
            return Some(answer);
        }
        if self.store.does_io() {
            for rule in request.rules.iter() {
                if let Err(err) = crate::algorithm::check_cost(rule, request.cost) {
                    return Some(Err(err));
                }
            }
        }
        let started = crate::clock::Stopwatch::start();
        let checked = self.store.check_blocking(request)?;
        let how = Answered::ByStore {
            elapsed: Some(started.elapsed()),
            route: self.store.limit_route(),
        };
        Some(self.settle_hooked(checked, request, how))
    }

    /// A hook's answer given before the store is asked, which every hook then sees.
    fn answered_by_hook(&self, request: &LimitRequest<'_>) -> Option<Result<Decision>> {
        let hooks = &self.shared.options.hooks;
        let call = call_of(request, &self.store);
        let mut answer = Ok(hooks.before_decision(&call)?);
        hooks.on_decision(&call, &mut answer, Answered::ByHook);
        Some(answer)
    }

    /// Every hook sees (and may change) `answer`.
    #[cold]
    #[inline(never)]
    fn hooked_answer(
        &self,
        mut answer: Result<Decision>,
        request: &LimitRequest<'_>,
        how: Answered,
    ) -> Result<Decision> {
        self.shared
            .options
            .hooks
            .on_decision(&call_of(request, &self.store), &mut answer, how);
        answer
    }

    /// The decision from the store's outcomes, or the failure policy's answer to a store failure,
    /// then what the hooks make of it (the path every decision takes: see [`decide`](Self::decide)).
    /// `how` is what the hooks are told of the store's answer (its time and route, where known).
    #[inline]
    pub(crate) fn settle(
        &self,
        checked: Result<crate::algorithm::standing::Verdict>,
        request: &LimitRequest<'_>,
        how: Answered,
    ) -> Result<Decision> {
        if !self.shared.options.hooks.is_empty() {
            return self.settle_hooked(checked, request, how);
        }
        self.decide(checked, request)
    }

    /// [`settle`](Self::settle) with hooks attached (kept out of line: the path without hooks stays
    /// as it was). An outage the failure policy answered reaches the hooks as [`Answered::ByPolicy`],
    /// with its code: the degraded decision alone would hide it (an error counter saw outages only
    /// under `raise`).
    #[cold]
    #[inline(never)]
    fn settle_hooked(
        &self,
        checked: Result<crate::algorithm::standing::Verdict>,
        request: &LimitRequest<'_>,
        how: Answered,
    ) -> Result<Decision> {
        let failed = checked.as_ref().err().map(Error::code);
        let answer = self.decide(checked, request);
        let how = match (failed, &answer) {
            (Some(error), Ok(_)) => Answered::ByPolicy { error },
            _ => how,
        };
        self.hooked_answer(answer, request, how)
    }

    /// The decision from the store's outcomes, or the failure policy's answer to a store failure.
    /// Only outages (see the error table in `store::connection_core`) get the policy's answer;
    /// configuration errors and protocol errors always raise.
    #[inline]
    fn decide(
        &self,
        checked: Result<crate::algorithm::standing::Verdict>,
        request: &LimitRequest<'_>,
    ) -> Result<Decision> {
        // Built where it is returned, and changed in place: a decision is a large value, and every
        // move of it costs on the memory store's path (a call of about 100 ns).
        match checked {
            Ok(verdict) => {
                if let Some(fallback) = &self.shared.fallback {
                    fallback.store_answered();
                }
                let mut decision = Decision::decided(verdict, request.rules);
                if self.shared.options.shadow {
                    decision.shadow();
                }
                Ok(decision)
            }
            Err(err) => self.failed(err, request),
        }
    }

    /// [`decide`](Self::decide) for a store that failed: the failure policy's answer to an outage,
    /// else the error.
    #[cold]
    #[inline(never)]
    fn failed(&self, err: Error, request: &LimitRequest<'_>) -> Result<Decision> {
        if !err.is_store_failure() {
            return Err(err);
        }
        let mut decision = self.degrade(err, request)?;
        if self.shared.options.shadow {
            decision.shadow();
        }
        Ok(decision)
    }

    fn degrade(&self, err: Error, request: &LimitRequest<'_>) -> Result<Decision> {
        let limit = request.rules[0].limit();
        let retry = self.shared.options.degraded_retry_after;
        match (self.shared.options.on_error, &self.shared.fallback) {
            (FailurePolicy::Allow, _) => Ok(Decision::degraded(true, limit, retry)),
            (FailurePolicy::Deny, _) => Ok(Decision::degraded(false, limit, retry)),
            (FailurePolicy::Local, Some(fallback)) => fallback.decide(request),
            _ => Err(err),
        }
    }
}

/// A limiter in shadow refuses a rule that `block`s: the ban its denial writes is the key's entry, which
/// every limiter on the prefix obeys, so it would deny for real what shadow only reports (the same
/// reason a shadow rule cannot block).
fn refuse_bans_in_shadow(rules: &Rules) -> Result<()> {
    match rules.iter().find(|rule| rule.block().is_some()) {
        None => Ok(()),
        Some(rule) => Err(Error::invalid_rule(
            &rule.to_string(),
            "block",
            "a limiter in shadow cannot block (the ban would enforce it for every limiter on the key); \
             roll the rule out without block first",
        )),
    }
}
