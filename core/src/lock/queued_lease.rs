//! The lease a [`LeaseGuard`] holds: one hold of a fair lock or of a read-write lock (either side), with
//! its fencing token, and a waiter's place in their queues ([`Waiting`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::give_back::{release_in_background, Unheard};
use super::guard::{Guard, Lease, Sealed};
use super::options::LockOptions;
use super::shared::{FairShared, RwShared};
use crate::algorithm::fair::{FairCall, FairReply};
use crate::algorithm::lease::{Extended, Released};
use crate::algorithm::rwlock::{RwCall, RwMode, RwReply};
use crate::error::Result;
use crate::store::{LockKindStore, Store};

/// Which lock a hold belongs to, and its grant id.
#[derive(Clone)]
pub(crate) enum QueuedLock {
    Fair(Arc<FairShared>, Arc<str>),
    Rw(Arc<RwShared>, Arc<str>, RwMode),
}

impl QueuedLock {
    fn store(&self) -> &Store {
        match self {
            QueuedLock::Fair(shared, _) => &shared.store,
            QueuedLock::Rw(shared, _, _) => &shared.store,
        }
    }

    fn options(&self) -> &LockOptions {
        match self {
            QueuedLock::Fair(shared, _) => &shared.options,
            QueuedLock::Rw(shared, _, _) => &shared.options,
        }
    }

    /// Moves the lease's end to `ttl` from now; false if the hold is gone.
    async fn extend(&self, fence: u64, ttl: Duration) -> Result<bool> {
        let ttl_us = ttl.as_micros() as u64;
        Ok(match self {
            QueuedLock::Fair(shared, id) => {
                let call = FairCall::Extend { id, fence, ttl_us };
                shared.store.fair_lock(&shared.keys, call, None).await? == FairReply::Done(true)
            }
            QueuedLock::Rw(shared, id, mode) => {
                let call = RwCall::Extend {
                    id,
                    mode: *mode,
                    fence,
                    ttl_us,
                };
                shared.store.rw_lock(&shared.keys, call, None).await? == RwReply::Done(true)
            }
        })
    }

    /// Gives the hold back; false if it was gone already.
    async fn release(&self, fence: u64) -> Result<bool> {
        Ok(match self {
            QueuedLock::Fair(shared, id) => {
                let call = FairCall::Release { id, fence };
                shared.store.fair_lock(&shared.keys, call, None).await? == FairReply::Done(true)
            }
            QueuedLock::Rw(shared, id, mode) => {
                let call = RwCall::Release {
                    id,
                    mode: *mode,
                    fence,
                };
                shared.store.rw_lock(&shared.keys, call, None).await? == RwReply::Done(true)
            }
        })
    }

    /// The fencing token of a grant to this id that no answer told of, if it may hold one: the lock's
    /// state names the holder's (or the writer's) token, and only a call by this id with that token
    /// acts on it (`0`: the lock is free, or held by a reader; a read hold cannot be found so, since the
    /// state names no reader's token, and it lapses with its lease).
    async fn unheard_fence(&self) -> Result<u64> {
        Ok(match self {
            QueuedLock::Fair(shared, _) => {
                match shared
                    .store
                    .fair_lock(&shared.keys, FairCall::State, None)
                    .await?
                {
                    FairReply::State { holder_fence, .. } => holder_fence,
                    other => return Err(super::reply::unexpected(other)),
                }
            }
            QueuedLock::Rw(shared, _, RwMode::Write) => {
                match shared.store.rw_lock(&shared.keys, RwCall::State, None).await? {
                    RwReply::State { writer_fence, .. } => writer_fence,
                    other => return Err(super::reply::unexpected(other)),
                }
            }
            QueuedLock::Rw(_, _, RwMode::Read) => 0,
        })
    }

    /// Gives back a grant to this id that no answer told of ([`QueuedLock::unheard_fence`]).
    async fn give_back_unheard(&self) -> Result<()> {
        let fence = self.unheard_fence().await?;
        if fence != 0 {
            self.release(fence).await?;
        }
        Ok(())
    }

    /// Keeps a grant to this id that no answer told of: extended by this id with the token the state
    /// names, it is this id's exactly when the extension is done. The id's place in the queue (or its
    /// waiting mark), which the wait's tries after the lost one kept asking for, is then withdrawn: left
    /// at the head, it would keep those behind it waiting for it to lapse after the release. Answers the
    /// grant's token and when the extension was sent (where its lease is counted from), or `None` when
    /// this id holds nothing.
    async fn keep_unheard(&self) -> Result<Option<(u64, Instant)>> {
        let fence = self.unheard_fence().await?;
        if fence == 0 {
            return Ok(None);
        }
        let sent = Instant::now();
        if !self.extend(fence, self.options().ttl).await? {
            return Ok(None);
        }
        // A withdrawal the store does not answer leaves the place to lapse (`waiter_ttl`), as a dropped
        // wait's does; the grant is kept all the same.
        match self.withdraw().await {
            Err(failure) if !failure.is_store_failure() => Err(failure),
            _ => Ok(Some((fence, sent))),
        }
    }

    /// Leaves the queue (fair lock) or removes the waiting mark (writer); false if there was none.
    async fn withdraw(&self) -> Result<bool> {
        Ok(match self {
            QueuedLock::Fair(shared, id) => {
                let call = FairCall::Withdraw { id };
                shared.store.fair_lock(&shared.keys, call, None).await? == FairReply::Done(true)
            }
            QueuedLock::Rw(shared, id, _) => {
                let call = RwCall::Withdraw { id };
                shared.store.rw_lock(&shared.keys, call, None).await? == RwReply::Done(true)
            }
        })
    }

    /// Releases without a runtime: possible on the memory store only.
    fn release_in_memory(&self, fence: u64) {
        #[allow(irrefutable_let_patterns)]
        let Store::Memory(store) = self.store() else {
            return;
        };
        match self {
            QueuedLock::Fair(shared, id) => {
                store
                    .locks()
                    .fair_lock(&shared.keys, FairCall::Release { id, fence }, None);
            }
            QueuedLock::Rw(shared, id, mode) => {
                let call = RwCall::Release {
                    id,
                    mode: *mode,
                    fence,
                };
                store.locks().rw_lock(&shared.keys, call, None);
            }
        }
    }
}

/// Gives back, in the background, the grant `held`'s id may have been made by a try whose answer was
/// lost ([`QueuedLock::give_back_unheard`]; nothing for a read hold, which cannot be found).
pub(crate) fn give_back_later(held: QueuedLock) {
    if matches!(held, QueuedLock::Rw(_, _, RwMode::Read)) {
        return;
    }
    let lease = held.options().ttl;
    release_in_background(lease, move || {
        let held = held.clone();
        async move { held.give_back_unheard().await }
    });
}

/// Before a wait's next try for `held`'s id: what an earlier try's lost answer granted is the wait's
/// grant, and its guard is answered ([`QueuedLock::keep_unheard`]). The next try would otherwise wait
/// on it (the holder is its own id); giving it back instead sent the waiter to the back of the queue,
/// behind those that came after it. The mark is cleared only once the store has answered: a store
/// still out keeps it for the try after, and a wait dropped meanwhile gives the grant back when it ends.
/// Any other failure (configuration, protocol, an unexpected state) ends the wait with it: the wait
/// then gives back what its id holds, as a wait that fails does.
pub(crate) async fn before_next_try(held: &QueuedLock, unheard: &Unheard) -> Result<Option<LeaseGuard>> {
    if !unheard.pending() {
        return Ok(None);
    }
    let kept = match held.keep_unheard().await {
        Ok(kept) => kept,
        Err(failure) if failure.is_store_failure() => return Ok(None),
        Err(failure) => return Err(failure),
    };
    unheard.settled();
    Ok(kept.map(|(fence, sent)| lease_guard(held.clone(), fence, sent)))
}

/// A waiter's place in a queue (fair lock) or its waiting mark (writer). [`Waiting::settle`] removes it
/// unless the wait was granted; if the waiting future is dropped first, it is removed in the background,
/// so those behind it need not wait for it to lapse.
pub(crate) struct Waiting {
    held: Option<QueuedLock>,
    /// The runtime the wait began on: a wait dropped where none is current (Python's blocking call
    /// interrupted by a signal handler drops it on the caller's thread) withdraws there. It withdrew
    /// nothing, and a dead place at a fair lock's head kept every waiter behind it for `waiter_ttl`.
    runtime: Option<tokio::runtime::Handle>,
}

impl Waiting {
    /// A place that needs removing if the wait fails (`None`: nothing to remove).
    pub(crate) fn new(held: Option<QueuedLock>) -> Self {
        Waiting {
            held,
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// Ends the wait: on failure the place is removed before the wait's error is returned. A removal
    /// the store could not answer leaves the place to lapse on its own (`waiter_ttl` for a fair lock's
    /// place, the writer's wait for a mark), and the wait's error stands; a removal that fails
    /// otherwise (configuration, protocol, an unexpected state) is the error returned, since it says
    /// more than the wait's own.
    pub(crate) async fn settle<T>(mut self, outcome: Result<T>) -> Result<T> {
        if let (Err(_), Some(held)) = (&outcome, self.held.take()) {
            match held.withdraw().await {
                Err(failure) if !failure.is_store_failure() => return Err(failure),
                _ => {}
            }
        }
        self.held = None;
        outcome
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        // Nobody waits for the withdrawal: one that fails leaves the place to lapse (`waiter_ttl`).
        super::run_to_end::in_background(self.runtime.take(), async move {
            let _ = held.withdraw().await;
        });
    }
}

/// One hold of a fair lock, or a read or write hold of a read-write lock (see [`LeaseGuard`]).
#[derive(Clone)]
pub struct HeldLease {
    held: QueuedLock,
    fence: u64,
}

/// A held fair lock, or a read or write hold of a read-write lock: [`Guard`] over a [`HeldLease`].
/// Release it with [`release`](Guard::release); dropping it releases in the background.
pub type LeaseGuard = Guard<HeldLease>;

impl std::fmt::Debug for HeldLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldLease")
            .field("fencing_token", &self.fence)
            .finish()
    }
}

/// A guard for a grant (`fence`) of `held` whose request was sent at `sent`.
pub(crate) fn lease_guard(held: QueuedLock, fence: u64, sent: Instant) -> LeaseGuard {
    Guard::start(HeldLease { held, fence }, sent)
}

impl Guard<HeldLease> {
    /// The fencing token of this grant: higher than every earlier grant of the same lock (readers and
    /// writers of a read-write lock draw from one counter).
    pub fn fencing_token(&self) -> u64 {
        self.lease.fence
    }
}

impl Sealed for HeldLease {}

impl Lease for HeldLease {
    fn options(&self) -> &LockOptions {
        self.held.options()
    }

    fn fence(&self) -> Option<u64> {
        Some(self.fence)
    }

    fn what(&self) -> &'static str {
        match &self.held {
            QueuedLock::Fair(..) => "fair lock",
            QueuedLock::Rw(_, _, RwMode::Read) => "read hold",
            QueuedLock::Rw(_, _, RwMode::Write) => "write hold",
        }
    }

    async fn extend(&self, ttl: Duration) -> Result<Extended> {
        let extended = self.held.extend(self.fence, ttl).await?;
        Ok(if extended {
            Extended::Extended
        } else {
            Extended::Expired
        })
    }

    async fn release(&self) -> Result<Released> {
        let released = self.held.release(self.fence).await?;
        Ok(if released {
            Released::Released
        } else {
            Released::NotHeld
        })
    }

    fn release_in_memory(&self) {
        self.held.release_in_memory(self.fence);
    }
}
