//! What every native hold (lock, permit, fair or read-write hold) does the same way, over the core's one
//! `Guard`: keeps the guard in a slot, watches for its loss, extends it and gives it back (a release
//! that fails on the transport puts it back, so the caller can retry). The `#[napi]` classes in
//! `lock.rs`, `semaphore.rs` and `lease_guard.rs` only declare the methods and delegate here.

use std::sync::{Mutex, MutexGuard};

use napi::bindgen_prelude::Function;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use ratelock::{Guard, Lease};
use tokio::sync::watch;

use crate::convert;
use crate::errors::to_js;
use crate::runtime::guarded;

/// One hold: its guard while held, its lost signal, and whether it was given back.
pub(crate) struct GuardSlot<L: Lease> {
    guard: Mutex<Option<Guard<L>>>,
    lost: ratelock::LostSignal,
    released: watch::Sender<bool>,
}

impl<L: Lease> GuardSlot<L> {
    pub(crate) fn new(guard: Guard<L>) -> Self {
        GuardSlot {
            lost: guard.lost_signal(),
            released: watch::channel(false).0,
            guard: Mutex::new(Some(guard)),
        }
    }

    fn slot(&self) -> MutexGuard<'_, Option<Guard<L>>> {
        self.guard.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// True once the hold is known lost.
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// Resolves `true` when the hold is lost, `false` when it is given back first.
    pub(crate) async fn wait_lost(&self) -> bool {
        lost_or_released(self.lost.clone(), self.released.subscribe()).await
    }

    /// Calls `callback()` once if the hold is lost before it is given back (the watch does not keep the
    /// process alive).
    pub(crate) fn on_lost(&self, callback: Function<(), ()>) -> napi::Result<()> {
        let notify = callback
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .build()?;
        let watch = lost_or_released(self.lost.clone(), self.released.subscribe());
        napi::bindgen_prelude::spawn(async move {
            if watch.await {
                notify.call((), ThreadsafeFunctionCallMode::NonBlocking);
            }
        });
        Ok(())
    }

    /// Moves the lease's end to `ttlMs` from now; `None` when the hold was given back already.
    pub(crate) async fn extend(&self, ttl_ms: f64) -> napi::Result<Option<ratelock::Extended>> {
        let ttl = convert::millis("ttlMs", ttl_ms)?;
        let Some(guard) = self.slot().take() else {
            return Ok(None);
        };
        let outcome = guarded(async { Ok(guard.extend(ttl).await) }).await;
        *self.slot() = Some(guard);
        outcome?.map(Some).map_err(to_js)
    }

    /// Gives the hold back; `None` when it was given back already. A release that fails on the
    /// transport puts the guard back; any other answer ends the hold and its lost watcher.
    pub(crate) async fn release(&self) -> napi::Result<Option<ratelock::Released>> {
        let Some(mut guard) = self.slot().take() else {
            let _ = self.released.send(true);
            return Ok(None);
        };
        let (guard, outcome) = guarded(async move {
            let outcome = guard.try_release().await;
            Ok((guard, outcome))
        })
        .await?;
        if matches!(&outcome, Err(err) if err.is_store_failure()) {
            *self.slot() = Some(guard);
        } else {
            let _ = self.released.send(true);
        }
        outcome.map(Some).map_err(to_js)
    }
}

/// Waits for `lost`, or for the hold to be given back (`false`).
async fn lost_or_released(lost: ratelock::LostSignal, mut released: watch::Receiver<bool>) -> bool {
    tokio::select! {
        () = lost.wait() => true,
        _ = released.wait_for(|given_back| *given_back) => lost.is_lost(),
    }
}
