//! `ratelock._native.FairLockState` and `RwLockState`: what `state()` of a fair or read-write lock
//! answers, as plain read-only values (times in seconds).

use pyo3::prelude::*;

/// A fair lock as it stands.
#[pyclass(name = "FairLockState", module = "ratelock._native", frozen, get_all)]
pub(crate) struct PyFairLockState {
    /// Someone holds the lock.
    held: bool,
    /// Seconds left on the holder's lease (0.0 when free).
    remaining: f64,
    /// The holder's fencing token (0 when free).
    holder_fence: u64,
    /// The last fencing token minted.
    last_fence: u64,
    /// Waiters in the queue.
    waiting: u64,
}

impl From<ratelock::FairLockState> for PyFairLockState {
    fn from(state: ratelock::FairLockState) -> Self {
        PyFairLockState {
            held: state.held,
            remaining: state.remaining.as_secs_f64(),
            holder_fence: state.holder_fence,
            last_fence: state.last_fence,
            waiting: state.waiting,
        }
    }
}

#[pymethods]
impl PyFairLockState {
    fn __repr__(&self) -> String {
        format!(
            "FairLockState(held={}, remaining={:?}, holder_fence={}, last_fence={}, waiting={})",
            python_bool(self.held),
            self.remaining,
            self.holder_fence,
            self.last_fence,
            self.waiting
        )
    }
}

/// A read-write lock as it stands.
#[pyclass(name = "RwLockState", module = "ratelock._native", frozen, get_all)]
pub(crate) struct PyRwLockState {
    /// Live read holds.
    readers: u64,
    /// A writer holds the lock.
    writer: bool,
    /// The writer's fencing token (0 when none).
    writer_fence: u64,
    /// Seconds left on the writer's lease (0.0 when none).
    writer_remaining: f64,
    /// Writers waiting (writer preference).
    waiting_writers: u64,
    /// The last fencing token minted.
    last_fence: u64,
}

impl From<ratelock::RwLockState> for PyRwLockState {
    fn from(state: ratelock::RwLockState) -> Self {
        PyRwLockState {
            readers: state.readers,
            writer: state.writer,
            writer_fence: state.writer_fence,
            writer_remaining: state.writer_remaining.as_secs_f64(),
            waiting_writers: state.waiting_writers,
            last_fence: state.last_fence,
        }
    }
}

#[pymethods]
impl PyRwLockState {
    fn __repr__(&self) -> String {
        format!(
            "RwLockState(readers={}, writer={}, writer_fence={}, writer_remaining={:?}, waiting_writers={}, \
             last_fence={})",
            self.readers,
            python_bool(self.writer),
            self.writer_fence,
            self.writer_remaining,
            self.waiting_writers,
            self.last_fence
        )
    }
}

fn python_bool(value: bool) -> &'static str {
    if value {
        "True"
    } else {
        "False"
    }
}
