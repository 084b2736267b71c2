//! `ratelock._native.Guard` and its kinds: one hold of any lock kind for Python. `Guard` does all the
//! work (extend, release, the lost signal, each blocking and for asyncio); `LockGuard`, `PermitGuard` and
//! `LeaseGuard` are `Guard` plus what their kind tells at grant time (a fencing token; a re-entrant
//! lock's holds). A guard dropped without `release` gives its hold back in the background.

use pyo3::prelude::*;
use pyo3::PyClass;
use pyo3::PyClassInitializer;

use crate::async_twins::pymethods_with_async_twins;
use crate::convert;
use crate::guard_slot::GuardSlot;

/// One hold. `release` gives it back; later calls raise `LockNotOwned`.
#[pyclass(name = "Guard", module = "ratelock._native", frozen, subclass)]
pub(crate) struct PyGuard {
    slot: GuardSlot,
}

pymethods_with_async_twins! {
    impl PyGuard {
        /// Blocks (without the GIL) until the hold is lost or `timeout` seconds pass (`None`: no
        /// limit); answers whether it was lost, at once for a hold given back.
        #[pyo3(signature = (timeout=None))]
        fn wait_lost / wait_lost_async(&self, timeout: Option<&Bound<'_, PyAny>>) -> bool {
            self.slot.waiting_lost(convert::wait_of(timeout)?)
        }

        /// Moves the end of the lease to `ttl` seconds from now. Never takes the hold again: raises
        /// `LockLost` if it is gone, `LockNotOwned` once it was given back.
        fn extend / extend_async(&self, ttl: &Bound<'_, PyAny>) -> () {
            self.slot.extending(convert::seconds_of("ttl", ttl)?)
        }

        /// Gives the hold back. Raises `LockLost` if it had been lost, `LockNotOwned` once it was given
        /// back; a release that fails on the way (`StoreUnavailable`) keeps the hold, so it can be retried.
        fn release / release_async(&self) -> () {
            self.slot.releasing()
        }
    }
    plain {
        /// What the hold is: "lock", "permit", "fair lock", "read hold" or "write hold".
        #[getter]
        fn what(&self) -> &'static str {
            self.slot.what()
        }

        /// True once the hold is known lost.
        fn is_lost(&self) -> bool {
            self.slot.is_lost()
        }

        /// True once the hold was given back.
        fn is_released(&self) -> bool {
            self.slot.is_released()
        }

        fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
            let slot = &slf.get().slot;
            let state = if slot.is_released() {
                "released"
            } else if slot.is_lost() {
                "lost"
            } else {
                "held"
            };
            Ok(format!("<ratelock._native.{} {} {state}>", slf.get_type().name()?, slot.what()))
        }
    }
}

/// A kind's guard class: `Guard` and what the kind adds, read from the core guard when it is granted.
pub(crate) trait GuardKind: PyClass<BaseType = PyGuard> + Send {
    /// The core lease this kind's guard holds.
    type Lease: ratelock::Lease;

    /// What the kind keeps of a new grant.
    fn granted(guard: &ratelock::Guard<Self::Lease>) -> Self;
}

/// A core guard on its way to Python as its kind's class; the object is made once the GIL is held (a
/// class initializer cannot cross threads, its parts can).
pub(crate) struct NewGuard<K: GuardKind> {
    base: PyGuard,
    kind: K,
}

impl<K: GuardKind> NewGuard<K> {
    pub(crate) fn of(guard: ratelock::Guard<K::Lease>) -> Self {
        let kind = K::granted(&guard);
        let base = PyGuard {
            slot: GuardSlot::new(guard),
        };
        NewGuard { base, kind }
    }
}

impl<'py, K: GuardKind> IntoPyObject<'py> for NewGuard<K> {
    type Target = K;
    type Output = Bound<'py, K>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, K>> {
        Bound::new(py, PyClassInitializer::from(self.base).add_subclass(self.kind))
    }
}

/// One grant of a `DistributedLock`.
#[pyclass(name = "LockGuard", module = "ratelock._native", extends = PyGuard, frozen)]
pub(crate) struct PyLockGuard {
    /// The fencing token of this grant.
    #[pyo3(get)]
    fencing_token: u64,
    /// Holds of this owner when granted (above 1 only for a re-entrant lock).
    #[pyo3(get)]
    holds: u64,
}

impl GuardKind for PyLockGuard {
    type Lease = ratelock::LockLease;

    fn granted(guard: &ratelock::LockGuard) -> Self {
        PyLockGuard {
            fencing_token: guard.fencing_token(),
            holds: guard.holds(),
        }
    }
}

/// One permit of a `Semaphore`.
#[pyclass(name = "PermitGuard", module = "ratelock._native", extends = PyGuard, frozen)]
pub(crate) struct PyPermitGuard {}

impl GuardKind for PyPermitGuard {
    type Lease = ratelock::PermitLease;

    fn granted(_guard: &ratelock::PermitGuard) -> Self {
        PyPermitGuard {}
    }
}

/// One hold of a `FairLock` or of a `ReadWriteLock` (either side).
#[pyclass(name = "LeaseGuard", module = "ratelock._native", extends = PyGuard, frozen)]
pub(crate) struct PyLeaseGuard {
    /// The fencing token of this grant (higher than every earlier grant of the same lock).
    #[pyo3(get)]
    fencing_token: u64,
}

impl GuardKind for PyLeaseGuard {
    type Lease = ratelock::HeldLease;

    fn granted(guard: &ratelock::LeaseGuard) -> Self {
        PyLeaseGuard {
            fencing_token: guard.fencing_token(),
        }
    }
}
