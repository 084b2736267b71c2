//! `Decision` for Python: the answer to `hit` or `peek`, in seconds, truthy when allowed.

use std::sync::Arc;

use pyo3::prelude::*;

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

impl PyDecision {
    /// `decision`, whose deciding rule reads `rule` and lasts `period` seconds.
    pub(crate) fn new(decision: &ratelock::Decision, rule: Arc<str>, period: f64) -> Self {
        PyDecision {
            allowed: decision.allowed,
            limit: decision.limit,
            remaining: decision.remaining,
            reset_after: decision.reset_after.as_secs_f64(),
            retry_after: decision.retry_after.as_secs_f64(),
            degraded: decision.degraded,
            rule,
            rule_index: decision.rule_index,
            period,
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
