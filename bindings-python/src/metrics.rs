//! Metrics for Python: a core hook that hands each measurement of `ratelock::metrics` (the names, units
//! and attributes every language shares) to a Python callable, `record(name, value, attributes)`:
//! `ratelock.otel.Metrics` passes it on to the `opentelemetry-api` instruments. Nothing is attached,
//! and nothing costs, unless a limiter or a lock is given `metrics=`.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use ratelock::hook::{Answered, Hook, LimitCall, LockEvent};
use ratelock::metrics::{Instrument, Measurement};

/// The hook: every measurement goes to `record`, on the thread that made it (attached to Python for
/// the call). An exception `record` raises cannot reach the call that made the measurement: it goes to
/// `sys.unraisablehook`, as an exception in a `__del__` does.
pub(crate) struct Recorder {
    record: Py<PyAny>,
}

impl Recorder {
    /// The hook of `record`, which must be callable.
    pub(crate) fn of(record: &Bound<'_, PyAny>) -> PyResult<Arc<dyn Hook>> {
        if !record.is_callable() {
            return Err(crate::errors::InvalidArgument::new_err(format!(
                "invalid argument `metrics`: expected ratelock.otel.Metrics (or a callable taking a \
                 name, a value and attributes), got {}",
                record.get_type().name()?
            )));
        }
        Ok(Arc::new(Recorder {
            record: record.clone().unbind(),
        }))
    }

    fn send(&self, py: Python<'_>, measurement: Measurement<'_>) {
        let sent = (|| -> PyResult<()> {
            let attributes = PyDict::new(py);
            for (name, value) in measurement.attributes {
                attributes.set_item(*name, value.as_str())?;
            }
            let name = measurement.instrument.name();
            if measurement.instrument.is_histogram() {
                self.record.call1(py, (name, measurement.value, attributes))?;
            } else {
                self.record
                    .call1(py, (name, measurement.value as u64, attributes))?;
            }
            Ok(())
        })();
        if let Err(err) = sent {
            err.write_unraisable(py, Some(self.record.bind(py)));
        }
    }

    /// Runs `measure` attached to Python; nothing is recorded while the interpreter shuts down.
    fn attached(&self, measure: impl FnOnce(Python<'_>)) {
        let _ = Python::try_attach(measure);
    }
}

impl Hook for Recorder {
    fn on_decision(
        &self,
        call: &LimitCall<'_>,
        answer: &mut ratelock::Result<ratelock::Decision>,
        how: Answered,
    ) {
        self.attached(|py| ratelock::metrics::of_answer(call, answer, how, &mut |m| self.send(py, m)));
    }

    fn on_lock_event(&self, event: &LockEvent<'_>) {
        self.attached(|py| ratelock::metrics::of_lock_event(event, &mut |m| self.send(py, m)));
    }
}

/// The hook of a `metrics=` argument (`None` for none).
pub(crate) fn hook_of(metrics: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<dyn Hook>>> {
    metrics
        .filter(|metrics| !metrics.is_none())
        .map(Recorder::of)
        .transpose()
}

/// `ratelock._native.instruments()`: every instrument as `(name, kind, unit, description)`, `kind`
/// being `"counter"` or `"histogram"` and `unit` `""` for a counter.
#[pyfunction]
pub(crate) fn instruments(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let rows = Instrument::ALL.iter().map(|instrument| {
        let kind = if instrument.is_histogram() {
            "histogram"
        } else {
            "counter"
        };
        PyTuple::new(
            py,
            [
                instrument.name(),
                kind,
                instrument.unit().unwrap_or(""),
                instrument.description(),
            ],
        )
    });
    PyList::new(py, rows.collect::<PyResult<Vec<_>>>()?)
}
