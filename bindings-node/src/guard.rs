//! `NativeGuard`: the one native class of a hold, whatever the lock kind (a lock grant, a semaphore
//! permit, a fair or read-write hold). The kinds' holds have the same methods and differ only in data
//! (what they are called, whether they have a fencing token), so one class over the erased core guard
//! (`any_guard.rs`) serves them all, rather than a macro stamping out the same class three times.
//!
//! Outcomes cross as the core decides them: `extend` and `release` resolve when the hold was kept or
//! given back and reject with the core's `LOCK_LOST` (`Extended::or_lost`, `Released::or_lost`) when it
//! was lost, and with `LOCK_NOT_OWNED` once it was given back. A release that fails on the transport
//! keeps the hold (and its watchdog), so the caller can retry.

use std::time::Duration;

use napi::bindgen_prelude::Function;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use tokio::sync::{watch, Mutex};

use crate::any_guard::{AnyGuard, FencedLease};
use crate::convert;
use crate::errors::to_js;
use crate::runtime::guarded;

/// One hold of a lock, a semaphore, a fair lock or a read-write lock.
#[napi]
pub struct NativeGuard {
    /// The core guard while held; `None` once given back. Extensions and releases take turns on it.
    guard: Mutex<Option<Box<dyn AnyGuard>>>,
    what: &'static str,
    fencing_token: Option<u64>,
    /// What `extend()` without a ttl extends by: the lock's lease length.
    default_ttl: Duration,
    lost: ratelock::LostSignal,
    released: watch::Sender<bool>,
}

impl NativeGuard {
    /// The native hold of `guard`, extended by `default_ttl` unless told otherwise.
    pub(crate) fn new<L: FencedLease>(guard: ratelock::Guard<L>, default_ttl: Duration) -> Self {
        NativeGuard {
            what: guard.what(),
            fencing_token: L::fencing_token(&guard),
            default_ttl,
            lost: guard.lost_signal(),
            released: watch::channel(false).0,
            guard: Mutex::new(Some(Box::new(guard))),
        }
    }

    /// The error of a call on a hold given back already.
    fn given_back(&self) -> ratelock::Error {
        ratelock::Error::LockNotOwned(format!("this {} was already released", self.what))
    }

    /// Waits for the hold to be lost (`true`), or to be given back (`false`).
    fn lost_or_released(&self) -> impl std::future::Future<Output = bool> + Send + 'static {
        let lost = self.lost.clone();
        let mut released = self.released.subscribe();
        async move {
            tokio::select! {
                () = lost.wait() => true,
                _ = released.wait_for(|given_back| *given_back) => lost.is_lost(),
            }
        }
    }
}

#[napi]
impl NativeGuard {
    /// The fencing token of this hold (`null` for a semaphore permit).
    #[napi(getter)]
    pub fn fencing_token(&self) -> Option<f64> {
        self.fencing_token.map(|token| token as f64)
    }

    /// What this hold is, for messages: "lock", "permit", "fair lock", "read hold" or "write hold".
    #[napi(getter)]
    pub fn what(&self) -> &'static str {
        self.what
    }

    /// True once the hold is known lost.
    #[napi]
    pub fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// Why the hold was lost: "expired" (its lease ran out without a renewal), "taken" (the store said
    /// it is gone or held by another) or "failed" (a renewal was refused for good: see `lostError`);
    /// `null` while it is not lost.
    #[napi(getter)]
    pub fn lost_reason(&self) -> Option<&'static str> {
        self.lost.reason().map(|reason| reason.kind())
    }

    /// Why the hold was lost, in the core's words (`null` while it is not lost).
    #[napi(getter)]
    pub fn lost_description(&self) -> Option<String> {
        self.lost.reason().map(|reason| reason.to_string())
    }

    /// When `lostReason` is "failed": the refusal as the addon throws errors (`[ERR_RATELOCK_...]
    /// message`, typed by the JavaScript side); else `null`.
    #[napi(getter)]
    pub fn lost_error(&self) -> Option<String> {
        match self.lost.reason()? {
            ratelock::LostReason::Failed(error) => Some(crate::errors::to_js(error).reason),
            _ => None,
        }
    }

    /// Resolves `true` when the hold is lost, `false` when it is given back first (the pending promise
    /// keeps the process alive meanwhile).
    #[napi]
    pub async fn wait_lost(&self) -> bool {
        self.lost_or_released().await
    }

    /// Calls `callback()` once if the hold is lost before it is given back. Unlike `waitLost`, the watch
    /// does not keep the process alive.
    #[napi]
    pub fn on_lost(&self, callback: Function<(), ()>) -> napi::Result<()> {
        let notify = callback
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .build()?;
        let watch = self.lost_or_released();
        napi::bindgen_prelude::spawn(async move {
            if watch.await {
                notify.call((), ThreadsafeFunctionCallMode::NonBlocking);
            }
        });
        Ok(())
    }

    /// Moves the end of the lease to `ttlMs` from now (none: the lock's lease length). Never re-takes
    /// a lost hold: rejects with LOCK_LOST then.
    #[napi]
    pub async fn extend(&self, ttl_ms: Option<f64>) -> napi::Result<()> {
        guarded(async {
            let slot = self.guard.lock().await;
            let guard = slot.as_ref().ok_or_else(|| to_js(self.given_back()))?;
            let ttl = ttl_ms.map_or(Ok(self.default_ttl), |ms| convert::millis("ttlMs", ms))?;
            let answer = guard.extend(ttl).await;
            answer
                .and_then(|extended| extended.or_lost(self.what))
                .map_err(to_js)
        })
        .await
    }

    /// Gives the hold back: resolves "released", or "still_held" when a re-entrant lock keeps other
    /// holds; rejects with LOCK_LOST if it had been lost meanwhile (`lostReason` then says how). A
    /// release that fails on the transport keeps the hold, so it can be called again.
    #[napi]
    pub async fn release(&self) -> napi::Result<&'static str> {
        guarded(async {
            let mut slot = self.guard.lock().await;
            let guard = slot.as_mut().ok_or_else(|| to_js(self.given_back()))?;
            let answer = guard.try_release().await;
            if !matches!(&answer, Err(err) if err.is_store_failure()) {
                *slot = None;
                let _ = self.released.send(true);
            }
            answer
                .and_then(|released| released.or_lost(self.what))
                .map(|released| released.as_str())
                .map_err(to_js)
        })
        .await
    }
}
