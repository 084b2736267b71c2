//! The binding's exit: registered with `atexit` when the module loads, so after every exit handler
//! registered later, it stops the runtime while the interpreter can still run Python code, then records
//! what the runtime's threads measured last and drops the answers no loop will drain. Before every
//! `atexit` handler (from `threading`'s exit callbacks), it records what was measured by then.

use pyo3::prelude::*;

/// Shuts this process's runtime down while the interpreter can still run Python code. A runtime thread
/// that attaches to the interpreter once it is finalizing aborts the process (`PyGILState_Release`:
/// "must be current when releasing"); the exit closes the metrics queue so that its late drain never
/// does. Holds still open are not released here; their leases run out on the store.
#[pyfunction]
pub(crate) fn stop_at_exit(py: Python<'_>) {
    crate::process_runtime::stop(py);
    // Measurements the runtime's threads made last, while a recorder can still take them; no thread
    // of the runtime attaches after this.
    crate::metrics_queue::close(py);
    crate::stale_answers::close(py);
}

/// Records the measurements still queued when the interpreter starts to exit, before any `atexit`
/// handler runs (`threading`'s exit callbacks run first): the OpenTelemetry SDK's provider shuts down
/// in a handler registered after this module's, so it ran first, and what `stop_at_exit` recorded then
/// reached no export (a hold lost just before a cron job ended, above all).
#[pyfunction]
pub(crate) fn record_before_exit(py: Python<'_>) {
    crate::metrics_queue::drain(py);
}
