//! The addon's own tokio runtime, which lives as long as the process, and the bridges to it: `promise_of`
//! (a future's answer as a Promise), `spawn` (a task whose answer goes elsewhere), `guarded` and
//! `guarded_sync` (a panic becomes a rejected promise or a thrown error instead of an abort).
//!
//! Why not napi-rs's runtime: napi-rs shuts its runtime down when the last Node environment that loaded
//! the addon exits (the last `worker_threads` thread, when the main thread never loaded it), and makes a
//! new one for the next. But the stores are the process's (the core's registry), and their connections'
//! tasks ran on the old runtime: every later call on them timed out. The stores and the runtime their
//! tasks run on now live equally long.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use futures_util::FutureExt;
use napi::bindgen_prelude::{JsValue, PromiseRaw, ToNapiValue};
use napi::Env;
use tokio::runtime::Runtime;

use crate::errors::{bug, from_napi, internal, made_here, Result};

static RUNTIME: OnceLock<std::io::Result<Runtime>> = OnceLock::new();

/// The process's runtime, made on first use. One worker thread: every Redis round trip is I/O on a
/// shared connection, and a second worker on a small machine mostly adds a thread to wake; the
/// JavaScript thread is the other busy one.
fn runtime() -> Result<&'static Runtime> {
    let made = RUNTIME.get_or_init(|| {
        // The runtime's thread outlives any one Node environment: keep the addon's code mapped after
        // the environment that loaded it unloads it.
        napi::bindgen_prelude::retain_current_module_for_unload_safety();
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ratelock")
            // The host's stop and reload signals go to its own threads (see ratelock::host_signals).
            .on_thread_start(ratelock::host_signals::keep_off_this_thread)
            .enable_all()
            .build()
    });
    made.as_ref()
        .map_err(|error| bug(format!("could not start the addon's runtime: {error}")))
}

/// Starts the runtime at module load, so that the first call does not pay for it. A runtime that
/// cannot start is not forgotten: every call that needs it rejects with the reason.
pub(crate) fn install() {
    let _ = runtime();
}

/// Runs `task` on the runtime; its outcome goes wherever the task sends it.
pub(crate) fn spawn(task: impl Future<Output = ()> + Send + 'static) -> Result<()> {
    runtime()?.spawn(task);
    Ok(())
}

/// `future`, with a panic caught and mapped to `ERR_RATELOCK_INTERNAL`.
pub(crate) async fn guarded<T>(future: impl Future<Output = Result<T>>) -> Result<T> {
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(internal(panic)))
}

/// `call`, with a panic caught and mapped to `ERR_RATELOCK_INTERNAL`.
pub(crate) fn guarded_sync<T>(call: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(AssertUnwindSafe(call)).unwrap_or_else(|panic| Err(internal(panic)))
}

/// `future`'s answer as a Promise. The future is polled once here, on the JavaScript thread (inside the
/// runtime, so that what it spawns and the timers it sets run there): when that poll finishes it (the
/// memory store, a lock call that waits for nothing, answers already queued), the promise is settled at
/// once, with no hop to the runtime's thread and back (two thread wake-ups, tens of µs on a small VM).
/// Otherwise the future goes on as a task on the runtime, which settles the promise through a
/// thread-safe call when it ends. An error rejects the promise with a JavaScript error whose `code` is
/// the error's code (which the binding's error classes read). Check arguments inside `future`, so that a bad one
/// rejects instead of throwing.
pub(crate) fn promise_of<'env, T, F>(env: &'env Env, future: F) -> Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let runtime = runtime()?;
    let mut future = Box::pin(guarded(future));
    let first = {
        let _inside = runtime.enter();
        future.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    };
    match first {
        Poll::Ready(Ok(value)) => PromiseRaw::resolve(env, value).map_err(from_napi),
        Poll::Ready(Err(error)) => PromiseRaw::reject(env, error).map_err(from_napi),
        Poll::Pending => {
            let (deferred, promise) = env.create_deferred::<T, _>().map_err(from_napi)?;
            runtime.spawn(async move {
                // napi-rs rejects a deferred only with its own kind of error, so the coded one is
                // made into its JavaScript value on the JavaScript thread, in the resolver.
                let answer = future.await;
                deferred.resolve(move |env| answer.map_err(|error| made_here(env.raw(), error)));
            });
            Ok(PromiseRaw::new(env.raw(), promise.raw()))
        }
    }
}
