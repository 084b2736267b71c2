//! What every native hold (lock, permit, fair or read-write hold) does the same way, over the core's one
//! `Guard`: keeps the guard in a slot shared with the call in flight (calls on one hold run one after
//! another), extends it, gives it back (a release that fails on the transport keeps it, so the caller
//! can retry), and on drop lets the core release it in the background. Outcomes leave as results: the
//! core's `or_lost` says when a hold was lost (`LockLost`), and a hold given back answers `LockNotOwned`.
//! The lease kind is erased here, so one Python class (`guards::PyGuard`) serves every kind.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use ratelock::{Extended, Guard, Lease, Released};
use tokio::sync::Mutex;

use crate::runtime::runtime;

/// A core guard of any lease kind, as the slot drives it.
trait AnyGuard: Send + Sync {
    fn extend(&self, ttl: Duration) -> BoxFuture<'_, ratelock::Result<Extended>>;
    fn try_release(&mut self) -> BoxFuture<'_, ratelock::Result<Released>>;
    fn is_owned_here(&self) -> bool;
}

impl<L: Lease> AnyGuard for Guard<L> {
    fn extend(&self, ttl: Duration) -> BoxFuture<'_, ratelock::Result<Extended>> {
        Box::pin(Guard::extend(self, ttl))
    }

    fn try_release(&mut self) -> BoxFuture<'_, ratelock::Result<Released>> {
        Box::pin(Guard::try_release(self))
    }

    fn is_owned_here(&self) -> bool {
        Guard::is_owned_here(self)
    }
}

/// One hold: its guard while held (`None` once given back), its lost signal and what it is.
pub(crate) struct GuardSlot {
    guard: Arc<Mutex<Option<Box<dyn AnyGuard>>>>,
    lost: ratelock::LostSignal,
    released: Arc<AtomicBool>,
    what: &'static str,
}

impl GuardSlot {
    pub(crate) fn new<L: Lease>(guard: Guard<L>) -> Self {
        GuardSlot {
            lost: guard.lost_signal(),
            released: Arc::new(AtomicBool::new(false)),
            what: guard.what(),
            guard: Arc::new(Mutex::new(Some(Box::new(guard)))),
        }
    }

    /// What the hold is, in messages: `"lock"`, `"permit"`, `"fair lock"`, `"read hold"`...
    pub(crate) fn what(&self) -> &'static str {
        self.what
    }

    /// True once the hold is known lost.
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// Why the hold was lost (`None` while it is not).
    pub(crate) fn lost_reason(&self) -> Option<ratelock::LostReason> {
        self.lost.reason()
    }

    /// True once the hold was given back.
    pub(crate) fn is_released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    /// Waits until the hold is lost or `wait` passes, and answers whether it is lost; at once for a
    /// hold given back, which can no longer be lost.
    pub(crate) fn waiting_lost(
        &self,
        wait: Duration,
    ) -> impl Future<Output = ratelock::Result<bool>> + Send + 'static {
        let (lost, released) = (self.lost.clone(), self.released.clone());
        async move {
            if !released.load(Ordering::Acquire) {
                let _ = tokio::time::timeout(wait, lost.wait()).await;
            }
            Ok(lost.is_lost())
        }
    }

    /// Moves the lease's end to `ttl` from now: `LockLost` if the hold is gone (it is never taken
    /// again), `LockNotOwned` once it was given back.
    pub(crate) fn extending(
        &self,
        ttl: Duration,
    ) -> impl Future<Output = ratelock::Result<()>> + Send + 'static {
        let (slot, what) = (self.guard.clone(), self.what);
        async move {
            match slot.lock().await.as_ref() {
                Some(guard) => guard.extend(ttl).await?.or_lost(what),
                None => Err(released_already(what)),
            }
        }
    }

    /// Gives the hold back: `LockLost` if it had been lost, `LockNotOwned` once it was given back. A
    /// release that fails on the transport keeps the guard in the slot; any other answer empties it.
    pub(crate) fn releasing(&self) -> impl Future<Output = ratelock::Result<&'static str>> + Send + 'static {
        let (slot, released, what) = (self.guard.clone(), self.released.clone(), self.what);
        async move {
            let mut slot = slot.lock().await;
            let Some(guard) = slot.as_mut() else {
                return Err(released_already(what));
            };
            let outcome = guard.try_release().await;
            if !matches!(&outcome, Err(err) if err.is_store_failure()) {
                slot.take();
                released.store(true, Ordering::Release);
            }
            outcome?.or_lost(what).map(|released| released.as_str())
        }
    }
}

/// The answer to extending or releasing a hold that was given back.
fn released_already(what: &str) -> ratelock::Error {
    ratelock::Error::LockNotOwned(format!("this {what} was released already"))
}

impl Drop for GuardSlot {
    /// The core guard releases on drop in the background, which needs the runtime's context (never in
    /// a forked child: the hold is the parent's, and the child's runtime is not started for it).
    fn drop(&mut self) {
        if let Ok(mut slot) = self.guard.try_lock() {
            if let Some(guard) = slot.take() {
                let _context = guard.is_owned_here().then(|| runtime().enter());
                drop(guard);
            }
        }
    }
}
