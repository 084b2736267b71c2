//! `ratelock._native.LockHandle` and `LockGuard`: the core `DistributedLock` and its guard for the
//! Python `ratelock.DistributedLock` (which adds `with`, threading-style `acquire` and exceptions).

use std::time::Duration;

use pyo3::prelude::*;

use crate::convert;
use crate::errors::to_py;
use crate::guard_slot::GuardSlot;
use crate::runtime::{run, spawn};

/// A handle on one lock name with its own owner token.
#[pyclass(name = "LockHandle", module = "ratelock._native", frozen)]
pub(crate) struct PyLockHandle {
    inner: ratelock::DistributedLock,
}

/// One grant of a lock. `release` consumes it; later calls report "not_held".
#[pyclass(name = "LockGuard", module = "ratelock._native", frozen)]
pub(crate) struct PyLockGuard {
    slot: GuardSlot<ratelock::LockLease>,
    fencing_token: u64,
    holds: u64,
}

#[pymethods]
impl PyLockHandle {
    #[new]
    #[pyo3(signature = (name, url=None, *, ttl=30.0, auto_renew=true, reentrant=false, prefix="rl", timeout=1.0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        _py: Python<'_>,
        name: &Bound<'_, PyAny>,
        url: Option<&Bound<'_, PyAny>>,
        ttl: f64,
        auto_renew: bool,
        reentrant: bool,
        prefix: &str,
        timeout: f64,
    ) -> PyResult<Self> {
        let (name, options, timeout) = lock_arguments(name, ttl, auto_renew, reentrant, prefix, timeout)?;
        let store = crate::stores::Target::of(url)?.lock_store(timeout)?;
        let inner = ratelock::DistributedLock::new(&store, name, options).map_err(to_py)?;
        Ok(PyLockHandle { inner })
    }

    /// Connects without blocking the event loop; awaits to a `LockHandle` (for `ratelock.asyncio`).
    #[staticmethod]
    #[pyo3(signature = (name, url=None, *, ttl=30.0, auto_renew=true, reentrant=false, prefix="rl", timeout=1.0))]
    #[allow(clippy::too_many_arguments)]
    fn connect_async<'py>(
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
        url: Option<&Bound<'py, PyAny>>,
        ttl: f64,
        auto_renew: bool,
        reentrant: bool,
        prefix: &str,
        timeout: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (name, options, timeout) = lock_arguments(name, ttl, auto_renew, reentrant, prefix, timeout)?;
        let target = crate::stores::Target::of(url)?;
        spawn(py, async move {
            let store = target.lock_store(timeout)?;
            let inner = ratelock::DistributedLock::new(&store, name, options).map_err(to_py)?;
            Ok(PyLockHandle { inner })
        })
    }

    /// `try_acquire` for asyncio.
    fn try_acquire_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        spawn(py, async move {
            Ok(inner.try_acquire().await.map_err(to_py)?.map(PyLockGuard::new))
        })
    }

    /// `acquire` for asyncio.
    #[pyo3(signature = (timeout=None))]
    fn acquire_async<'py>(&self, py: Python<'py>, timeout: Option<f64>) -> PyResult<Bound<'py, PyAny>> {
        let wait = convert::wait(timeout)?;
        let inner = self.inner.clone();
        spawn(py, async move {
            Ok(PyLockGuard::new(inner.acquire(wait).await.map_err(to_py)?))
        })
    }

    /// Takes the lock if free; `None` if someone else holds it.
    fn try_acquire(&self, py: Python<'_>) -> PyResult<Option<PyLockGuard>> {
        let inner = self.inner.clone();
        Ok(run(py, async move { inner.try_acquire().await })?.map(PyLockGuard::new))
    }

    /// Waits up to `timeout` seconds (`None`: no limit) for the lock; raises `WaitTimeout`.
    #[pyo3(signature = (timeout=None))]
    fn acquire(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<PyLockGuard> {
        let wait = convert::wait(timeout)?;
        let inner = self.inner.clone();
        Ok(PyLockGuard::new(run(
            py,
            async move { inner.acquire(wait).await },
        )?))
    }

    /// Whether anyone holds the lock now.
    fn is_locked(&self, py: Python<'_>) -> PyResult<bool> {
        let inner = self.inner.clone();
        run(py, async move { inner.is_locked().await })
    }

    /// Seconds left on the current lease, or `None` when free.
    fn remaining_ttl(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        let inner = self.inner.clone();
        Ok(run(py, async move { inner.remaining_ttl().await })?.map(|d| d.as_secs_f64()))
    }

    /// The current holder's fencing token, or `None` when free.
    fn current_fencing_token(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        let inner = self.inner.clone();
        run(py, async move { inner.fencing_token().await })
    }

    /// Deletes the lease whoever holds it; `True` if it was held.
    fn force_release(&self, py: Python<'_>) -> PyResult<bool> {
        let inner = self.inner.clone();
        run(py, async move { inner.force_release().await })
    }

    #[getter]
    fn owner_token(&self) -> String {
        self.inner.owner_token().to_owned()
    }
}

/// Lock options from the Python keyword arguments.
fn lock_arguments(
    name: &Bound<'_, PyAny>,
    ttl: f64,
    auto_renew: bool,
    reentrant: bool,
    prefix: &str,
    timeout: f64,
) -> PyResult<(Vec<u8>, ratelock::LockOptions, Duration)> {
    let options = ratelock::LockOptions::default()
        .with_ttl(convert::seconds("ttl", ttl)?)
        .with_auto_renew(auto_renew)
        .with_reentrant(reentrant)
        .with_prefix(prefix);
    Ok((
        convert::key(name)?,
        options,
        convert::seconds("timeout", timeout)?,
    ))
}

impl PyLockGuard {
    fn new(guard: ratelock::LockGuard) -> Self {
        PyLockGuard {
            fencing_token: guard.fencing_token(),
            holds: guard.holds(),
            slot: GuardSlot::new(guard),
        }
    }
}

#[pymethods]
impl PyLockGuard {
    #[getter]
    fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    #[getter]
    fn holds(&self) -> u64 {
        self.holds
    }

    /// True once the lock is known lost.
    fn is_lost(&self) -> bool {
        self.slot.lost().is_lost()
    }

    /// Blocks (without the GIL) until the lock is lost or `timeout` seconds pass; returns `is_lost()`.
    #[pyo3(signature = (timeout=None))]
    fn wait_lost(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let lost = self.slot.lost().clone();
        let limit = timeout.map(|s| convert::seconds("timeout", s)).transpose()?;
        run(py, async move {
            match limit {
                Some(limit) => Ok(tokio::time::timeout(limit, lost.wait()).await.is_ok()),
                None => {
                    lost.wait().await;
                    Ok(true)
                }
            }
        })
    }

    /// Moves the lease's end to `ttl` seconds from now: "extended", "expired", "held_by_other", or
    /// "not_held" once released.
    fn extend(&self, py: Python<'_>, ttl: f64) -> PyResult<&'static str> {
        let extending = self.slot.extending(convert::seconds("ttl", ttl)?);
        Ok(match run(py, extending)? {
            None => "not_held",
            Some(ratelock::Extended::Extended) => "extended",
            Some(ratelock::Extended::Expired) => "expired",
            Some(_) => "held_by_other",
        })
    }

    /// `release` for asyncio.
    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let releasing = self.slot.releasing();
        spawn(
            py,
            async move { Ok(released_name(releasing.await.map_err(to_py)?)) },
        )
    }

    /// Gives the hold back: "released", "still_held", "not_held" or "held_by_other". A release that
    /// fails on the way keeps the hold, so the caller can retry.
    fn release(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(released_name(run(py, self.slot.releasing())?))
    }
}

fn released_name(outcome: Option<ratelock::Released>) -> &'static str {
    match outcome {
        Some(ratelock::Released::Released) => "released",
        Some(ratelock::Released::StillHeld { .. }) => "still_held",
        None | Some(ratelock::Released::NotHeld) => "not_held",
        Some(_) => "held_by_other",
    }
}
