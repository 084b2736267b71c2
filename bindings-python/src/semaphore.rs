//! `ratelock._native.SemaphoreHandle` and `PermitGuard`: the core `Semaphore` and its permit guard for
//! the Python `ratelock.Semaphore` (which adds `with`, threading-style `acquire` and exceptions).

use std::time::Duration;

use pyo3::prelude::*;

use crate::convert;
use crate::errors::to_py;
use crate::guard_slot::GuardSlot;
use crate::runtime::{run, spawn};

/// A handle on one semaphore name.
#[pyclass(name = "SemaphoreHandle", module = "ratelock._native", frozen)]
pub(crate) struct PySemaphoreHandle {
    inner: ratelock::Semaphore,
}

/// One permit. `release` consumes it; later calls return `False`.
#[pyclass(name = "PermitGuard", module = "ratelock._native", frozen)]
pub(crate) struct PyPermitGuard {
    slot: GuardSlot<ratelock::PermitLease>,
}

#[pymethods]
impl PySemaphoreHandle {
    #[new]
    #[pyo3(signature = (name, permits, url=None, *, ttl=30.0, auto_renew=true, prefix="rl", timeout=1.0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        permits: &Bound<'_, PyAny>,
        url: Option<&Bound<'_, PyAny>>,
        ttl: f64,
        auto_renew: bool,
        prefix: &str,
        timeout: f64,
    ) -> PyResult<Self> {
        let (name, permits, options, timeout) =
            semaphore_arguments(name, permits, ttl, auto_renew, prefix, timeout)?;
        let store = crate::stores::Target::of(url)?.store_blocking(py, timeout)?;
        let inner = ratelock::Semaphore::new(&store, name, permits, options).map_err(to_py)?;
        Ok(PySemaphoreHandle { inner })
    }

    /// Connects without blocking the event loop; awaits to a `SemaphoreHandle`.
    #[staticmethod]
    #[pyo3(signature = (name, permits, url=None, *, ttl=30.0, auto_renew=true, prefix="rl", timeout=1.0))]
    #[allow(clippy::too_many_arguments)]
    fn connect_async<'py>(
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
        permits: &Bound<'py, PyAny>,
        url: Option<&Bound<'py, PyAny>>,
        ttl: f64,
        auto_renew: bool,
        prefix: &str,
        timeout: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (name, permits, options, timeout) =
            semaphore_arguments(name, permits, ttl, auto_renew, prefix, timeout)?;
        let target = crate::stores::Target::of(url)?;
        spawn(py, async move {
            let store = target.store(timeout).await.map_err(to_py)?;
            let inner = ratelock::Semaphore::new(&store, name, permits, options).map_err(to_py)?;
            Ok(PySemaphoreHandle { inner })
        })
    }

    /// `try_acquire` for asyncio.
    fn try_acquire_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        spawn(py, async move {
            Ok(inner.try_acquire().await.map_err(to_py)?.map(PyPermitGuard::new))
        })
    }

    /// `acquire` for asyncio.
    #[pyo3(signature = (timeout=None))]
    fn acquire_async<'py>(&self, py: Python<'py>, timeout: Option<f64>) -> PyResult<Bound<'py, PyAny>> {
        let wait = convert::wait(timeout)?;
        let inner = self.inner.clone();
        spawn(py, async move {
            Ok(PyPermitGuard::new(inner.acquire(wait).await.map_err(to_py)?))
        })
    }

    /// Takes a permit if one is free; `None` otherwise.
    fn try_acquire(&self, py: Python<'_>) -> PyResult<Option<PyPermitGuard>> {
        let inner = self.inner.clone();
        Ok(run(py, async move { inner.try_acquire().await })?.map(PyPermitGuard::new))
    }

    /// Waits up to `timeout` seconds (`None`: no limit) for a permit; raises `WaitTimeout`.
    #[pyo3(signature = (timeout=None))]
    fn acquire(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<PyPermitGuard> {
        let wait = convert::wait(timeout)?;
        let inner = self.inner.clone();
        Ok(PyPermitGuard::new(run(
            py,
            async move { inner.acquire(wait).await },
        )?))
    }

    /// Permits in use now.
    fn in_use(&self, py: Python<'_>) -> PyResult<u64> {
        let inner = self.inner.clone();
        run(py, async move { inner.in_use().await })
    }
}

/// Semaphore options from the Python keyword arguments.
fn semaphore_arguments(
    name: &Bound<'_, PyAny>,
    permits: &Bound<'_, PyAny>,
    ttl: f64,
    auto_renew: bool,
    prefix: &str,
    timeout: f64,
) -> PyResult<(Vec<u8>, u64, ratelock::LockOptions, Duration)> {
    let options = ratelock::LockOptions::default()
        .with_ttl(convert::seconds("ttl", ttl)?)
        .with_auto_renew(auto_renew)
        .with_prefix(prefix);
    Ok((
        convert::key(name)?,
        convert::count("permits", permits)?,
        options,
        convert::seconds("timeout", timeout)?,
    ))
}

impl PyPermitGuard {
    fn new(guard: ratelock::PermitGuard) -> Self {
        PyPermitGuard {
            slot: GuardSlot::new(guard),
        }
    }
}

#[pymethods]
impl PyPermitGuard {
    /// True once the permit is known lost.
    fn is_lost(&self) -> bool {
        self.slot.lost().is_lost()
    }

    /// Moves the end of this permit's lease; `False` if the permit is gone.
    fn extend(&self, py: Python<'_>, ttl: f64) -> PyResult<bool> {
        let extending = self.slot.extending(convert::seconds("ttl", ttl)?);
        Ok(run(py, extending)? == Some(ratelock::Extended::Extended))
    }

    /// `release` for asyncio.
    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let releasing = self.slot.releasing();
        spawn(py, async move {
            Ok(releasing.await.map_err(to_py)? == Some(ratelock::Released::Released))
        })
    }

    /// Gives the permit back; `False` if it had been lost (or released) before. A release that fails
    /// on the way keeps the permit, so the caller can retry.
    fn release(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(run(py, self.slot.releasing())? == Some(ratelock::Released::Released))
    }
}
