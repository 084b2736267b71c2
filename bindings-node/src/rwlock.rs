//! `ReadWriteLock` for Node: the native handle behind `ReadWriteLock` in `lib/read-write-lock.js`.
//! Each read or write acquire gives a `NativeGuard`; sharing, exclusion and writer preference are the
//! core's.

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::errors::Result;
use crate::lock_handle::{ask, lock_handle};
use crate::runtime::promise_of;
use crate::stores::StoreChoice;

/// A read-write lock as it stands.
#[napi(object)]
pub struct RwLockState {
    /// Live read holds.
    pub readers: f64,
    /// A writer holds the lock.
    pub writer: bool,
    /// The writer's fencing token (0 when none).
    pub writer_fence: f64,
    /// Milliseconds the writer's lease still runs (0 when none).
    pub writer_remaining_ms: f64,
    /// Writers waiting (writer preference).
    pub waiting_writers: f64,
    /// The last fencing token minted.
    pub last_fence: f64,
}

lock_handle! {
    #[doc = "The native read-write lock handle behind `ReadWriteLock` in `lib/read-write-lock.js`."]
    NativeReadWriteLock(ratelock::ReadWriteLock) by connect_read_write_lock() = |store: StoreChoice, name, options| ratelock::ReadWriteLock::new(&store.store()?, name, options);
    acquires try_acquire_read / acquire_read, try_acquire_write / acquire_write;
}

#[napi]
impl NativeReadWriteLock {
    /// The lock as it stands: readers, writer, waiting writers, last token.
    #[napi(ts_return_type = "Promise<RwLockState>")]
    pub fn state<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, RwLockState>> {
        let lock = self.inner.clone();
        promise_of(env, async move {
            let state = ask(&lock, |lock| async move { lock.state().await }).await?;
            Ok(RwLockState {
                readers: state.readers as f64,
                writer: state.writer,
                writer_fence: state.writer_fence as f64,
                writer_remaining_ms: crate::convert::to_millis(state.writer_remaining),
                waiting_writers: state.waiting_writers as f64,
                last_fence: state.last_fence as f64,
            })
        })
    }
}
