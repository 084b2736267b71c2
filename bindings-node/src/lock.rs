//! `DistributedLock` for Node: the native handle (one owner token) behind `DistributedLock` in
//! `lib/lock.js`. Each acquire gives a `NativeGuard`; `lib/lock.js` keeps this handle's holds.

use napi_derive::napi;

use crate::lock_handle::{ask, lock_handle};
use crate::stores::StoreChoice;

lock_handle! {
    #[doc = "The native lock handle behind `DistributedLock` in `lib/lock.js`, with its own owner token."]
    NativeLock(ratelock::DistributedLock) by connect_lock() = |store: StoreChoice, name, options| ratelock::DistributedLock::new(store.lock_store()?, name, options);
    acquires try_acquire / acquire;
}

#[napi]
impl NativeLock {
    /// Whether anyone holds the lock now.
    #[napi]
    pub async fn is_locked(&self) -> napi::Result<bool> {
        ask(&self.inner, |lock| async move { lock.is_locked().await }).await
    }

    /// Milliseconds left on the current lease, or `null` when free.
    #[napi]
    pub async fn remaining_ttl_ms(&self) -> napi::Result<Option<f64>> {
        let remaining = ask(&self.inner, |lock| async move { lock.remaining_ttl().await });
        Ok(remaining.await?.map(crate::convert::to_millis))
    }

    /// Deletes the lease whoever holds it; `true` if it was held.
    #[napi]
    pub async fn force_release(&self) -> napi::Result<bool> {
        ask(&self.inner, |lock| async move { lock.force_release().await }).await
    }

    /// This handle's owner token.
    #[napi(getter)]
    pub fn owner_token(&self) -> String {
        self.inner.owner_token().to_owned()
    }
}
