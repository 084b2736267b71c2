//! `ratelock._native.LockHandle`: the core `DistributedLock` for the Python `DistributedLock` (sync and
//! asyncio), which adds `with`, threading-style `acquire` and the stack of holds. Grants come as
//! `LockGuard`s.

use pyo3::prelude::*;

use crate::convert;
use crate::guards::PyLockGuard;
use crate::lock_handle::lock_handle_pymethods;

/// A handle on one lock name with its own owner token.
#[pyclass(name = "LockHandle", module = "ratelock._native", frozen)]
pub(crate) struct PyLockHandle {
    inner: ratelock::DistributedLock,
}

lock_handle_pymethods! {
    impl PyLockHandle {
        new(name) = |store, options| ratelock::DistributedLock::new(&store.lock_store()?, convert::name(name)?, options);
        acquires PyLockGuard;
        twins {
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
    }
    plain {
        /// This handle's owner token.
        #[getter]
        fn owner_token(&self) -> String {
            self.inner.owner_token()
        }
    }
}
