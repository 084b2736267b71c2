//! `ratelock._native.FairLockHandle`: the core `FairLock` for the Python `FairLock` (sync and asyncio),
//! which adds `with`, threading-style `acquire` and the stack of holds. Grants come as `LeaseGuard`s.

use pyo3::prelude::*;

use crate::async_twins::pymethods_with_async_twins;
use crate::convert;
use crate::errors::to_py;
use crate::guards::{NewGuard, PyLeaseGuard};
use crate::lock_options::{lock_parts, PyLockOptions};
use crate::lock_states::PyFairLockState;

/// A handle on one fair lock name.
#[pyclass(name = "FairLockHandle", module = "ratelock._native", frozen)]
pub(crate) struct PyFairLockHandle {
    inner: ratelock::FairLock,
}

pymethods_with_async_twins! {
    impl PyFairLockHandle {
        /// Takes the lock if it is free and nobody waits; `None` otherwise (never queues).
        fn try_acquire / try_acquire_async(&self) -> Option<NewGuard<PyLeaseGuard>> {
            let lock = self.inner.clone();
            async move { Ok(lock.try_acquire().await?.map(NewGuard::of)) }
        }

        /// Queues and waits up to `timeout` seconds (`None`: no limit) for its turn; raises `WaitTimeout`.
        #[pyo3(signature = (timeout=None))]
        fn acquire / acquire_async(&self, timeout: Option<&Bound<'_, PyAny>>) -> NewGuard<PyLeaseGuard> {
            let (lock, wait) = (self.inner.clone(), convert::wait_of(timeout)?);
            async move { lock.acquire(wait).await.map(NewGuard::of) }
        }

        /// The lock as it stands: holder, lease, last token, queue length.
        fn state / state_async(&self) -> PyFairLockState {
            let lock = self.inner.clone();
            async move { Ok(lock.state().await?.into()) }
        }

        /// Whether anyone holds the lock now.
        fn is_locked / is_locked_async(&self) -> bool {
            let lock = self.inner.clone();
            async move { lock.is_locked().await }
        }
    }
    plain {
        /// A handle on the fair lock `name` (str or bytes) in the store of `url`.
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
            let inner = ratelock::FairLock::new(&store, name, options).map_err(to_py)?;
            Ok(PyFairLockHandle { inner })
        }
    }
}
