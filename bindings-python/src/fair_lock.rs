//! `ratelock._native.FairLockHandle`: the core `FairLock` for the Python `ratelock.FairLock` (which adds
//! `with`, threading-style `acquire` and exceptions). Grants come as `LeaseGuard`s.

use pyo3::prelude::*;

use crate::convert;
use crate::errors::to_py;
use crate::lease_guard::PyLeaseGuard;
use crate::lock_options::{LockArguments, Parsed};
use crate::lock_states::PyFairLockState;
use crate::runtime::{run, spawn};

/// A handle on one fair lock name. Keyword arguments left `None` take the core's defaults.
#[pyclass(name = "FairLockHandle", module = "ratelock._native", frozen)]
pub(crate) struct PyFairLockHandle {
    inner: ratelock::FairLock,
}

#[pymethods]
impl PyFairLockHandle {
    #[new]
    #[pyo3(signature = (name, url=None, *, ttl=None, waiter_ttl=None, auto_renew=None, prefix=None, timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        url: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        waiter_ttl: Option<&Bound<'_, PyAny>>,
        auto_renew: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let name = convert::name(name)?;
        let Parsed { options, timeout } = fair_arguments(ttl, waiter_ttl, auto_renew, prefix, timeout)?;
        let store = crate::stores::Target::of(url)?.store_blocking(py, timeout)?;
        let inner = ratelock::FairLock::new(&store, name, options).map_err(to_py)?;
        Ok(PyFairLockHandle { inner })
    }

    /// Connects without blocking the event loop; awaits to a `FairLockHandle` (for `ratelock.asyncio`).
    #[staticmethod]
    #[pyo3(signature = (name, url=None, *, ttl=None, waiter_ttl=None, auto_renew=None, prefix=None, timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn connect_async<'py>(
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
        url: Option<&Bound<'py, PyAny>>,
        ttl: Option<&Bound<'py, PyAny>>,
        waiter_ttl: Option<&Bound<'py, PyAny>>,
        auto_renew: Option<&Bound<'py, PyAny>>,
        prefix: Option<&Bound<'py, PyAny>>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let name = convert::name(name)?;
        let Parsed { options, timeout } = fair_arguments(ttl, waiter_ttl, auto_renew, prefix, timeout)?;
        let target = crate::stores::Target::of(url)?;
        spawn(py, async move {
            let store = target.store(timeout).await.map_err(to_py)?;
            let inner = ratelock::FairLock::new(&store, name, options).map_err(to_py)?;
            Ok(PyFairLockHandle { inner })
        })
    }

    /// Takes the lock if it is free and nobody waits; `None` otherwise (never queues).
    fn try_acquire(&self, py: Python<'_>) -> PyResult<Option<PyLeaseGuard>> {
        let inner = self.inner.clone();
        Ok(run(py, async move { inner.try_acquire().await })?.map(PyLeaseGuard::new))
    }

    /// Queues and waits up to `timeout` seconds (`None`: no limit) for its turn; raises `WaitTimeout`.
    #[pyo3(signature = (timeout=None))]
    fn acquire(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<PyLeaseGuard> {
        let wait = convert::wait_of(timeout)?;
        let inner = self.inner.clone();
        Ok(PyLeaseGuard::new(run(
            py,
            async move { inner.acquire(wait).await },
        )?))
    }

    /// `try_acquire` for asyncio.
    fn try_acquire_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        spawn(py, async move {
            Ok(inner.try_acquire().await.map_err(to_py)?.map(PyLeaseGuard::new))
        })
    }

    /// `acquire` for asyncio.
    #[pyo3(signature = (timeout=None))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let wait = convert::wait_of(timeout)?;
        let inner = self.inner.clone();
        spawn(py, async move {
            Ok(PyLeaseGuard::new(inner.acquire(wait).await.map_err(to_py)?))
        })
    }

    /// The lock as it stands: holder, lease, last token, queue length.
    fn state(&self, py: Python<'_>) -> PyResult<PyFairLockState> {
        let inner = self.inner.clone();
        Ok(run(py, async move { inner.state().await })?.into())
    }

    /// `state` for asyncio.
    fn state_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        spawn(py, async move {
            Ok(PyFairLockState::from(inner.state().await.map_err(to_py)?))
        })
    }

    /// Whether anyone holds the lock now.
    fn is_locked(&self, py: Python<'_>) -> PyResult<bool> {
        let inner = self.inner.clone();
        run(py, async move { inner.is_locked().await })
    }

    /// `is_locked` for asyncio.
    fn is_locked_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        spawn(py, async move { inner.is_locked().await.map_err(to_py) })
    }
}

/// Fair lock options from the Python keyword arguments.
fn fair_arguments(
    ttl: Option<&Bound<'_, PyAny>>,
    waiter_ttl: Option<&Bound<'_, PyAny>>,
    auto_renew: Option<&Bound<'_, PyAny>>,
    prefix: Option<&Bound<'_, PyAny>>,
    timeout: Option<&Bound<'_, PyAny>>,
) -> PyResult<Parsed> {
    LockArguments {
        ttl,
        waiter_ttl,
        auto_renew,
        prefer_writers: None,
        prefix,
        timeout,
    }
    .parse()
}
