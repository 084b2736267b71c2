//! `ratelock._native.Guard` and its kinds: one hold of any lock kind for Python. `Guard` does all the
//! work (extend, release, the lost signal, each blocking and for asyncio); `LockGuard`, `PermitGuard` and
//! `LeaseGuard` are `Guard` plus what their kind tells at grant time (a fencing token; a re-entrant
//! lock's holds). A guard dropped without `release` gives its hold back in the background.

use pyo3::prelude::*;
use pyo3::PyClass;
use pyo3::PyClassInitializer;

use crate::async_twins::pymethods_with_async_twins;
use crate::convert;

/// One hold. `release` gives it back; later calls raise `LockNotOwned`.
#[pyclass(name = "Guard", module = "ratelock._native", frozen, subclass)]
pub(crate) struct PyGuard {
    guard: ratelock::AnyGuard,
}

pymethods_with_async_twins! {
    impl PyGuard {
        /// Blocks (without the GIL) until the hold is lost, is given back or `timeout` seconds pass
        /// (`None`: no limit); answers whether it was lost (at once for a hold given back).
        #[pyo3(signature = (timeout=None))]
        fn wait_lost / wait_lost_async(&self, timeout: Option<&Bound<'_, PyAny>>) -> bool {
            let lost = self.guard.wait_lost(Some(convert::wait_of(timeout)?));
            async move { Ok(lost.await) }
        }

        /// Moves the end of the lease to `ttl` seconds from now. Never takes the hold again: raises
        /// `LockLost` if it is gone, `LockNotOwned` once it was given back.
        fn extend / extend_async(&self, ttl: &Bound<'_, PyAny>) -> () {
            self.guard.extend(Some(convert::seconds_of("ttl", ttl)?))
        }

        /// Gives the hold back: "released", or "still_held" when a re-entrant lock keeps other holds.
        /// Raises `LockLost` if it had been lost (`lost_reason` then says how), `LockNotOwned` once it
        /// was given back; a release that fails on the way (`StoreUnavailable`) keeps the hold, so it
        /// can be retried.
        fn release / release_async(&self) -> &'static str {
            let release = self.guard.release();
            async move { Ok(release.await?.as_str()) }
        }
    }
    plain {
        /// What the hold is: "lock", "permit", "fair lock", "read hold" or "write hold".
        #[getter]
        fn what(&self) -> &'static str {
            self.guard.what()
        }

        /// True once the hold is known lost.
        fn is_lost(&self) -> bool {
            self.guard.is_lost()
        }

        /// Why the hold was lost: "expired" (its lease ran out without a renewal), "taken" (the store
        /// said it is gone or held by another) or "failed" (a renewal was refused for good: see
        /// `lost_error`); `None` while it is not lost.
        #[getter]
        fn lost_reason(&self) -> Option<&'static str> {
            self.guard.lost_reason().map(|reason| reason.kind())
        }

        /// The error that refused the renewal when `lost_reason` is "failed", else `None`.
        #[getter]
        fn lost_error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
            match self.guard.lost_reason()? {
                ratelock::LostReason::Failed(error) => Some(crate::errors::to_py(error).into_value(py).into_any()),
                _ => None,
            }
        }

        /// True once the hold was given back.
        fn is_released(&self) -> bool {
            self.guard.is_released()
        }

        fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
            let guard = &slf.get().guard;
            let state = if guard.is_released() {
                "released"
            } else if guard.is_lost() {
                "lost"
            } else {
                "held"
            };
            Ok(format!("<ratelock._native.{} {} {state}>", slf.get_type().name()?, guard.what()))
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
            guard: ratelock::AnyGuard::new(guard),
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

/// Declares each kind's guard class: a subclass of `Guard` named `$name`, over the core lease `$lease`,
/// with a read-only `u64` attribute per listed getter of the core guard, read when it is granted.
macro_rules! guard_kinds {
    ($(
        $(#[doc = $doc:literal])*
        $class:ident as $name:literal over $lease:ty { $($(#[doc = $field_doc:literal])* $field:ident),* }
    )*) => {$(
        $(#[doc = $doc])*
        #[pyclass(name = $name, module = "ratelock._native", extends = PyGuard, frozen)]
        pub(crate) struct $class {
            $($(#[doc = $field_doc])* #[pyo3(get)] $field: u64,)*
        }

        impl GuardKind for $class {
            type Lease = $lease;

            #[allow(unused_variables)]
            fn granted(guard: &ratelock::Guard<$lease>) -> Self {
                $class { $($field: guard.$field(),)* }
            }
        }
    )*};
}

guard_kinds! {
    /// One grant of a `DistributedLock`.
    PyLockGuard as "LockGuard" over ratelock::LockLease {
        /// The fencing token of this grant.
        fencing_token,
        /// Holds of this owner when granted (above 1 only for a re-entrant lock).
        holds
    }
    /// One permit of a `Semaphore`.
    PyPermitGuard as "PermitGuard" over ratelock::PermitLease {}
    /// One hold of a `FairLock` or of a `ReadWriteLock` (either side).
    PyLeaseGuard as "LeaseGuard" over ratelock::HeldLease {
        /// The fencing token of this grant (higher than every earlier grant of the same lock).
        fencing_token
    }
}
