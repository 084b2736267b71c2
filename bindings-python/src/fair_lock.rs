//! `ratelock._native.FairLockHandle`: the core `FairLock` for the Python `FairLock` (sync and asyncio),
//! which adds `with`, threading-style `acquire` and the stack of holds. Grants come as `LeaseGuard`s.

use pyo3::prelude::*;

use crate::convert;
use crate::guards::PyLeaseGuard;
use crate::lock_handle::lock_handle_pymethods;
use crate::lock_states::PyFairLockState;

/// A handle on one fair lock name. `acquire` queues for its turn; `try_acquire` never cuts in.
#[pyclass(name = "FairLockHandle", module = "ratelock._native", frozen)]
pub(crate) struct PyFairLockHandle {
    inner: ratelock::FairLock,
}

lock_handle_pymethods! {
    impl PyFairLockHandle {
        new(name) = |store, options| ratelock::FairLock::new(&store.store()?, convert::name(name)?, options);
        acquires PyLeaseGuard;
        twins {
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
    }
}
