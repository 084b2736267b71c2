//! `ratelock.Limiter` and `ratelock.Decision`: the core `Limiter` with Python types at the edges
//! (seconds as float, str or bytes keys, rule text), the GIL released during every store call.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::completions::{Answer, Completions};
use crate::convert;
use crate::errors::to_py;
use crate::runtime::{run, spawn};

/// Parsed rule texts kept per limiter, so a rule string is parsed once.
const RULE_CACHE_LIMIT: usize = 1024;

/// Checks keys against rules: every rule of a key in one round trip, all or nothing.
#[pyclass(name = "Limiter", module = "ratelock._native", frozen, subclass)]
pub(crate) struct PyLimiter {
    inner: ratelock::Limiter,
    rules: Mutex<HashMap<String, Arc<ParsedRules>, foldhash::fast::RandomState>>,
}

/// Rule text parsed once, with each rule's canonical text ready for decisions.
struct ParsedRules {
    rules: ratelock::Rules,
    texts: Vec<Arc<str>>,
}

/// The answer to `hit` or `peek`. Truthy when allowed.
#[pyclass(name = "Decision", module = "ratelock._native", frozen)]
pub(crate) struct PyDecision {
    #[pyo3(get)]
    allowed: bool,
    #[pyo3(get)]
    limit: u64,
    #[pyo3(get)]
    remaining: u64,
    #[pyo3(get)]
    reset_after: f64,
    #[pyo3(get)]
    retry_after: f64,
    #[pyo3(get)]
    degraded: bool,
    rule: Arc<str>,
    #[pyo3(get)]
    rule_index: usize,
    #[pyo3(get)]
    period: f64,
}

#[pymethods]
impl PyLimiter {
    #[new]
    #[pyo3(signature = (url=None, *, prefix="rl", on_error="raise", timeout=1.0, default_algorithm="gcra", clock="store"))]
    fn new(
        py: Python<'_>,
        url: Option<&str>,
        prefix: &str,
        on_error: &str,
        timeout: f64,
        default_algorithm: &str,
        clock: &str,
    ) -> PyResult<Self> {
        let options = options(prefix, on_error, timeout, default_algorithm, clock)?;
        let store = crate::stores::shared(py, url, options.store.timeout)?;
        Self::with_store(store, options)
    }

    /// Connects without blocking the event loop; awaits to a `Limiter` (for `ratelock.asyncio`).
    #[staticmethod]
    #[pyo3(signature = (url=None, *, prefix="rl", on_error="raise", timeout=1.0, default_algorithm="gcra", clock="store"))]
    fn connect_async<'py>(
        py: Python<'py>,
        url: Option<String>,
        prefix: &str,
        on_error: &str,
        timeout: f64,
        default_algorithm: &str,
        clock: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let options = options(prefix, on_error, timeout, default_algorithm, clock)?;
        spawn(py, async move {
            let store = crate::stores::connect(url, options.store.timeout)
                .await
                .map_err(to_py)?;
            Self::with_store(store, options)
        })
    }

    /// Takes `cost` units from every rule for `key` if all allow it; otherwise takes nothing.
    #[pyo3(signature = (key, rules, cost=None, *, now_us=None))]
    fn hit(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        rules: &str,
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
        rules: &str,
        cost: Option<&Bound<'_, PyAny>>,
        now_us: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyDecision> {
        self.check(py, key, rules, cost, now_us, false)
    }

    /// Forgets the state of every given rule for `key`.
    fn reset(&self, py: Python<'_>, key: &Bound<'_, PyAny>, rules: &str) -> PyResult<()> {
        let (key, rules) = (convert::key(key)?, self.parse(rules)?);
        let inner = self.inner.clone();
        run(py, async move { inner.reset(&key, &rules.rules).await })
    }

    /// `hit` for asyncio: a future of the `Decision`, resolved through the loop's `completions`.
    #[pyo3(signature = (completions, key, rules, cost=None, *, now_us=None))]
    fn hit_async<'py>(
        &self,
        py: Python<'py>,
        completions: &Completions,
        key: &Bound<'py, PyAny>,
        rules: &str,
        cost: Option<&Bound<'py, PyAny>>,
        now_us: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.check_async(py, completions, key, rules, cost, now_us, true)
    }

    /// `peek` for asyncio: a future of the `Decision`, resolved through the loop's `completions`.
    #[pyo3(signature = (completions, key, rules, cost=None, *, now_us=None))]
    fn peek_async<'py>(
        &self,
        py: Python<'py>,
        completions: &Completions,
        key: &Bound<'py, PyAny>,
        rules: &str,
        cost: Option<&Bound<'py, PyAny>>,
        now_us: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.check_async(py, completions, key, rules, cost, now_us, false)
    }

    /// `reset` for asyncio: a future of `None`, resolved through the loop's `completions`.
    fn reset_async<'py>(
        &self,
        py: Python<'py>,
        completions: &Completions,
        key: &Bound<'py, PyAny>,
        rules: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (key, rules) = (convert::key(key)?, self.parse(rules)?);
        let inner = self.inner.clone();
        completions.submit(py, async move {
            Answer::Nothing(inner.reset(&key, &rules.rules).await.map_err(to_py))
        })
    }

    /// The key prefix.
    #[getter]
    fn prefix(&self) -> String {
        self.inner.options().prefix.clone()
    }
}

/// One `hit` or `peek`, its arguments already converted.
struct Check {
    limiter: ratelock::Limiter,
    key: Vec<u8>,
    rules: Arc<ParsedRules>,
    cost: u64,
    now_us: Option<u64>,
    spend: bool,
}

impl Check {
    async fn decide(self) -> ratelock::Result<PyDecision> {
        let (limiter, key, rules, cost) = (&self.limiter, &self.key, &self.rules.rules, self.cost);
        let decision = match (self.now_us, self.spend) {
            (Some(now), true) => limiter.hit_at(key, rules, cost, now).await,
            (Some(now), false) => limiter.peek_at(key, rules, cost, now).await,
            (None, true) => limiter.hit(key, rules, cost).await,
            (None, false) => limiter.peek(key, rules, cost).await,
        }?;
        Ok(PyDecision::new(&decision, &self.rules))
    }
}

/// Limiter options from the Python keyword arguments.
fn options(
    prefix: &str,
    on_error: &str,
    timeout: f64,
    default_algorithm: &str,
    clock: &str,
) -> PyResult<ratelock::LimiterOptions> {
    let clock = match clock {
        "store" => ratelock::ClockSource::Store,
        "local" => ratelock::ClockSource::Local,
        other => {
            return Err(crate::errors::InvalidArgument::new_err(format!(
                "invalid argument `clock`: expected \"store\" or \"local\", got {other:?}"
            )))
        }
    };
    Ok(ratelock::LimiterOptions::default()
        .with_prefix(prefix)
        .with_on_error(on_error.parse().map_err(to_py)?)
        .with_default_algorithm(default_algorithm.parse().map_err(to_py)?)
        .with_clock(clock)
        .with_timeout(convert::seconds("timeout", timeout)?))
}

impl PyLimiter {
    fn with_store(store: ratelock::Store, options: ratelock::LimiterOptions) -> PyResult<Self> {
        let inner = ratelock::Limiter::with_store(store, options).map_err(to_py)?;
        Ok(PyLimiter {
            inner,
            rules: Mutex::new(HashMap::default()),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn check_async<'py>(
        &self,
        py: Python<'py>,
        completions: &Completions,
        key: &Bound<'py, PyAny>,
        text: &str,
        cost: Option<&Bound<'py, PyAny>>,
        now_us: Option<&Bound<'py, PyAny>>,
        spend: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let check = self.prepare(key, text, cost, now_us, spend)?;
        completions.submit(py, async move {
            Answer::Decision(check.decide().await.map_err(to_py))
        })
    }

    fn check(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        text: &str,
        cost: Option<&Bound<'_, PyAny>>,
        now_us: Option<&Bound<'_, PyAny>>,
        spend: bool,
    ) -> PyResult<PyDecision> {
        let check = self.prepare(key, text, cost, now_us, spend)?;
        run(py, check.decide())
    }

    /// Converts the Python arguments of `hit`/`peek` once, for either the blocking or the awaitable call.
    fn prepare(
        &self,
        key: &Bound<'_, PyAny>,
        text: &str,
        cost: Option<&Bound<'_, PyAny>>,
        now_us: Option<&Bound<'_, PyAny>>,
        spend: bool,
    ) -> PyResult<Check> {
        Ok(Check {
            limiter: self.inner.clone(),
            key: convert::key(key)?,
            rules: self.parse(text)?,
            cost: cost.map(convert::cost).transpose()?.unwrap_or(1),
            now_us: convert::now_us(now_us)?,
            spend,
        })
    }

    fn parse(&self, text: &str) -> PyResult<Arc<ParsedRules>> {
        if let Some(parsed) = self.rules.lock().get(text) {
            return Ok(parsed.clone());
        }
        let rules = self.inner.rules(text).map_err(to_py)?;
        let texts = rules.iter().map(|rule| Arc::from(rule.to_string())).collect();
        let parsed = Arc::new(ParsedRules { rules, texts });
        let mut cache = self.rules.lock();
        if cache.len() >= RULE_CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(text.to_owned(), parsed.clone());
        Ok(parsed)
    }
}

impl PyDecision {
    fn new(decision: &ratelock::Decision, parsed: &ParsedRules) -> Self {
        let rules = &parsed.rules;
        PyDecision {
            allowed: decision.allowed,
            limit: decision.limit,
            remaining: decision.remaining,
            reset_after: decision.reset_after.as_secs_f64(),
            retry_after: decision.retry_after.as_secs_f64(),
            degraded: decision.degraded,
            rule: parsed.texts[decision.rule_index].clone(),
            rule_index: decision.rule_index,
            period: rules[decision.rule_index].period().as_secs_f64(),
        }
    }
}

#[pymethods]
impl PyDecision {
    /// The deciding rule, as canonical text.
    #[getter]
    fn rule(&self) -> &str {
        &self.rule
    }

    fn __bool__(&self) -> bool {
        self.allowed
    }

    fn __repr__(&self) -> String {
        format!(
            "Decision(allowed={}, limit={}, remaining={}, reset_after={:.6}, retry_after={:.6}, rule={:?}, degraded={})",
            if self.allowed { "True" } else { "False" },
            self.limit,
            self.remaining,
            self.reset_after,
            self.retry_after,
            self.rule,
            if self.degraded { "True" } else { "False" }
        )
    }
}
