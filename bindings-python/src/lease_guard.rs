//! `ratelock._native.LeaseGuard`: one hold of a fair lock or of a read-write lock (either side), for the
//! Python `ratelock.FairLock` and the holds `ratelock.ReadWriteLock` returns. A guard dropped without
//! `release` gives its hold back in the background, as the core's guard does.

use std::sync::Arc;

use pyo3::prelude::*;
use tokio::sync::Mutex;

use crate::convert;
use crate::errors::to_py;
use crate::runtime::{run, runtime, spawn};

/// The core guard, shared with the call in flight; `None` once released.
type Slot = Arc<Mutex<Option<ratelock::LeaseGuard>>>;

/// One hold. `release` consumes it; later calls return `False`.
#[pyclass(name = "LeaseGuard", module = "ratelock._native", frozen)]
pub(crate) struct PyLeaseGuard {
    guard: Slot,
    lost: ratelock::LostSignal,
    fencing_token: u64,
}

impl PyLeaseGuard {
    pub(crate) fn new(guard: ratelock::LeaseGuard) -> Self {
        PyLeaseGuard {
            lost: guard.lost_signal(),
            fencing_token: guard.fencing_token(),
            guard: Arc::new(Mutex::new(Some(guard))),
        }
    }
}

#[pymethods]
impl PyLeaseGuard {
    /// The fencing token of this grant (higher than every earlier grant of the same lock).
    #[getter]
    fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    /// True once the hold is known lost.
    fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// Blocks (without the GIL) until the hold is lost or `timeout` seconds pass; returns `is_lost()`.
    #[pyo3(signature = (timeout=None))]
    fn wait_lost(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let wait = convert::wait_of(timeout)?;
        let lost = self.lost.clone();
        run(py, async move { Ok(until_lost(lost, wait).await) })
    }

    /// `wait_lost` for asyncio.
    #[pyo3(signature = (timeout=None))]
    fn wait_lost_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let wait = convert::wait_of(timeout)?;
        let lost = self.lost.clone();
        spawn(py, async move { Ok(until_lost(lost, wait).await) })
    }

    /// Moves the end of the lease to `ttl` seconds from now; `False` if the hold is gone (never re-takes it).
    fn extend(&self, py: Python<'_>, ttl: &Bound<'_, PyAny>) -> PyResult<bool> {
        let ttl = convert::seconds_of("ttl", ttl)?;
        let slot = self.guard.clone();
        run(py, async move { extended(slot, ttl).await })
    }

    /// `extend` for asyncio.
    fn extend_async<'py>(&self, py: Python<'py>, ttl: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let ttl = convert::seconds_of("ttl", ttl)?;
        let slot = self.guard.clone();
        spawn(py, async move { extended(slot, ttl).await.map_err(to_py) })
    }

    /// Gives the hold back; `False` if it had been lost (or released) before.
    fn release(&self, py: Python<'_>) -> PyResult<bool> {
        let slot = self.guard.clone();
        run(py, async move { released(slot).await })
    }

    /// `release` for asyncio.
    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let slot = self.guard.clone();
        spawn(py, async move { released(slot).await.map_err(to_py) })
    }

    fn __repr__(&self) -> String {
        format!(
            "LeaseGuard(fencing_token={}, lost={})",
            self.fencing_token,
            if self.lost.is_lost() { "True" } else { "False" }
        )
    }
}

impl Drop for PyLeaseGuard {
    /// The core guard releases on drop in the background, which needs the runtime's context.
    fn drop(&mut self) {
        if let Ok(mut slot) = self.guard.try_lock() {
            if let Some(guard) = slot.take() {
                let _context = runtime().enter();
                drop(guard);
            }
        }
    }
}

async fn until_lost(lost: ratelock::LostSignal, wait: std::time::Duration) -> bool {
    let _ = tokio::time::timeout(wait, lost.wait()).await;
    lost.is_lost()
}

async fn extended(slot: Slot, ttl: std::time::Duration) -> ratelock::Result<bool> {
    match slot.lock().await.as_ref() {
        Some(guard) => guard.extend(ttl).await,
        None => Ok(false),
    }
}

/// Gives the hold back. A release that fails on the way keeps the guard in its slot, so the caller
/// can retry; any other answer empties the slot.
async fn released(slot: Slot) -> ratelock::Result<bool> {
    let mut slot = slot.lock().await;
    let Some(guard) = slot.as_mut() else {
        return Ok(false);
    };
    let outcome = guard.try_release().await;
    if !matches!(&outcome, Err(err) if err.is_store_failure()) {
        slot.take();
    }
    outcome
}
