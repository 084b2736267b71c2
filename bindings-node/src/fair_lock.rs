//! `FairLock` for Node: the native handle behind `FairLock` in `lib/fair-lock.js`. Each acquire gives
//! a `NativeGuard`; the queue, its order and the tokens are the core's.

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::errors::Result;
use crate::lock_handle::{ask, lock_handle};
use crate::runtime::promise_of;
use crate::stores::StoreChoice;

/// A fair lock as it stands.
#[napi(object)]
pub struct FairLockState {
    /// Someone holds the lock.
    pub held: bool,
    /// Milliseconds the holder's lease still runs (0 when free).
    pub remaining_ms: f64,
    /// The holder's fencing token (0 when free).
    pub holder_fence: f64,
    /// The last fencing token minted.
    pub last_fence: f64,
    /// Waiters in the queue.
    pub waiting: f64,
}

lock_handle! {
    #[doc = "The native fair lock handle behind `FairLock` in `lib/fair-lock.js`."]
    NativeFairLock(ratelock::FairLock) by connect_fair_lock() = |store: StoreChoice, name, options| ratelock::FairLock::new(&store.store()?, name, options);
    acquires try_acquire / acquire;
}

#[napi]
impl NativeFairLock {
    /// The lock as it stands: holder, lease, last token, queue length.
    #[napi(ts_return_type = "Promise<FairLockState>")]
    pub fn state<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, FairLockState>> {
        let lock = self.inner.clone();
        promise_of(env, async move {
            let state = ask(&lock, |lock| async move { lock.state().await }).await?;
            Ok(FairLockState {
                held: state.held,
                remaining_ms: crate::convert::to_millis(state.remaining),
                holder_fence: state.holder_fence as f64,
                last_fence: state.last_fence as f64,
                waiting: state.waiting as f64,
            })
        })
    }

    /// Whether anyone holds the lock now.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_locked<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, bool>> {
        let lock = self.inner.clone();
        promise_of(env, async move {
            ask(&lock, |lock| async move { lock.is_locked().await }).await
        })
    }
}
