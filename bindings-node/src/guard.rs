//! `NativeGuard`: the one native class of a hold, whatever the lock kind (a lock grant, a semaphore
//! permit, a fair or read-write hold). The kinds' holds have the same methods and differ only in data
//! (what they are called, whether they have a fencing token), so one class over the core's kind-erased
//! `AnyGuard` serves them all. Every rule (calls take turns, a release that fails on the transport keeps
//! the hold, `LOCK_LOST` and `LOCK_NOT_OWNED`) is the core's; this file only converts.

use napi::bindgen_prelude::{Function, PromiseRaw};
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::Env;
use napi_derive::napi;

use crate::convert;
use crate::errors::{from_napi, to_js, Failure, Result};
use crate::runtime::{promise_of, spawn};

/// One hold of a lock, a semaphore, a fair lock or a read-write lock.
#[napi]
pub struct NativeGuard {
    guard: ratelock::AnyGuard,
}

impl NativeGuard {
    /// The native hold of `guard`.
    pub(crate) fn new<L: ratelock::Lease>(guard: ratelock::Guard<L>) -> Self {
        NativeGuard {
            guard: ratelock::AnyGuard::new(guard),
        }
    }
}

#[napi]
impl NativeGuard {
    /// The fencing token of this hold (`null` for a semaphore permit).
    #[napi(getter)]
    pub fn fencing_token(&self) -> Option<f64> {
        self.guard.fencing_token().map(|token| token as f64)
    }

    /// What this hold is, for messages: "lock", "permit", "fair lock", "read hold" or "write hold".
    #[napi(getter)]
    pub fn what(&self) -> &'static str {
        self.guard.what()
    }

    /// True once the hold is known lost.
    #[napi]
    pub fn is_lost(&self) -> bool {
        self.guard.is_lost()
    }

    /// Why the hold was lost: "expired" (its lease ran out without a renewal), "taken" (the store said
    /// it is gone or held by another) or "failed" (a renewal was refused for good: see `lostError`);
    /// `null` while it is not lost.
    #[napi(getter)]
    pub fn lost_reason(&self) -> Option<&'static str> {
        self.guard.lost_reason().map(|reason| reason.kind())
    }

    /// Why the hold was lost, in the core's words (`null` while it is not lost).
    #[napi(getter)]
    pub fn lost_description(&self) -> Option<String> {
        self.guard.lost_reason().map(|reason| reason.to_string())
    }

    /// When `lostReason` is "failed": the refusal's code and message (typed by the JavaScript side);
    /// else `null`.
    #[napi(getter)]
    pub fn lost_error(&self) -> Option<Failure> {
        match self.guard.lost_reason()? {
            ratelock::LostReason::Failed(error) => Some(to_js(error).into()),
            _ => None,
        }
    }

    /// Resolves `true` when the hold is lost, `false` when it is given back first (the pending promise
    /// keeps the process alive meanwhile).
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn wait_lost<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, bool>> {
        let watch = self.guard.wait_lost(None);
        promise_of(env, async move { Ok(watch.await) })
    }

    /// Calls `callback()` once if the hold is lost before it is given back. Unlike `waitLost`, the watch
    /// does not keep the process alive.
    #[napi]
    pub fn on_lost(&self, callback: Function<(), ()>) -> Result<()> {
        let notify = callback
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .build()
            .map_err(from_napi)?;
        let watch = self.guard.wait_lost(None);
        spawn(async move {
            if watch.await {
                notify.call((), ThreadsafeFunctionCallMode::NonBlocking);
            }
        })
    }

    /// Moves the end of the lease to `ttlMs` from now (none: the lock's lease length). Never re-takes
    /// a lost hold: rejects with LOCK_LOST then.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn extend<'env>(&self, env: &'env Env, ttl_ms: Option<f64>) -> Result<PromiseRaw<'env, ()>> {
        let guard = self.guard.clone();
        promise_of(env, async move {
            // Checked in the future: a bad argument rejects, as every error does.
            let ttl = ttl_ms.map(|ms| convert::millis("ttlMs", ms)).transpose()?;
            guard.extend(ttl).await.map_err(to_js)
        })
    }

    /// Gives the hold back: resolves "released", or "still_held" when a re-entrant lock keeps other
    /// holds; rejects with LOCK_LOST if it had been lost meanwhile (`lostReason` then says how). A
    /// release that fails on the transport keeps the hold, so it can be called again, but no longer
    /// renews it (if nobody calls again, the lease runs out).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn release<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, &'static str>> {
        let guard = self.guard.clone();
        promise_of(
            env,
            async move { Ok(guard.release().await.map_err(to_js)?.as_str()) },
        )
    }
}
