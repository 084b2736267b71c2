//! `LeaseGuard`: one hold of a fair lock or of a read-write lock (either side), with its fencing token,
//! the lost signal, manual extension and release. Dropping a held guard stops its watchdog and gives the
//! hold back in the background.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::hold::{release_in_background, Hold};
use super::lost::LostSignal;
use super::shared::{FairShared, RwShared};
use super::{check_lease, LockOptions};
use crate::algorithm::fair::{FairCall, FairReply};
use crate::algorithm::rwlock::{RwCall, RwMode, RwReply};
use crate::error::Result;
use crate::store::Store;

/// Which lock a hold belongs to, and its grant id.
#[derive(Clone)]
pub(crate) enum Held {
    Fair(Arc<FairShared>, Arc<str>),
    Rw(Arc<RwShared>, Arc<str>, RwMode),
}

impl Held {
    fn store(&self) -> &Store {
        match self {
            Held::Fair(shared, _) => &shared.store,
            Held::Rw(shared, _, _) => &shared.store,
        }
    }

    fn options(&self) -> &LockOptions {
        match self {
            Held::Fair(shared, _) => &shared.options,
            Held::Rw(shared, _, _) => &shared.options,
        }
    }

    /// Moves the lease's end to `ttl` from now; false if the hold is gone.
    async fn extend(&self, fence: u64, ttl: Duration) -> Result<bool> {
        let ttl_us = ttl.as_micros() as u64;
        Ok(match self {
            Held::Fair(shared, id) => {
                let call = FairCall::Extend { id, fence, ttl_us };
                shared.store.fair_lock(&shared.keys, call, None).await? == FairReply::Done(true)
            }
            Held::Rw(shared, id, mode) => {
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
            Held::Fair(shared, id) => {
                let call = FairCall::Release { id, fence };
                shared.store.fair_lock(&shared.keys, call, None).await? == FairReply::Done(true)
            }
            Held::Rw(shared, id, mode) => {
                let call = RwCall::Release {
                    id,
                    mode: *mode,
                    fence,
                };
                shared.store.rw_lock(&shared.keys, call, None).await? == RwReply::Done(true)
            }
        })
    }

    /// Leaves the queue (fair lock) or removes the waiting mark (writer); false if there was none.
    async fn withdraw(&self) -> Result<bool> {
        Ok(match self {
            Held::Fair(shared, id) => {
                let call = FairCall::Withdraw { id };
                shared.store.fair_lock(&shared.keys, call, None).await? == FairReply::Done(true)
            }
            Held::Rw(shared, id, _) => {
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
            Held::Fair(shared, id) => {
                store
                    .locks()
                    .fair_lock(&shared.keys, FairCall::Release { id, fence }, None);
            }
            Held::Rw(shared, id, mode) => {
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

/// A waiter's place in a queue (fair lock) or its waiting mark (writer). [`Waiting::settle`] removes it
/// unless the wait was granted; if the waiting future is dropped first, it is removed in the background,
/// so those behind it need not wait for it to lapse.
pub(crate) struct Waiting {
    held: Option<Held>,
}

impl Waiting {
    /// A place that needs removing if the wait fails (`None`: nothing to remove).
    pub(crate) fn new(held: Option<Held>) -> Self {
        Waiting { held }
    }

    /// Ends the wait: on failure the place is removed (best effort) before the error is returned.
    pub(crate) async fn settle<T>(mut self, outcome: Result<T>) -> Result<T> {
        if let (Err(_), Some(held)) = (&outcome, self.held.take()) {
            let _ = held.withdraw().await;
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
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = held.withdraw().await;
            });
        }
    }
}

/// A held fair lock, or a read or write hold of a read-write lock. Release it with
/// [`release`](Self::release); dropping it releases in the background.
#[must_use = "dropping the guard releases the hold"]
pub struct LeaseGuard {
    held: Held,
    fence: u64,
    hold: Hold,
    released: bool,
}

impl std::fmt::Debug for LeaseGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseGuard")
            .field("fencing_token", &self.fence)
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl LeaseGuard {
    /// A guard for a grant whose request was sent at `sent`; starts its watchdog.
    pub(crate) fn start(held: Held, fence: u64, sent: Instant) -> Self {
        let renewing = held.clone();
        let renew: super::watchdog::Renew = Arc::new(move || {
            let held = renewing.clone();
            Box::pin(async move { held.extend(fence, held.options().ttl).await })
        });
        let options = held.options();
        let hold = Hold::start(sent, options.ttl, options.auto_renew, renew);
        LeaseGuard {
            held,
            fence,
            hold,
            released: false,
        }
    }

    /// The fencing token of this grant: higher than every earlier grant of the same lock (readers and
    /// writers of a read-write lock draw from one counter).
    pub fn fencing_token(&self) -> u64 {
        self.fence
    }

    /// True once the hold is known lost (renewal found it gone, or the lease ran out).
    pub fn is_lost(&self) -> bool {
        self.hold.lost().is_lost()
    }

    /// Resolves as soon as the hold is known lost.
    pub async fn lost(&self) {
        self.hold.lost().wait().await
    }

    /// A clonable handle on the lost signal, for the tasks doing the protected work.
    pub fn lost_signal(&self) -> LostSignal {
        self.hold.lost().clone()
    }

    /// Moves the end of the lease to `ttl` from now; `false` (and the lost signal) if the hold is gone.
    /// Never re-takes it.
    pub async fn extend(&self, ttl: Duration) -> Result<bool> {
        check_lease(ttl)?;
        self.hold.owned_here()?;
        if self.is_lost() {
            // Signalled lost: never extended again, even if the server's lease has not quite ended.
            return Ok(false);
        }
        let sent = Instant::now();
        let held = self.held.extend(self.fence, ttl).await?;
        self.hold.extended(held, sent, ttl);
        Ok(held)
    }

    /// Stops the watchdog, then gives the hold back; `false` if it had been lost before.
    pub async fn release(mut self) -> Result<bool> {
        self.try_release().await
    }

    /// [`release`](Self::release) that keeps the guard when the release fails on the way (the store
    /// was unreachable or timed out): the hold is still this guard's, its watchdog runs again, and the
    /// caller can retry. After a successful release, further calls answer `false`.
    pub async fn try_release(&mut self) -> Result<bool> {
        let release = self.held.release(self.fence);
        self.hold
            .give_back(&mut self.released, false, |_| false, release)
            .await
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if self.released || self.hold.owned_here().is_err() {
            return;
        }
        let (held, fence) = (self.held.clone(), self.fence);
        let release = async move {
            let _ = held.release(fence).await;
        };
        if release_in_background(self.hold.take_watchdog(), release).is_err() {
            self.held.release_in_memory(self.fence);
        }
    }
}
