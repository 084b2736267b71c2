//! `ratelock._native.ReadWriteLockHandle`: the core `ReadWriteLock` for the Python
//! `ratelock.ReadWriteLock`. Read and write holds alike come as `LeaseGuard`s.

use pyo3::prelude::*;

use crate::convert;
use crate::errors::to_py;
use crate::lease_guard::PyLeaseGuard;
use crate::lock_options::{LockArguments, Parsed};
use crate::lock_states::PyRwLockState;
use crate::runtime::{run, spawn};

/// A handle on one read-write lock name. Keyword arguments left `None` take the core's defaults.
#[pyclass(name = "ReadWriteLockHandle", module = "ratelock._native", frozen)]
pub(crate) struct PyReadWriteLockHandle {
    inner: ratelock::ReadWriteLock,
}

/// Which side of the lock a call is about.
#[derive(Clone, Copy)]
enum Side {
    Read,
    Write,
}

impl Side {
    async fn try_acquire(
        self,
        lock: ratelock::ReadWriteLock,
    ) -> ratelock::Result<Option<ratelock::LeaseGuard>> {
        match self {
            Side::Read => lock.try_acquire_read().await,
            Side::Write => lock.try_acquire_write().await,
        }
    }

    async fn acquire(
        self,
        lock: ratelock::ReadWriteLock,
        wait: std::time::Duration,
    ) -> ratelock::Result<ratelock::LeaseGuard> {
        match self {
            Side::Read => lock.acquire_read(wait).await,
            Side::Write => lock.acquire_write(wait).await,
        }
    }
}

#[pymethods]
impl PyReadWriteLockHandle {
    #[new]
    #[pyo3(signature = (
        name, url=None, *, ttl=None, waiter_ttl=None, prefer_writers=None, auto_renew=None, prefix=None, timeout=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        url: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        waiter_ttl: Option<&Bound<'_, PyAny>>,
        prefer_writers: Option<&Bound<'_, PyAny>>,
        auto_renew: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let name = convert::name(name)?;
        let arguments = LockArguments {
            ttl,
            waiter_ttl,
            auto_renew,
            prefer_writers,
            prefix,
            timeout,
        };
        let Parsed { options, timeout } = arguments.parse()?;
        let store = crate::stores::Target::of(url)?.store_blocking(py, timeout)?;
        let inner = ratelock::ReadWriteLock::new(&store, name, options).map_err(to_py)?;
        Ok(PyReadWriteLockHandle { inner })
    }

    /// Connects without blocking the event loop; awaits to a `ReadWriteLockHandle`.
    #[staticmethod]
    #[pyo3(signature = (
        name, url=None, *, ttl=None, waiter_ttl=None, prefer_writers=None, auto_renew=None, prefix=None, timeout=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn connect_async<'py>(
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
        url: Option<&Bound<'py, PyAny>>,
        ttl: Option<&Bound<'py, PyAny>>,
        waiter_ttl: Option<&Bound<'py, PyAny>>,
        prefer_writers: Option<&Bound<'py, PyAny>>,
        auto_renew: Option<&Bound<'py, PyAny>>,
        prefix: Option<&Bound<'py, PyAny>>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let name = convert::name(name)?;
        let arguments = LockArguments {
            ttl,
            waiter_ttl,
            auto_renew,
            prefer_writers,
            prefix,
            timeout,
        };
        let Parsed { options, timeout } = arguments.parse()?;
        let target = crate::stores::Target::of(url)?;
        spawn(py, async move {
            let store = target.store(timeout).await.map_err(to_py)?;
            let inner = ratelock::ReadWriteLock::new(&store, name, options).map_err(to_py)?;
            Ok(PyReadWriteLockHandle { inner })
        })
    }

    /// A read hold if no writer holds (or, with writer preference, waits for) the lock; else `None`.
    fn try_acquire_read(&self, py: Python<'_>) -> PyResult<Option<PyLeaseGuard>> {
        self.try_acquire(py, Side::Read)
    }

    /// The write hold if nobody holds the lock; else `None` (never marks itself waiting).
    fn try_acquire_write(&self, py: Python<'_>) -> PyResult<Option<PyLeaseGuard>> {
        self.try_acquire(py, Side::Write)
    }

    /// Waits up to `timeout` seconds (`None`: no limit) for a read hold; raises `WaitTimeout`.
    #[pyo3(signature = (timeout=None))]
    fn acquire_read(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<PyLeaseGuard> {
        self.acquire(py, Side::Read, timeout)
    }

    /// Waits up to `timeout` seconds (`None`: no limit) for the write hold; raises `WaitTimeout`.
    #[pyo3(signature = (timeout=None))]
    fn acquire_write(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<PyLeaseGuard> {
        self.acquire(py, Side::Write, timeout)
    }

    /// `try_acquire_read` for asyncio.
    fn try_acquire_read_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.try_acquire_async(py, Side::Read)
    }

    /// `try_acquire_write` for asyncio.
    fn try_acquire_write_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.try_acquire_async(py, Side::Write)
    }

    /// `acquire_read` for asyncio.
    #[pyo3(signature = (timeout=None))]
    fn acquire_read_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.acquire_async(py, Side::Read, timeout)
    }

    /// `acquire_write` for asyncio.
    #[pyo3(signature = (timeout=None))]
    fn acquire_write_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.acquire_async(py, Side::Write, timeout)
    }

    /// The lock as it stands: readers, writer, waiting writers, last token.
    fn state(&self, py: Python<'_>) -> PyResult<PyRwLockState> {
        let inner = self.inner.clone();
        Ok(run(py, async move { inner.state().await })?.into())
    }

    /// `state` for asyncio.
    fn state_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        spawn(py, async move {
            Ok(PyRwLockState::from(inner.state().await.map_err(to_py)?))
        })
    }
}

impl PyReadWriteLockHandle {
    fn try_acquire(&self, py: Python<'_>, side: Side) -> PyResult<Option<PyLeaseGuard>> {
        let inner = self.inner.clone();
        Ok(run(py, side.try_acquire(inner))?.map(PyLeaseGuard::new))
    }

    fn acquire(
        &self,
        py: Python<'_>,
        side: Side,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyLeaseGuard> {
        let wait = convert::wait_of(timeout)?;
        let inner = self.inner.clone();
        Ok(PyLeaseGuard::new(run(py, side.acquire(inner, wait))?))
    }

    fn try_acquire_async<'py>(&self, py: Python<'py>, side: Side) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        spawn(py, async move {
            Ok(side
                .try_acquire(inner)
                .await
                .map_err(to_py)?
                .map(PyLeaseGuard::new))
        })
    }

    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        side: Side,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let wait = convert::wait_of(timeout)?;
        let inner = self.inner.clone();
        spawn(py, async move {
            Ok(PyLeaseGuard::new(side.acquire(inner, wait).await.map_err(to_py)?))
        })
    }
}
