//! What every native hold (lock, permit, fair or read-write hold) does the same way, over the core's one
//! `Guard`: keeps the guard in a slot shared with the call in flight (calls on one hold run one after
//! another), extends it, gives it back (a release that fails on the transport keeps it, so the caller
//! can retry), and on drop lets the core release it in the background. The `#[pyclass]` types in
//! `lock.rs`, `semaphore.rs` and `lease_guard.rs` only declare the methods and delegate here.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use ratelock::{Guard, Lease};
use tokio::sync::Mutex;

use crate::runtime::runtime;

/// One hold: its guard while held (`None` once given back) and its lost signal.
pub(crate) struct GuardSlot<L: Lease> {
    guard: Arc<Mutex<Option<Guard<L>>>>,
    lost: ratelock::LostSignal,
}

impl<L: Lease> GuardSlot<L> {
    pub(crate) fn new(guard: Guard<L>) -> Self {
        GuardSlot {
            lost: guard.lost_signal(),
            guard: Arc::new(Mutex::new(Some(guard))),
        }
    }

    /// The hold's lost signal.
    pub(crate) fn lost(&self) -> &ratelock::LostSignal {
        &self.lost
    }

    /// Moves the lease's end to `ttl` from now; `None` once the hold was given back.
    pub(crate) fn extending(
        &self,
        ttl: Duration,
    ) -> impl Future<Output = ratelock::Result<Option<ratelock::Extended>>> + Send + 'static {
        let slot = self.guard.clone();
        async move {
            match slot.lock().await.as_ref() {
                Some(guard) => guard.extend(ttl).await.map(Some),
                None => Ok(None),
            }
        }
    }

    /// Gives the hold back; `None` once it was given back. A release that fails on the transport keeps
    /// the guard in the slot; any other answer empties it.
    pub(crate) fn releasing(
        &self,
    ) -> impl Future<Output = ratelock::Result<Option<ratelock::Released>>> + Send + 'static {
        let slot = self.guard.clone();
        async move {
            let mut slot = slot.lock().await;
            let Some(guard) = slot.as_mut() else {
                return Ok(None);
            };
            let outcome = guard.try_release().await;
            if !matches!(&outcome, Err(err) if err.is_store_failure()) {
                slot.take();
            }
            outcome.map(Some)
        }
    }
}

impl<L: Lease> Drop for GuardSlot<L> {
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
