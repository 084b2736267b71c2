//! `LockGuard`: proof of a grant, with its fencing token, the lost signal, manual extension and
//! release. Dropping a held guard stops its watchdog and releases the lock in the background.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::hold::{release_in_background, Hold};
use super::lost::LostSignal;
use super::{check_lease, Shared};
use crate::algorithm::lease::{Extended, Released};
use crate::error::Result;
use crate::store::Store;

/// A held lock. Release it with [`release`](Self::release); dropping it releases in the background.
#[must_use = "dropping the guard releases the lock"]
pub struct LockGuard {
    shared: Arc<Shared>,
    fence: u64,
    holds: u64,
    hold: Hold,
    released: bool,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("fencing_token", &self.fence)
            .field("holds", &self.holds)
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl LockGuard {
    pub(crate) fn start(shared: Arc<Shared>, fence: u64, holds: u64, sent: Instant) -> Self {
        let renewing = shared.clone();
        let renew: super::watchdog::Renew = Arc::new(move || {
            let shared = renewing.clone();
            Box::pin(async move {
                let ttl = shared.options.ttl;
                let outcome = shared
                    .store
                    .lock_extend(&shared.keys, &shared.owner, fence, ttl)
                    .await?;
                Ok(outcome == Extended::Extended)
            })
        });
        let hold = Hold::start(sent, shared.options.ttl, shared.options.auto_renew, renew);
        LockGuard {
            shared,
            fence,
            holds,
            hold,
            released: false,
        }
    }

    /// The fencing token of this grant: strictly higher than any earlier grant of the same lock.
    pub fn fencing_token(&self) -> u64 {
        self.fence
    }

    /// How many holds this handle had right after this acquire (above 1 only with re-entry).
    pub fn holds(&self) -> u64 {
        self.holds
    }

    /// True once the lock is known lost (renewal found it gone or taken, or the lease ran out).
    pub fn is_lost(&self) -> bool {
        self.hold.lost().is_lost()
    }

    /// Resolves as soon as the lock is known lost.
    pub async fn lost(&self) {
        self.hold.lost().wait().await
    }

    /// A clonable handle on the lost signal, for the tasks doing the protected work.
    pub fn lost_signal(&self) -> LostSignal {
        self.hold.lost().clone()
    }

    /// Moves the end of the lease to `ttl` from now. Never re-acquires: `Expired` or `HeldByOther`
    /// mean the lock is lost, and the lost signal fires.
    pub async fn extend(&self, ttl: Duration) -> Result<Extended> {
        check_lease(ttl)?;
        self.hold.owned_here()?;
        let shared = &self.shared;
        if self.hold.lost().is_lost() {
            // Signalled lost: never extended again, even if the server's lease has not quite ended.
            // The lock's state tells whether someone else holds it now.
            let state = shared.store.lock_state(&shared.keys).await?;
            let taken = state.held && state.holder_fence != self.fence;
            return Ok(if taken {
                Extended::HeldByOther
            } else {
                Extended::Expired
            });
        }
        let sent = Instant::now();
        let outcome = shared
            .store
            .lock_extend(&shared.keys, &shared.owner, self.fence, ttl)
            .await?;
        self.hold.extended(outcome == Extended::Extended, sent, ttl);
        Ok(outcome)
    }

    /// Stops the watchdog, then gives back this hold. `NotHeld` or `HeldByOther` mean the lock had been
    /// lost before; nothing was changed then. If this future is dropped before it finishes, the guard's
    /// drop releases in the background.
    pub async fn release(mut self) -> Result<Released> {
        self.try_release().await
    }

    /// [`release`](Self::release) that keeps the guard when the release fails on the way (the store
    /// was unreachable or timed out): the hold is still this guard's, its watchdog runs again, and the
    /// caller can retry. After a successful release, further calls answer `NotHeld`.
    pub async fn try_release(&mut self) -> Result<Released> {
        let shared = &self.shared;
        let release = shared.store.lock_release(&shared.keys, &shared.owner, self.fence);
        self.hold
            .give_back(&mut self.released, Released::NotHeld, lost_release, release)
            .await
    }
}

/// The answer of a release by a hold already signalled lost: it gave nothing back that was still its
/// own (a lease that had not quite ended on the server counts as lost, as the holder was told).
fn lost_release(released: Released) -> Released {
    match released {
        Released::HeldByOther => Released::HeldByOther,
        _ => Released::NotHeld,
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.released || self.hold.owned_here().is_err() {
            return;
        }
        let (shared, fence) = (self.shared.clone(), self.fence);
        let release = async move {
            let _ = shared
                .store
                .lock_release(&shared.keys, &shared.owner, fence)
                .await;
        };
        if release_in_background(self.hold.take_watchdog(), release).is_err() {
            // No runtime: only the memory store can be released, synchronously.
            #[allow(irrefutable_let_patterns)]
            if let Store::Memory(store) = &self.shared.store {
                store
                    .locks()
                    .release(&self.shared.keys, &self.shared.owner, self.fence);
            }
        }
    }
}
