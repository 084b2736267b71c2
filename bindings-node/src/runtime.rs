//! The addon's tokio runtime (handed to napi-rs, so every exported `async fn` runs on it), and
//! `guarded`, which turns a panic inside a call into a rejected promise instead of an abort.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;

use crate::errors::internal;

/// One worker thread: every Redis round trip is I/O on a shared connection, and a second worker on a
/// small machine mostly adds a thread to wake; the JavaScript thread is the other busy one.
pub(crate) fn install() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("ratelock")
        .enable_all()
        .build();
    if let Ok(runtime) = runtime {
        napi::bindgen_prelude::create_custom_tokio_runtime(runtime);
    }
}

/// `future`, with a panic caught and mapped to `ERR_RATELOCK_INTERNAL`.
pub(crate) async fn guarded<T>(future: impl Future<Output = napi::Result<T>>) -> napi::Result<T> {
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(internal(panic)))
}

/// `call`, with a panic caught and mapped to `ERR_RATELOCK_INTERNAL`.
pub(crate) fn guarded_sync<T>(call: impl FnOnce() -> napi::Result<T>) -> napi::Result<T> {
    std::panic::catch_unwind(AssertUnwindSafe(call)).unwrap_or_else(|panic| Err(internal(panic)))
}
