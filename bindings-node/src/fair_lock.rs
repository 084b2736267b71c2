//! `FairLock` for Node: the native handle behind `FairLock` in `lib/fair-lock.js`. Each acquire gives
//! a `NativeGuard`; the queue, its order and the tokens are the core's.

use napi_derive::napi;

use crate::lock_handle::{ask, lock_handle};
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
    #[napi]
    pub async fn state(&self) -> napi::Result<FairLockState> {
        let state = ask(&self.inner, |lock| async move { lock.state().await }).await?;
        Ok(FairLockState {
            held: state.held,
            remaining_ms: crate::convert::to_millis(state.remaining),
            holder_fence: state.holder_fence as f64,
            last_fence: state.last_fence as f64,
            waiting: state.waiting as f64,
        })
    }

    /// Whether anyone holds the lock now.
    #[napi]
    pub async fn is_locked(&self) -> napi::Result<bool> {
        ask(&self.inner, |lock| async move { lock.is_locked().await }).await
    }
}
