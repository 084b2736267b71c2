//! `Decision` for Python: the answer to `hit` or `peek`, in seconds, truthy when allowed. It keeps the
//! rules it answered for, so an adapter can render its HTTP answer (`HttpOptions.answer`).

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;

use crate::errors::to_py;

/// The answer to `hit` or `peek`. Truthy when allowed.
#[pyclass(name = "Decision", module = "ratelock._native", frozen)]
pub(crate) struct PyDecision {
    #[pyo3(get)]
    allowed: bool,
    #[pyo3(get)]
    limit: u64,
    #[pyo3(get)]
    remaining: u64,
    reset_after: Duration,
    retry_after: Duration,
    #[pyo3(get)]
    degraded: bool,
    rule: Arc<str>,
    #[pyo3(get)]
    rule_index: usize,
    #[pyo3(get)]
    period: f64,
    reason: ratelock::Reason,
    #[pyo3(get)]
    would_deny: bool,
    #[pyo3(get)]
    cached: bool,
    rules: Arc<ratelock::Rules>,
}

impl PyDecision {
    /// `decision` over `rules`, whose deciding rule reads `rule`.
    pub(crate) fn new(decision: &ratelock::Decision, rule: Arc<str>, rules: Arc<ratelock::Rules>) -> Self {
        let period = rules
            .get(decision.rule_index)
            .map_or(0.0, |rule| rule.period().as_secs_f64());
        PyDecision {
            allowed: decision.allowed,
            limit: decision.limit,
            remaining: decision.remaining,
            reset_after: decision.reset_after,
            retry_after: decision.retry_after,
            degraded: decision.degraded,
            rule,
            rule_index: decision.rule_index,
            period,
            reason: decision.reason,
            would_deny: decision.would_deny,
            cached: decision.cached,
            rules,
        }
    }

    /// The core decision (its deciding rule's figures) and the rules it answered for.
    pub(crate) fn core(&self) -> (ratelock::Decision, &ratelock::Rules) {
        let decision = ratelock::Decision::summary(
            self.allowed,
            self.limit,
            self.remaining,
            self.reset_after,
            self.retry_after,
            self.rule_index,
            self.degraded,
        )
        .with_reason(self.reason);
        (decision, &self.rules)
    }
}

/// Seconds as a float, kept to the microsecond (as every decision is).
fn from_seconds(name: &str, seconds: f64) -> PyResult<Duration> {
    if !(seconds.is_finite() && (0.0..1e12).contains(&seconds)) {
        return Err(crate::errors::InvalidArgument::new_err(format!(
            "invalid argument `{name}`: expected seconds from 0, got {seconds}"
        )));
    }
    Ok(Duration::from_micros((seconds * 1e6).round() as u64))
}

#[pymethods]
impl PyDecision {
    /// A decision given by its deciding rule's figures over `rules` (rule text), as a test or a
    /// custom adapter builds one; `hit` and `peek` make the real ones.
    #[new]
    #[pyo3(signature = (rules, *, allowed, limit, remaining, reset_after, retry_after=0.0, rule_index=0, degraded=false, reason="rule"))]
    #[allow(clippy::too_many_arguments)]
    fn py_new(
        rules: &str,
        allowed: bool,
        limit: u64,
        remaining: u64,
        reset_after: f64,
        retry_after: f64,
        rule_index: usize,
        degraded: bool,
        reason: &str,
    ) -> PyResult<Self> {
        let Some(reason) = ratelock::Reason::ALL.into_iter().find(|r| r.name() == reason) else {
            return Err(crate::errors::InvalidArgument::new_err(format!(
                "invalid argument `reason`: expected rule, ban, deny_list or allow_list, got {reason:?}"
            )));
        };
        let rules: ratelock::Rules = rules.parse().map_err(to_py)?;
        let Some(deciding) = rules.get(rule_index) else {
            return Err(crate::errors::InvalidArgument::new_err(format!(
                "invalid argument `rule_index`: {rule_index} is past the last of {} rules",
                rules.len()
            )));
        };
        let rule = Arc::from(deciding.to_string());
        let decision = ratelock::Decision::summary(
            allowed,
            limit,
            remaining,
            from_seconds("reset_after", reset_after)?,
            from_seconds("retry_after", retry_after)?,
            rule_index,
            degraded,
        )
        .with_reason(reason);
        Ok(PyDecision::new(&decision, rule, Arc::new(rules)))
    }

    /// The deciding rule, as canonical text.
    #[getter]
    fn rule(&self) -> &str {
        &self.rule
    }

    /// What decided: `rule`, `ban`, `deny_list` or `allow_list`.
    #[getter]
    fn reason(&self) -> &'static str {
        self.reason.name()
    }

    /// Seconds until the deciding rule is fully replenished.
    #[getter]
    fn reset_after(&self) -> f64 {
        self.reset_after.as_secs_f64()
    }

    /// Seconds until this same request would be allowed (0 when allowed).
    #[getter]
    fn retry_after(&self) -> f64 {
        self.retry_after.as_secs_f64()
    }

    fn __bool__(&self) -> bool {
        self.allowed
    }

    fn __repr__(&self) -> String {
        format!(
            "Decision(allowed={}, limit={}, remaining={}, reset_after={:.6}, retry_after={:.6}, rule={:?}, degraded={}, reason={:?})",
            if self.allowed { "True" } else { "False" },
            self.limit,
            self.remaining,
            self.reset_after.as_secs_f64(),
            self.retry_after.as_secs_f64(),
            self.rule,
            if self.degraded { "True" } else { "False" },
            self.reason.name()
        )
    }
}
