//! `Semaphore` for Node: the native handle behind `Semaphore` in `lib/semaphore.js`. Each acquire
//! gives a `NativeGuard` holding one permit.

use napi_derive::napi;

use crate::lock_handle::{ask, lock_handle};

lock_handle! {
    #[doc = "The native semaphore handle behind `Semaphore` in `lib/semaphore.js`."]
    class NativeSemaphore(ratelock::Semaphore);
    #[doc = "Opens (or reuses) the store and makes a semaphore of `permits` permits."]
    fn connect_semaphore(permits: f64 => crate::convert::count("permits", permits)?) =
        |store, name, options| ratelock::Semaphore::new(store, name, permits, options);
    #[doc = "Takes a permit if one is free; `null` otherwise."]
    try_acquire;
    #[doc = "Waits up to `timeoutMs` (none: no limit) for a permit; rejects with WAIT_TIMEOUT."]
    acquire;
}

#[napi]
impl NativeSemaphore {
    /// Permits in use now.
    #[napi]
    pub async fn in_use(&self) -> napi::Result<f64> {
        let in_use = ask(&self.inner, |semaphore| async move { semaphore.in_use().await });
        Ok(in_use.await? as f64)
    }
}
