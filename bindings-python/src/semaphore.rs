//! `ratelock._native.SemaphoreHandle`: the core `Semaphore` for the Python `Semaphore` (sync and asyncio),
//! which adds `with`, threading-style `acquire` and the stack of holds. Permits come as `PermitGuard`s.

use pyo3::prelude::*;

use crate::async_twins::pymethods_with_async_twins;
use crate::convert;
use crate::errors::to_py;
use crate::guards::{NewGuard, PyPermitGuard};
use crate::lock_options::{lock_parts, PyLockOptions};

/// A handle on one semaphore name.
#[pyclass(name = "SemaphoreHandle", module = "ratelock._native", frozen)]
pub(crate) struct PySemaphoreHandle {
    inner: ratelock::Semaphore,
}

pymethods_with_async_twins! {
    impl PySemaphoreHandle {
        /// Takes a permit if one is free; `None` otherwise.
        fn try_acquire / try_acquire_async(&self) -> Option<NewGuard<PyPermitGuard>> {
            let semaphore = self.inner.clone();
            async move { Ok(semaphore.try_acquire().await?.map(NewGuard::of)) }
        }

        /// Waits up to `timeout` seconds (`None`: no limit) for a permit; raises `WaitTimeout`.
        #[pyo3(signature = (timeout=None))]
        fn acquire / acquire_async(&self, timeout: Option<&Bound<'_, PyAny>>) -> NewGuard<PyPermitGuard> {
            let (semaphore, wait) = (self.inner.clone(), convert::wait_of(timeout)?);
            async move { semaphore.acquire(wait).await.map(NewGuard::of) }
        }

        /// Permits in use now.
        fn in_use / in_use_async(&self) -> u64 {
            let semaphore = self.inner.clone();
            async move { semaphore.in_use().await }
        }
    }
    plain {
        /// A handle on `permits` permits named `name` (str or bytes) in the store of `url`.
        #[new]
        #[pyo3(signature = (name, permits, url=None, options=None))]
        fn new(
            py: Python<'_>,
            name: &Bound<'_, PyAny>,
            permits: &Bound<'_, PyAny>,
            url: Option<&Bound<'_, PyAny>>,
            options: Option<&PyLockOptions>,
        ) -> PyResult<Self> {
            let (name, permits) = (convert::key(name)?, convert::count("permits", permits)?);
            let (store, options) = lock_parts(py, url, options)?;
            let inner = ratelock::Semaphore::new(&store, name, permits, options).map_err(to_py)?;
            Ok(PySemaphoreHandle { inner })
        }
    }
}
