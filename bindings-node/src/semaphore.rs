//! `Semaphore` for Node: the native handle behind `Semaphore` in `lib/semaphore.js`. Each acquire
//! gives a `NativeGuard` holding one permit.

use napi_derive::napi;

use crate::lock_handle::{ask, lock_handle};
use crate::stores::StoreChoice;

lock_handle! {
    #[doc = "The native semaphore handle behind `Semaphore` in `lib/semaphore.js`."]
    NativeSemaphore(ratelock::Semaphore)
        by connect_semaphore(permits: f64 => crate::convert::count("permits", permits)?)
        = |store: StoreChoice, name, options| ratelock::Semaphore::new(&store.store()?, name, permits, options);
    acquires try_acquire / acquire;
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
