//! The addon's tokio runtime (handed to napi-rs, so every exported `async fn` runs on it), `guarded`,
//! which turns a panic inside a call into a rejected promise instead of an abort, and `promise_of`,
//! which settles a call's promise at once when its future needs no I/O.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll, Waker};

use futures_util::FutureExt;
use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::Env;

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

/// `future`'s answer as a Promise. The future is polled once here, on the JavaScript thread (inside the
/// runtime, so that what it spawns runs there): when that poll finishes it (the memory store: a lock
/// call that waits for nothing), the promise is resolved at once, with no hop to the runtime's thread
/// and back (two thread wake-ups, tens of µs on a small VM). Otherwise the future goes on on the
/// runtime, polled there from then on, as an `async fn`'s would be. An error rejects the promise with
/// the JavaScript error napi-rs makes of it for an `async fn` (the one the binding's error classes
/// read). Check arguments inside `future`, so that a bad one rejects instead of throwing.
pub(crate) fn promise_of<T, F>(env: &Env, future: F) -> napi::Result<PromiseRaw<'_, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = napi::Result<T>> + Send + 'static,
{
    let mut future = Box::pin(guarded(future));
    let first = napi::bindgen_prelude::within_runtime_if_available(|| {
        future.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    });
    match first {
        Poll::Ready(Ok(value)) => PromiseRaw::resolve(env, value),
        Poll::Ready(Err(error)) => PromiseRaw::reject(env, error),
        Poll::Pending => env.spawn_future(future),
    }
}
