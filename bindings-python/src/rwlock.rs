//! `ratelock._native.ReadWriteLockHandle` and `ReadWriteLockSide`: the core `ReadWriteLock` for the Python
//! `ReadWriteLock` (sync and asyncio). Each side (`reading`, `writing`) takes holds as any lock handle
//! does; read and write holds alike come as `LeaseGuard`s.

use std::time::Duration;

use pyo3::prelude::*;

use crate::convert;
use crate::guards::PyLeaseGuard;
use crate::lock_handle::lock_handle_pymethods;
use crate::lock_states::PyRwLockState;

/// A handle on one read-write lock name.
#[pyclass(name = "ReadWriteLockHandle", module = "ratelock._native", frozen)]
pub(crate) struct PyReadWriteLockHandle {
    inner: ratelock::ReadWriteLock,
}

/// One side of a read-write lock: its shared read holds or its one write hold.
#[pyclass(name = "ReadWriteLockSide", module = "ratelock._native", frozen)]
pub(crate) struct PyReadWriteLockSide {
    inner: SideOf,
}

/// Which side of the lock.
#[derive(Clone, Copy)]
enum Side {
    Read,
    Write,
}

/// A side of a core read-write lock, asked for holds with the calls a one-hold lock answers.
#[derive(Clone)]
struct SideOf {
    lock: ratelock::ReadWriteLock,
    side: Side,
}

impl SideOf {
    /// A read hold if no writer holds (or, with writer preference, waits for) the lock; the write hold
    /// if nobody holds it (never marking itself waiting). `None` otherwise.
    async fn try_acquire(&self) -> ratelock::Result<Option<ratelock::LeaseGuard>> {
        match self.side {
            Side::Read => self.lock.try_acquire_read().await,
            Side::Write => self.lock.try_acquire_write().await,
        }
    }

    /// Waits up to `wait` for the hold (a waiting writer holds back new readers, with writer preference).
    async fn acquire(&self, wait: Duration) -> ratelock::Result<ratelock::LeaseGuard> {
        match self.side {
            Side::Read => self.lock.acquire_read(wait).await,
            Side::Write => self.lock.acquire_write(wait).await,
        }
    }
}

lock_handle_pymethods! {
    impl PyReadWriteLockSide {
        acquires PyLeaseGuard;
    }
}

lock_handle_pymethods! {
    impl PyReadWriteLockHandle {
        new(name) = |store, options| ratelock::ReadWriteLock::new(&store.store()?, convert::name(name)?, options);
        twins {
            /// The lock as it stands: readers, writer, waiting writers, last token.
            fn state / state_async(&self) -> PyRwLockState {
                let lock = self.inner.clone();
                async move { Ok(lock.state().await?.into()) }
            }
        }
    }
    plain {
        /// The read side: holds shared with other readers.
        #[getter]
        fn reading(&self) -> PyReadWriteLockSide {
            self.side(Side::Read)
        }

        /// The write side: the one hold that excludes everyone else.
        #[getter]
        fn writing(&self) -> PyReadWriteLockSide {
            self.side(Side::Write)
        }
    }
}

impl PyReadWriteLockHandle {
    fn side(&self, side: Side) -> PyReadWriteLockSide {
        let lock = self.inner.clone();
        PyReadWriteLockSide {
            inner: SideOf { lock, side },
        }
    }
}
