//! The lease a [`LockGuard`] holds: one grant of a [`DistributedLock`](crate::DistributedLock), with its
//! fencing token and the holds of its handle (above 1 only with re-entry).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::guard::{Guard, Lease, Sealed};
use super::options::LockOptions;
use super::own_grants::{live_grant, LiveGrant};
use super::shared::DistributedShared;
use crate::algorithm::lease::{Extended, LockCall, LockReply, Released};
use crate::error::Result;
use crate::store::{AnyLockStore, Store};

/// One grant of a distributed lock (see [`LockGuard`]).
#[derive(Clone)]
pub struct LockLease {
    shared: Arc<DistributedShared>,
    /// The owner token the grant was made to (this process's).
    owner: Arc<str>,
    fence: u64,
    holds: u64,
    /// The grant in its handle's book while any clone of this lease lives.
    _live: Arc<LiveGrant>,
}

/// A held lock: [`Guard`] over a [`LockLease`]. Release it with [`release`](Guard::release); dropping
/// it releases in the background.
pub type LockGuard = Guard<LockLease>;

impl std::fmt::Debug for LockLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockLease")
            .field("fencing_token", &self.fence)
            .field("holds", &self.holds)
            .finish()
    }
}

/// A guard over a grant to `owner` whose request was sent at `sent`.
pub(crate) fn lock_guard(
    shared: Arc<DistributedShared>,
    owner: Arc<str>,
    fence: u64,
    holds: u64,
    sent: Instant,
) -> LockGuard {
    Guard::start(
        LockLease {
            _live: live_grant(&shared.own, fence),
            shared,
            owner,
            fence,
            holds,
        },
        sent,
    )
}

impl Guard<LockLease> {
    /// The fencing token of this grant: strictly higher than any earlier grant of the same lock.
    pub fn fencing_token(&self) -> u64 {
        self.lease.fence
    }

    /// How many holds this handle had right after this acquire (above 1 only with re-entry).
    pub fn holds(&self) -> u64 {
        self.lease.holds
    }
}

impl Sealed for LockLease {}

impl Lease for LockLease {
    fn options(&self) -> &LockOptions {
        &self.shared.options
    }

    fn what(&self) -> &'static str {
        "lock"
    }

    fn fence(&self) -> Option<u64> {
        Some(self.fence)
    }

    fn clock_drift(&self) -> fn(Duration) -> Duration {
        self.shared.store.clock_drift()
    }

    fn release_is_idempotent(&self) -> bool {
        !self.shared.options.reentrant
    }

    async fn extend(&self, ttl: Duration) -> Result<Extended> {
        let call = LockCall::Extend {
            owner: &self.owner,
            fence: self.fence,
            ttl_us: ttl.as_micros() as u64,
        };
        reply_as!(self.shared.call(call).await?, LockReply::Extended)
    }

    /// Lost already: the lock's state tells whether someone else holds it now.
    async fn extend_lost(&self) -> Result<Extended> {
        let state = self.shared.state().await?;
        let taken = state.held && state.holder_fence != self.fence;
        Ok(if taken {
            Extended::HeldByOther
        } else {
            Extended::Expired
        })
    }

    async fn release(&self) -> Result<Released> {
        reply_as!(self.shared.call(self.release_call()).await?, LockReply::Released)
    }

    /// The lock is free and its last grant is still this one: nobody took it since, and its fencing
    /// counter survived (a restart without persistence loses both the lease and the counter).
    async fn freed_by_unheard_release(&self) -> Result<bool> {
        let state = self.shared.state().await?;
        Ok(!state.held && state.last_fence == self.fence)
    }

    fn release_in_memory(&self) {
        #[allow(irrefutable_let_patterns)]
        if let AnyLockStore::Store(Store::Memory(store)) = &self.shared.store {
            store.locks().lock(&self.shared.keys, self.release_call());
        }
    }
}

impl LockLease {
    fn release_call(&self) -> LockCall<'_> {
        LockCall::Release {
            owner: &self.owner,
            fence: self.fence,
        }
    }
}
