//! `ratelock._native.ReadWriteLockHandle`: the core `ReadWriteLock` for the Python `ReadWriteLock` (sync
//! and asyncio). Read and write holds alike come as `LeaseGuard`s.

use std::future::Future;

use pyo3::prelude::*;

use crate::async_twins::pymethods_with_async_twins;
use crate::convert;
use crate::errors::to_py;
use crate::guards::{NewGuard, PyLeaseGuard};
use crate::lock_options::{lock_parts, PyLockOptions};
use crate::lock_states::PyRwLockState;

/// A handle on one read-write lock name.
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

impl PyReadWriteLockHandle {
    /// A hold on `side` if it can be had now; `None` otherwise.
    fn trying(
        &self,
        side: Side,
    ) -> impl Future<Output = ratelock::Result<Option<NewGuard<PyLeaseGuard>>>> + Send + 'static {
        let lock = self.inner.clone();
        async move {
            let hold = match side {
                Side::Read => lock.try_acquire_read().await?,
                Side::Write => lock.try_acquire_write().await?,
            };
            Ok(hold.map(NewGuard::of))
        }
    }

    /// A hold on `side`, waiting up to `timeout` seconds (`None`: no limit) for it.
    fn waiting(
        &self,
        side: Side,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<impl Future<Output = ratelock::Result<NewGuard<PyLeaseGuard>>> + Send + 'static> {
        let (lock, wait) = (self.inner.clone(), convert::wait_of(timeout)?);
        Ok(async move {
            let hold = match side {
                Side::Read => lock.acquire_read(wait).await?,
                Side::Write => lock.acquire_write(wait).await?,
            };
            Ok(NewGuard::of(hold))
        })
    }
}

pymethods_with_async_twins! {
    impl PyReadWriteLockHandle {
        /// A read hold if no writer holds (or, with writer preference, waits for) the lock; else `None`.
        fn try_acquire_read / try_acquire_read_async(&self) -> Option<NewGuard<PyLeaseGuard>> {
            self.trying(Side::Read)
        }

        /// The write hold if nobody holds the lock; else `None` (never marks itself waiting).
        fn try_acquire_write / try_acquire_write_async(&self) -> Option<NewGuard<PyLeaseGuard>> {
            self.trying(Side::Write)
        }

        /// Waits up to `timeout` seconds (`None`: no limit) for a read hold; raises `WaitTimeout`.
        #[pyo3(signature = (timeout=None))]
        fn acquire_read / acquire_read_async(
            &self,
            timeout: Option<&Bound<'_, PyAny>>,
        ) -> NewGuard<PyLeaseGuard> {
            self.waiting(Side::Read, timeout)?
        }

        /// Waits up to `timeout` seconds (`None`: no limit) for the write hold; raises `WaitTimeout`.
        #[pyo3(signature = (timeout=None))]
        fn acquire_write / acquire_write_async(
            &self,
            timeout: Option<&Bound<'_, PyAny>>,
        ) -> NewGuard<PyLeaseGuard> {
            self.waiting(Side::Write, timeout)?
        }

        /// The lock as it stands: readers, writer, waiting writers, last token.
        fn state / state_async(&self) -> PyRwLockState {
            let lock = self.inner.clone();
            async move { Ok(lock.state().await?.into()) }
        }
    }
    plain {
        /// A handle on the read-write lock `name` (str or bytes) in the store of `url`.
        #[new]
        #[pyo3(signature = (name, url=None, options=None))]
        fn new(
            py: Python<'_>,
            name: &Bound<'_, PyAny>,
            url: Option<&Bound<'_, PyAny>>,
            options: Option<&PyLockOptions>,
        ) -> PyResult<Self> {
            let name = convert::name(name)?;
            let (store, options) = lock_parts(py, url, options)?;
            let inner = ratelock::ReadWriteLock::new(&store, name, options).map_err(to_py)?;
            Ok(PyReadWriteLockHandle { inner })
        }
    }
}
