//! `Semaphore` for Node: the native handle behind `Semaphore` in `lib/semaphore.js`. Each acquire
//! gives a `NativeGuard` holding one permit.

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::errors::Result;
use crate::lock_handle::{ask, lock_handle};
use crate::runtime::promise_of;
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
    #[napi(ts_return_type = "Promise<number>")]
    pub fn in_use<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, f64>> {
        let semaphore = self.inner.clone();
        promise_of(env, async move {
            let in_use = ask(&semaphore, |semaphore| async move { semaphore.in_use().await }).await?;
            Ok(in_use as f64)
        })
    }
}
