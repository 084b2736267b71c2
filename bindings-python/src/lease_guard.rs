//! `ratelock._native.LeaseGuard`: one hold of a fair lock or of a read-write lock (either side), for the
//! Python `ratelock.FairLock` and the holds `ratelock.ReadWriteLock` returns. A guard dropped without
//! `release` gives its hold back in the background, as the core's guard does.

use pyo3::prelude::*;

use crate::convert;
use crate::errors::to_py;
use crate::guard_slot::GuardSlot;
use crate::runtime::{run, spawn};

/// One hold. `release` consumes it; later calls return `False`.
#[pyclass(name = "LeaseGuard", module = "ratelock._native", frozen)]
pub(crate) struct PyLeaseGuard {
    slot: GuardSlot<ratelock::HeldLease>,
    fencing_token: u64,
}

impl PyLeaseGuard {
    pub(crate) fn new(guard: ratelock::LeaseGuard) -> Self {
        PyLeaseGuard {
            fencing_token: guard.fencing_token(),
            slot: GuardSlot::new(guard),
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
        self.slot.lost().is_lost()
    }

    /// Blocks (without the GIL) until the hold is lost or `timeout` seconds pass; returns `is_lost()`.
    #[pyo3(signature = (timeout=None))]
    fn wait_lost(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let wait = convert::wait_of(timeout)?;
        let lost = self.slot.lost().clone();
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
        let lost = self.slot.lost().clone();
        spawn(py, async move { Ok(until_lost(lost, wait).await) })
    }

    /// Moves the end of the lease to `ttl` seconds from now; `False` if the hold is gone (never re-takes it).
    fn extend(&self, py: Python<'_>, ttl: &Bound<'_, PyAny>) -> PyResult<bool> {
        let ttl = convert::seconds_of("ttl", ttl)?;
        let extending = self.slot.extending(ttl);
        run(py, async move {
            Ok(extending.await? == Some(ratelock::Extended::Extended))
        })
    }

    /// `extend` for asyncio.
    fn extend_async<'py>(&self, py: Python<'py>, ttl: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let ttl = convert::seconds_of("ttl", ttl)?;
        let extending = self.slot.extending(ttl);
        spawn(py, async move {
            Ok(extending.await.map_err(to_py)? == Some(ratelock::Extended::Extended))
        })
    }

    /// Gives the hold back; `False` if it had been lost (or released) before.
    fn release(&self, py: Python<'_>) -> PyResult<bool> {
        let releasing = self.slot.releasing();
        run(py, async move {
            Ok(releasing.await? == Some(ratelock::Released::Released))
        })
    }

    /// `release` for asyncio.
    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let releasing = self.slot.releasing();
        spawn(py, async move {
            Ok(releasing.await.map_err(to_py)? == Some(ratelock::Released::Released))
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "LeaseGuard(fencing_token={}, lost={})",
            self.fencing_token,
            if self.slot.lost().is_lost() {
                "True"
            } else {
                "False"
            }
        )
    }
}

async fn until_lost(lost: ratelock::LostSignal, wait: std::time::Duration) -> bool {
    let _ = tokio::time::timeout(wait, lost.wait()).await;
    lost.is_lost()
}
