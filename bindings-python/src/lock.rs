//! `ratelock._native.LockHandle`: the core `DistributedLock` for the Python `DistributedLock` (sync and
//! asyncio), which adds `with`, threading-style `acquire` and the stack of holds. Grants come as
//! `LockGuard`s.

use pyo3::prelude::*;

use crate::async_twins::pymethods_with_async_twins;
use crate::convert;
use crate::errors::to_py;
use crate::guards::{NewGuard, PyLockGuard};
use crate::lock_options::{lock_parts, PyLockOptions};

/// A handle on one lock name with its own owner token.
#[pyclass(name = "LockHandle", module = "ratelock._native", frozen)]
pub(crate) struct PyLockHandle {
    inner: ratelock::DistributedLock,
}

pymethods_with_async_twins! {
    impl PyLockHandle {
        /// Takes the lock if free; `None` if someone else holds it.
        fn try_acquire / try_acquire_async(&self) -> Option<NewGuard<PyLockGuard>> {
            let lock = self.inner.clone();
            async move { Ok(lock.try_acquire().await?.map(NewGuard::of)) }
        }

        /// Waits up to `timeout` seconds (`None`: no limit) for the lock; raises `WaitTimeout`.
        #[pyo3(signature = (timeout=None))]
        fn acquire / acquire_async(&self, timeout: Option<&Bound<'_, PyAny>>) -> NewGuard<PyLockGuard> {
            let (lock, wait) = (self.inner.clone(), convert::wait_of(timeout)?);
            async move { lock.acquire(wait).await.map(NewGuard::of) }
        }

        /// Whether anyone holds the lock now.
        fn is_locked / is_locked_async(&self) -> bool {
            let lock = self.inner.clone();
            async move { lock.is_locked().await }
        }

        /// Seconds left on the current lease, or `None` when free.
        fn remaining_ttl / remaining_ttl_async(&self) -> Option<f64> {
            let lock = self.inner.clone();
            async move { Ok(lock.remaining_ttl().await?.map(|left| left.as_secs_f64())) }
        }

        /// Deletes the lease whoever holds it; `True` if it was held.
        fn force_release / force_release_async(&self) -> bool {
            let lock = self.inner.clone();
            async move { lock.force_release().await }
        }
    }
    plain {
        /// A handle on `name` (str or bytes) in the store of `url` (a URL, a `Client` or `None`).
        #[new]
        #[pyo3(signature = (name, url=None, options=None))]
        fn new(
            py: Python<'_>,
            name: &Bound<'_, PyAny>,
            url: Option<&Bound<'_, PyAny>>,
            options: Option<&PyLockOptions>,
        ) -> PyResult<Self> {
            let (store, options) = lock_parts(py, url, options)?;
            let inner = ratelock::DistributedLock::new(&store, convert::key(name)?, options).map_err(to_py)?;
            Ok(PyLockHandle { inner })
        }

        /// This handle's owner token.
        #[getter]
        fn owner_token(&self) -> String {
            self.inner.owner_token().to_owned()
        }
    }
}
