//! The core's `Guard<L>` of any lock kind behind one object-safe trait, so that one native guard class
//! (`guard.rs`) holds a lock grant, a semaphore permit and a fair or read-write hold alike. What differs
//! between the kinds, besides the lease itself, is only whether a hold has a fencing token.

use std::time::Duration;

use futures_util::future::BoxFuture;
use ratelock::{Extended, Guard, Lease, Released};

/// A held core guard of some lock kind.
pub(crate) trait AnyGuard: Send + Sync {
    /// `Guard::extend`.
    fn extend(&self, ttl: Duration) -> BoxFuture<'_, ratelock::Result<Extended>>;
    /// `Guard::try_release`: keeps the guard when the release fails on the way.
    fn try_release(&mut self) -> BoxFuture<'_, ratelock::Result<Released>>;
}

impl<L: Lease> AnyGuard for Guard<L> {
    fn extend(&self, ttl: Duration) -> BoxFuture<'_, ratelock::Result<Extended>> {
        Box::pin(Guard::extend(self, ttl))
    }

    fn try_release(&mut self) -> BoxFuture<'_, ratelock::Result<Released>> {
        Box::pin(Guard::try_release(self))
    }
}

/// Each lease kind's fencing token, where it has one (a semaphore permit has none).
pub(crate) trait FencedLease: Lease {
    /// The fencing token of `guard`'s grant.
    fn fencing_token(guard: &Guard<Self>) -> Option<u64>;
}

impl FencedLease for ratelock::LockLease {
    fn fencing_token(guard: &Guard<Self>) -> Option<u64> {
        Some(guard.fencing_token())
    }
}

impl FencedLease for ratelock::HeldLease {
    fn fencing_token(guard: &Guard<Self>) -> Option<u64> {
        Some(guard.fencing_token())
    }
}

impl FencedLease for ratelock::PermitLease {
    fn fencing_token(_: &Guard<Self>) -> Option<u64> {
        None
    }
}
