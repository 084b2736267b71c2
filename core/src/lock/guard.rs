//! `LockGuard`: proof of a grant, with its fencing token, the lost signal, manual extension and
//! release. Dropping a held guard stops its watchdog and releases the lock in the background.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::lost::LostSignal;
use super::watchdog::{self, LeaseEnd};
use super::Shared;
use crate::algorithm::lease::{Extended, Released};
use crate::error::Result;
use crate::store::Store;

/// A held lock. Release it with [`release`](Self::release); dropping it releases in the background.
#[must_use = "dropping the guard releases the lock"]
pub struct LockGuard {
    shared: Arc<Shared>,
    fence: u64,
    holds: u64,
    lease_end: LeaseEnd,
    lost_sender: Arc<tokio::sync::watch::Sender<bool>>,
    lost: LostSignal,
    watchdog: Option<JoinHandle<()>>,
    released: bool,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("fencing_token", &self.fence)
            .field("holds", &self.holds)
            .field("lost", &self.lost.is_lost())
            .finish()
    }
}

impl LockGuard {
    pub(crate) fn start(shared: Arc<Shared>, fence: u64, holds: u64) -> Self {
        let lease_end: LeaseEnd = Arc::new(Mutex::new(Instant::now() + shared.options.ttl));
        let (sender, lost) = LostSignal::new();
        let sender = Arc::new(sender);
        let watchdog = tokio::runtime::Handle::try_current().ok().map(|runtime| {
            let (shared, lease_end, sender) = (shared.clone(), lease_end.clone(), sender.clone());
            runtime.spawn(watchdog::run(shared, lease_end, sender))
        });
        LockGuard {
            shared,
            fence,
            holds,
            lease_end,
            lost_sender: sender,
            lost,
            watchdog,
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
        self.lost.is_lost()
    }

    /// Resolves as soon as the lock is known lost.
    pub async fn lost(&self) {
        self.lost.wait().await
    }

    /// A clonable handle on the lost signal, for the tasks doing the protected work.
    pub fn lost_signal(&self) -> LostSignal {
        self.lost.clone()
    }

    /// Moves the end of the lease to `ttl` from now. Never re-acquires: `Expired` or `HeldByOther`
    /// mean the lock is lost, and the lost signal fires.
    pub async fn extend(&self, ttl: Duration) -> Result<Extended> {
        let sent = Instant::now();
        let outcome = self
            .shared
            .store
            .lock_extend(&self.shared.keys, &self.shared.owner, ttl)
            .await?;
        if outcome == Extended::Extended {
            *self.lease_end.lock() = sent + ttl;
        } else {
            self.lost_sender.send_replace(true);
        }
        Ok(outcome)
    }

    /// Stops the watchdog, then gives back this hold. `NotHeld` or `HeldByOther` mean the lock had been
    /// lost before; nothing was changed then.
    pub async fn release(mut self) -> Result<Released> {
        self.released = true;
        stop(self.watchdog.take()).await;
        self.shared
            .store
            .lock_release(&self.shared.keys, &self.shared.owner)
            .await
    }
}

/// Aborts the watchdog and waits until it has stopped, so no renewal can follow.
async fn stop(watchdog: Option<JoinHandle<()>>) {
    if let Some(task) = watchdog {
        task.abort();
        let _ = task.await;
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let watchdog = self.watchdog.take();
        let shared = self.shared.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    stop(watchdog).await;
                    let _ = shared.store.lock_release(&shared.keys, &shared.owner).await;
                });
            }
            Err(_) => {
                if let Some(task) = watchdog {
                    task.abort();
                }
                // Without a runtime only the memory store can be released (synchronously).
                #[allow(irrefutable_let_patterns)]
                if let Store::Memory(store) = &shared.store {
                    store.locks().release(&shared.keys, &shared.owner);
                }
            }
        }
    }
}
