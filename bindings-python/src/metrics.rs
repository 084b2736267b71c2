//! Metrics for Python: the core's `Recording` hook handing each measurement of `ratelock::metrics` (the
//! names, units and attributes every language shares) to a Python callable, `record(name, value,
//! attributes)`: `ratelock.otel.Metrics` passes it on to the `opentelemetry-api` instruments. Nothing is
//! attached, and nothing costs, unless a limiter or a lock is given `metrics=`.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use ratelock::hook::Hook;
use ratelock::metrics::{Instrument, Measurement, Recording};

use crate::metrics_queue;
use crate::recorder_call::{call, Queued};

/// Hands one measurement to `record`: at once on a thread that holds the GIL, else through the queue
/// (`metrics_queue`), so that no thread waits for the GIL to record (the runtime's thread least of
/// all). Only a queued measurement is copied.
fn send(record: &Arc<Py<PyAny>>, measurement: Measurement<'_>) {
    let (name, histogram) = (
        measurement.instrument.name(),
        measurement.instrument.is_histogram(),
    );
    if metrics_queue::holds_the_gil() {
        // Attaching where the GIL is held already takes nothing. (Counters and histograms add up alike
        // in any order, so one queued on another thread may be recorded after this one.)
        let attributes = measurement
            .attributes
            .iter()
            .map(|(key, value)| (*key, value.as_str()));
        let _finalizing =
            Python::try_attach(|py| call(py, record, name, histogram, measurement.value, attributes));
    } else {
        metrics_queue::push(Queued {
            record: record.clone(),
            name,
            histogram,
            value: measurement.value,
            attributes: measurement
                .attributes
                .iter()
                .map(|(key, value)| (*key, value.as_str().to_owned()))
                .collect(),
        });
    }
}

/// The hook of a `metrics=` argument (`None` for none), which must be callable.
pub(crate) fn hook_of(metrics: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<dyn Hook>>> {
    let Some(record) = metrics.filter(|metrics| !metrics.is_none()) else {
        return Ok(None);
    };
    if !record.is_callable() {
        return Err(crate::errors::InvalidArgument::new_err(format!(
            "invalid argument `metrics`: expected ratelock.otel.Metrics (or a callable taking a name, a \
             value and attributes), got {}",
            record.get_type().name()?
        )));
    }
    let record = Arc::new(record.clone().unbind());
    Ok(Some(Arc::new(Recording::new(move |measurement| {
        send(&record, measurement)
    }))))
}

/// `ratelock._native.instruments()`: every instrument as `(name, kind, unit, description, boundaries)`,
/// `kind` being `"counter"` or `"histogram"` and `boundaries` a histogram's buckets in seconds (empty for
/// a counter).
#[pyfunction]
pub(crate) fn instruments(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let rows = Instrument::ALL.iter().map(|instrument| {
        let kind = if instrument.is_histogram() {
            "histogram"
        } else {
            "counter"
        };
        (
            instrument.name(),
            kind,
            instrument.unit(),
            instrument.description(),
            PyTuple::new(py, instrument.boundaries())?,
        )
            .into_pyobject(py)
    });
    PyList::new(py, rows.collect::<PyResult<Vec<_>>>()?)
}
