//! `ratelock.Limiter` and `ratelock.Decision`: the core `Limiter` with Python types at the edges
//! (seconds as float, str or bytes keys, rule text), the GIL released during every store call.

use std::borrow::Cow;
use std::sync::Arc;

use ratelock::PreparedRules;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::async_twins::pymethods_with_async_twins;
use crate::completions::{Completions, Reply};
use crate::convert;
use crate::decision::PyDecision;
use crate::errors::to_py;
use crate::runtime::{catch_panic, run};

/// Checks keys against rules: every rule of a key in one round trip, all or nothing.
#[pyclass(name = "Limiter", module = "ratelock._native", frozen, subclass)]
pub(crate) struct PyLimiter {
    inner: ratelock::Limiter,
    /// The core's prepared rules by the Python str they came as: a dict lookup with the str's cached
    /// hash finds them with no UTF-8 conversion (which costs a bytes object per call under the stable
    /// ABI: +100 ns on a 355 ns memory hit). Parsing is the core's; the memo starts over at the core
    /// cache's bound.
    memo: Py<PyDict>,
}

/// The core's `PreparedRules` as a value of the limiter's memo (a Python dict).
#[pyclass(module = "ratelock._native", frozen)]
struct Memoized(Arc<PreparedRules>);

/// `options` with a local deny cache of `capacity` keys (a whole number from 1) holding a denial for
/// at most `max_age` seconds, when one is asked for.
fn with_deny_cache(
    options: ratelock::LimiterOptions,
    capacity: Option<&Bound<'_, PyAny>>,
    max_age: Option<&Bound<'_, PyAny>>,
) -> PyResult<ratelock::LimiterOptions> {
    let max_age = max_age.filter(|value| !value.is_none());
    let Some(capacity) = capacity.filter(|value| !value.is_none()) else {
        return match max_age {
            Some(_) => Err(crate::errors::InvalidArgument::new_err(
                "invalid argument `deny_cache_max_age`: applies only with `deny_cache`",
            )),
            None => Ok(options),
        };
    };
    let mut cache = ratelock::DenyCache::new(convert::count("deny_cache", capacity)? as usize);
    if let Some(max_age) = max_age {
        cache = cache.with_max_age(convert::seconds_of("deny_cache_max_age", max_age)?);
    }
    Ok(options.with_deny_cache_of(cache))
}

/// The arguments of `change_entry`, converted: the key, the core's call, and `now`.
type EntryChange = (Vec<u8>, ratelock::algorithm::standing::StandingCall, Option<u64>);

fn entry_change(
    op: &str,
    key: &Bound<'_, PyAny>,
    seconds: Option<&Bound<'_, PyAny>>,
    now_us: Option<&Bound<'_, PyAny>>,
) -> PyResult<EntryChange> {
    // The argument as the public methods name it (`block`'s duration, `deny`'s and `allow`'s ttl).
    let name = match op {
        "block" => "duration",
        "deny" | "allow" => "ttl",
        _ => "seconds",
    };
    let span = seconds
        .map(|value| convert::seconds_of(name, value))
        .transpose()?;
    let call = ratelock::algorithm::standing::StandingCall::named(op, span, name).map_err(to_py)?;
    Ok((convert::key(key)?, call, convert::now_us(now_us)?))
}

/// `decision` for Python, naming its deciding rule.
fn decision_of(prepared: &PreparedRules, decision: &ratelock::Decision) -> PyDecision {
    PyDecision::new(
        decision,
        prepared.text(decision.rule_index),
        prepared.rules().clone(),
    )
}

pymethods_with_async_twins! {
    impl PyLimiter {
        /// Forgets the state of every given rule for `key`.
        fn reset / reset_async(&self, key: &Bound<'_, PyAny>, rules: &Bound<'_, PyAny>) -> () {
            let (key, rules, inner) = (convert::key(key)?, self.parse(rules)?, self.inner.clone());
            async move { inner.reset(&key, rules.rules()).await }
        }

        /// Gives back `cost` units (default 1) of every rule for `key`, where the algorithm can; answers
        /// as `peek` of the same cost would afterwards. An outage raises, whatever `on_error` says.
        #[pyo3(signature = (key, rules, cost=None, *, now_us=None))]
        fn refund / refund_async(
            &self,
            key: &Bound<'_, PyAny>,
            rules: &Bound<'_, PyAny>,
            cost: Option<&Bound<'_, PyAny>>,
            now_us: Option<&Bound<'_, PyAny>>,
        ) -> PyDecision {
            let (key, prepared) = (convert::key(key)?, self.parse(rules)?);
            let cost = cost.map(convert::cost).transpose()?.unwrap_or(1);
            let (now_us, limiter) = (convert::now_us(now_us)?, self.inner.clone());
            async move {
                let decision = limiter.refund(&key, prepared.rules(), cost, now_us).await?;
                Ok(decision_of(&prepared, &decision))
            }
        }

        /// Books the earliest slot within `max_wait` seconds at which every rule admits `cost` units
        /// (gcra, token_bucket and leaky_bucket rules): allowed with `retry_after` the wait before
        /// acting, or a denial, spending nothing, when the slot is further. The units are spent at
        /// booking.
        #[pyo3(signature = (key, rules, cost=None, *, max_wait, now_us=None))]
        fn reserve / reserve_async(
            &self,
            key: &Bound<'_, PyAny>,
            rules: &Bound<'_, PyAny>,
            cost: Option<&Bound<'_, PyAny>>,
            max_wait: &Bound<'_, PyAny>,
            now_us: Option<&Bound<'_, PyAny>>,
        ) -> PyDecision {
            let (key, prepared) = (convert::key(key)?, self.parse(rules)?);
            let cost = cost.map(convert::cost).transpose()?.unwrap_or(1);
            let max_wait = convert::max_wait_of(max_wait)?;
            let (now_us, limiter) = (convert::now_us(now_us)?, self.inner.clone());
            async move {
                let decision = limiter
                    .reserve(&key, prepared.rules(), cost, max_wait, now_us)
                    .await?;
                Ok(decision_of(&prepared, &decision))
            }
        }

        /// Changes `key`'s ban or list entry: `op` is `block`, `deny` or `allow` (for `seconds`),
        /// `unblock` or `clear`; true when an entry was put or removed (`Limiter.block` and the others
        /// call it).
        #[pyo3(signature = (op, key, seconds=None, *, now_us=None))]
        fn change_entry / change_entry_async(
            &self,
            op: &str,
            key: &Bound<'_, PyAny>,
            seconds: Option<&Bound<'_, PyAny>>,
            now_us: Option<&Bound<'_, PyAny>>,
        ) -> bool {
            let (key, call, now_us) = entry_change(op, key, seconds, now_us)?;
            let inner = self.inner.clone();
            async move { inner.stand(&key, call, now_us).await }
        }

        /// Sets `key`'s override to `rules` (for `ttl` seconds, or with no end), or clears it when
        /// `rules` is None; true when one was set or cleared (`Limiter.set_override` and
        /// `clear_override` call it).
        #[pyo3(signature = (key, rules=None, ttl=None, *, now_us=None))]
        fn change_override / change_override_async(
            &self,
            key: &Bound<'_, PyAny>,
            rules: Option<&Bound<'_, PyAny>>,
            ttl: Option<&Bound<'_, PyAny>>,
            now_us: Option<&Bound<'_, PyAny>>,
        ) -> bool {
            let key = convert::key(key)?;
            let prepared = rules
                .filter(|rules| !rules.is_none())
                .map(|rules| self.parse(rules))
                .transpose()?;
            let ttl = ttl
                .filter(|ttl| !ttl.is_none())
                .map(|ttl| convert::seconds_of("ttl", ttl))
                .transpose()?;
            let (now_us, limiter) = (convert::now_us(now_us)?, self.inner.clone());
            async move {
                match prepared {
                    Some(prepared) => limiter
                        .set_override(&key, prepared.rules(), ttl, now_us)
                        .await
                        .map(|()| true),
                    None => limiter.clear_override(&key).await,
                }
            }
        }

        /// Reaches the store now (connecting first if needed): raises configuration errors and outages
        /// alike, whatever `on_error` says. For a service that wants to fail at boot.
        fn ping / ping_async(&self) -> () {
            let inner = self.inner.clone();
            async move { inner.ping().await }
        }
    }
    plain {
        #[new]
        #[allow(clippy::too_many_arguments)]
        #[pyo3(signature = (url=None, *, prefix="rl", on_error="raise", timeout=1.0, default_algorithm="gcra", clock="store", instances=None, shadow=false, deny_cache=None, deny_cache_max_age=None, metrics=None))]
        fn new(
            url: Option<&Bound<'_, PyAny>>,
            prefix: &str,
            on_error: &str,
            timeout: f64,
            default_algorithm: &str,
            clock: &str,
            instances: Option<&Bound<'_, PyAny>>,
            shadow: bool,
            deny_cache: Option<&Bound<'_, PyAny>>,
            deny_cache_max_age: Option<&Bound<'_, PyAny>>,
            metrics: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Self> {
            let options = ratelock::LimiterOptions::default()
                .with_prefix(prefix)
                .with_on_error(on_error.parse().map_err(to_py)?)
                .with_default_algorithm(default_algorithm.parse().map_err(to_py)?)
                .with_clock(clock.parse().map_err(to_py)?)
                .with_timeout(convert::seconds("timeout", timeout)?)
                .with_instances(convert::instances(instances)?)
                .with_shadow(shadow);
            // Metrics come last: they see the answer every other hook made.
            let mut options = with_deny_cache(options, deny_cache, deny_cache_max_age)?;
            if let Some(hook) = crate::metrics::hook_of(metrics)? {
                options = options.with_hook(hook);
            }
            let target = crate::stores::Target::of(url)?;
            let options = target.bound_fallback(options);
            let store = target.store(options.store.timeout)?;
            Self::with_store(store, options)
        }

        /// Takes `cost` units from every rule for `key` if all allow it; otherwise takes nothing.
        #[pyo3(signature = (key, rules, cost=None, *, now_us=None))]
        fn hit(
            &self,
            py: Python<'_>,
            key: &Bound<'_, PyAny>,
            rules: &Bound<'_, PyAny>,
            cost: Option<&Bound<'_, PyAny>>,
            now_us: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyDecision> {
            self.check(py, key, rules, cost, now_us, true)
        }

        /// Answers what `hit` would answer, without spending anything.
        #[pyo3(signature = (key, rules, cost=None, *, now_us=None))]
        fn peek(
            &self,
            py: Python<'_>,
            key: &Bound<'_, PyAny>,
            rules: &Bound<'_, PyAny>,
            cost: Option<&Bound<'_, PyAny>>,
            now_us: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyDecision> {
            self.check(py, key, rules, cost, now_us, false)
        }

        /// `hit` (`spend`) or `peek` for asyncio: a future of the `Decision`, resolved through the running
        /// loop's completions.
        #[pyo3(signature = (key, rules, cost=None, *, now_us=None, spend))]
        fn check_async<'py>(
            &self,
            py: Python<'py>,
            key: &Bound<'py, PyAny>,
            rules: &Bound<'py, PyAny>,
            cost: Option<&Bound<'py, PyAny>>,
            now_us: Option<&Bound<'py, PyAny>>,
            spend: bool,
        ) -> PyResult<Bound<'py, PyAny>> {
            let key = convert::key_bytes(key)?;
            let check = self
                .prepare(key.as_bytes(), rules, cost, now_us, spend)?
                .into_owned();
            let completions = Completions::of_running_loop(py)?;
            completions.get().submit(py, async move { check.decide().await.map(Reply::Decision).map_err(to_py) })
        }

        /// Where the store's circuit breaker stands in this process: "closed", "open" or "half-open";
        /// None for the memory store.
        #[getter]
        fn breaker_state(&self) -> Option<&'static str> {
            self.inner.breaker_state().map(|state| state.as_str())
        }

        /// The key prefix.
        #[getter]
        fn prefix(&self) -> String {
            self.inner.options().prefix.clone()
        }
    }
}

/// One `hit` or `peek`, its arguments already converted; a blocking call borrows the key's bytes, an
/// awaitable one owns a copy.
struct Check<'k> {
    limiter: ratelock::Limiter,
    key: Cow<'k, [u8]>,
    rules: Arc<PreparedRules>,
    cost: u64,
    now_us: Option<u64>,
    spend: bool,
}

impl Check<'_> {
    fn into_owned(self) -> Check<'static> {
        Check {
            key: Cow::Owned(self.key.into_owned()),
            ..self
        }
    }

    /// The decision on this thread, if it can be had without the runtime.
    fn decide_blocking(&self) -> Option<ratelock::Result<PyDecision>> {
        let (limiter, key, rules, cost) = (&self.limiter, &self.key, self.rules.rules(), self.cost);
        let decision = limiter.try_check_blocking(key, rules, cost, self.spend, self.now_us)?;
        Some(decision.map(|decision| decision_of(&self.rules, &decision)))
    }

    async fn decide(self) -> ratelock::Result<PyDecision> {
        let (limiter, key, rules, cost) = (&self.limiter, &self.key, self.rules.rules(), self.cost);
        let decision = limiter.check(key, rules, cost, self.spend, self.now_us).await?;
        Ok(decision_of(&self.rules, &decision))
    }
}

impl PyLimiter {
    fn with_store(store: ratelock::Store, options: ratelock::LimiterOptions) -> PyResult<Self> {
        let inner = ratelock::Limiter::with_store(store, options).map_err(to_py)?;
        Ok(PyLimiter {
            inner,
            memo: Python::attach(|py| PyDict::new(py).unbind()),
        })
    }

    fn check(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        text: &Bound<'_, PyAny>,
        cost: Option<&Bound<'_, PyAny>>,
        now_us: Option<&Bound<'_, PyAny>>,
        spend: bool,
    ) -> PyResult<PyDecision> {
        let key = convert::key_bytes(key)?;
        let check = self.prepare(key.as_bytes(), text, cost, now_us, spend)?;
        // First on this thread: the memory store always answers (with the GIL held: it never waits),
        // Redis when its blocking connection is free (GIL released); otherwise through the runtime.
        let answer = if check.limiter.store().does_io() {
            crate::metrics_queue::detached(py, || catch_panic(|| check.decide_blocking()))
        } else {
            catch_panic(|| check.decide_blocking())
        };
        match answer? {
            Some(result) => result.map_err(to_py),
            None => run(py, check.decide()),
        }
    }

    /// Converts the Python arguments of `hit`/`peek` once, for either the blocking or the awaitable call.
    fn prepare<'k>(
        &self,
        key: &'k [u8],
        text: &Bound<'_, PyAny>,
        cost: Option<&Bound<'_, PyAny>>,
        now_us: Option<&Bound<'_, PyAny>>,
        spend: bool,
    ) -> PyResult<Check<'k>> {
        Ok(Check {
            limiter: self.inner.clone(),
            key: Cow::Borrowed(key),
            rules: self.parse(text)?,
            cost: cost.map(convert::cost).transpose()?.unwrap_or(1),
            now_us: convert::now_us(now_us)?,
            spend,
        })
    }

    /// The rules of `text`, parsed once per limiter by the core, found through the memo when this str
    /// was seen before.
    fn parse(&self, text: &Bound<'_, PyAny>) -> PyResult<Arc<PreparedRules>> {
        let text = convert::rule_text(text)?;
        let memo = self.memo.bind(text.py());
        if let Some(Ok(memoized)) = memo.get_item(text)?.map(|found| found.cast_into::<Memoized>()) {
            return Ok(memoized.get().0.clone());
        }
        let utf8 = text.to_cow().map_err(|_| {
            crate::errors::InvalidRule::new_err(
                "invalid rule: not valid Unicode text (it holds a lone surrogate)",
            )
        })?;
        let prepared = self.inner.prepared(&utf8).map_err(to_py)?;
        if memo.len() >= ratelock::RuleCache::<()>::DEFAULT_CAPACITY {
            memo.clear();
        }
        memo.set_item(text, Memoized(prepared.clone()))?;
        Ok(prepared)
    }
}
