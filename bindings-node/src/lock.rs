//! `DistributedLock` for Node: the native handle (one owner token) behind `DistributedLock` in
//! `lib/lock.js`. Each acquire gives a `NativeGuard`; `lib/lock.js` keeps this handle's holds.

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::errors::Result;
use crate::lock_handle::{ask, lock_handle};
use crate::runtime::promise_of;
use crate::stores::StoreChoice;

lock_handle! {
    #[doc = "The native lock handle behind `DistributedLock` in `lib/lock.js`, with its own owner token."]
    NativeLock(ratelock::DistributedLock) by connect_lock() = |store: StoreChoice, name, options| ratelock::DistributedLock::new(store.lock_store()?, name, options);
    acquires try_acquire / acquire;
}

#[napi]
impl NativeLock {
    /// Whether anyone holds the lock now.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_locked<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, bool>> {
        let lock = self.inner.clone();
        promise_of(env, async move {
            ask(&lock, |lock| async move { lock.is_locked().await }).await
        })
    }

    /// Milliseconds left on the current lease, or `null` when free.
    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn remaining_ttl_ms<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Option<f64>>> {
        let lock = self.inner.clone();
        promise_of(env, async move {
            let remaining = ask(&lock, |lock| async move { lock.remaining_ttl().await }).await?;
            Ok(remaining.map(crate::convert::to_millis))
        })
    }

    /// Deletes the lease whoever holds it; `true` if it was held.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn force_release<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, bool>> {
        let lock = self.inner.clone();
        promise_of(env, async move {
            ask(&lock, |lock| async move { lock.force_release().await }).await
        })
    }

    /// This handle's owner token.
    #[napi(getter)]
    pub fn owner_token(&self) -> String {
        self.inner.owner_token()
    }
}
