//! `ratelock._native.SemaphoreHandle`: the core `Semaphore` for the Python `Semaphore` (sync and asyncio),
//! which adds `with`, threading-style `acquire` and the stack of holds. Permits come as `PermitGuard`s.

use pyo3::prelude::*;

use crate::convert;
use crate::guards::PyPermitGuard;
use crate::lock_handle::lock_handle_pymethods;

/// A handle on one semaphore name.
#[pyclass(name = "SemaphoreHandle", module = "ratelock._native", frozen)]
pub(crate) struct PySemaphoreHandle {
    inner: ratelock::Semaphore,
}

lock_handle_pymethods! {
    impl PySemaphoreHandle {
        new(name, permits) = |store, options| {
            let (name, permits) = (convert::name(name)?, convert::count("permits", permits)?);
            ratelock::Semaphore::new(&store.store()?, name, permits, options)
        };
        acquires PyPermitGuard;
        twins {
            /// Permits in use now.
            fn in_use / in_use_async(&self) -> u64 {
                let semaphore = self.inner.clone();
                async move { semaphore.in_use().await }
            }
        }
    }
}
