//! One measurement handed to a Python recorder, `record(name, value, attributes)`: at once (`call`), or
//! as copied to wait for a thread that holds the GIL (`Queued`, which `metrics_queue.rs` keeps).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// One measurement as made: where it goes, the instrument's name, a histogram's or a counter's value,
/// and the attributes.
pub(crate) struct Queued {
    pub(crate) record: Arc<Py<PyAny>>,
    pub(crate) name: &'static str,
    pub(crate) histogram: bool,
    pub(crate) value: f64,
    pub(crate) attributes: Vec<(&'static str, String)>,
}

impl Queued {
    /// Records this measurement (the GIL held).
    pub(crate) fn send_now(self, py: Python<'_>) {
        let attributes = self.attributes.iter().map(|(key, value)| (*key, value.as_str()));
        call(
            py,
            &self.record,
            self.name,
            self.histogram,
            self.value,
            attributes,
        );
    }
}

/// `record(name, value, attributes)` (the GIL held; a counter's value as an integer). An exception
/// `record` raises cannot reach the call that made the measurement: it goes to `sys.unraisablehook`, as
/// an exception in a `__del__` does.
pub(crate) fn call<'a>(
    py: Python<'_>,
    record: &Py<PyAny>,
    name: &'static str,
    histogram: bool,
    value: f64,
    attributes: impl Iterator<Item = (&'static str, &'a str)>,
) {
    let sent = (|| -> PyResult<()> {
        let given = PyDict::new(py);
        for (key, text) in attributes {
            given.set_item(key, text)?;
        }
        if histogram {
            record.call1(py, (name, value, given))?;
        } else {
            record.call1(py, (name, value as u64, given))?;
        }
        Ok(())
    })();
    if let Err(err) = sent {
        err.write_unraisable(py, Some(record.bind(py)));
    }
}
