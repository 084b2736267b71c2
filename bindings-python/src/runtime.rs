//! The calls of the Python binding on the process's runtime (`process_runtime.rs`): `run` blocks (GIL
//! released) for the sync API; `spawn` and `awaitable` return an asyncio awaitable for
//! `ratelock.asyncio`. Either way a panic becomes a Python exception instead of crossing into the
//! interpreter.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use pyo3::prelude::*;

use crate::errors::{internal_error, to_py};
pub(crate) use crate::process_runtime::catch_panic;
use crate::process_runtime::{live, poll_here, runtime};

/// Runs `future` to completion. It is polled once on the calling thread first: a memory-store call (or
/// any call that needs no I/O) finishes there, with no thread switch. Otherwise the GIL is released and
/// the caller blocks on the shared runtime until the answer comes.
pub(crate) fn run<T, F>(py: Python<'_>, future: F) -> PyResult<T>
where
    T: Send,
    F: Future<Output = ratelock::Result<T>> + Send,
{
    let mut future = std::pin::pin!(future);
    let first = std::panic::catch_unwind(AssertUnwindSafe(|| poll_here(future.as_mut())));
    let outcome = match first {
        Ok(Poll::Ready(result)) => Ok(Ok(result)),
        Ok(Poll::Pending) => {
            live()?;
            // Signal handlers run on the main thread only: elsewhere nothing is checked (a check
            // takes the GIL, every 50 ms, for nothing).
            let main = on_the_main_thread(py);
            // What the call measures meanwhile is recorded before it returns.
            crate::metrics_queue::detached(py, || {
                std::panic::catch_unwind(AssertUnwindSafe(|| {
                    if main {
                        runtime().block_on(or_signal(future.as_mut()))
                    } else {
                        Ok(runtime().block_on(future.as_mut()))
                    }
                }))
            })
        }
        Err(panic) => Err(panic),
    };
    match outcome {
        Ok(Ok(result)) => result.map_err(to_py),
        Ok(Err(signalled)) => Err(signalled),
        Err(panic) => Err(internal_error(panic)),
    }
}

unsafe extern "C" {
    /// The calling thread's identifier, as `threading.get_ident()` answers it (Python's stable ABI).
    fn PyThread_get_thread_ident() -> std::ffi::c_ulong;
}

/// Whether this is the interpreter's main thread, where Python runs signal handlers (`threading`'s
/// answer, read once per process: a child forked from another thread has that one as its main; this
/// thread's identifier is one C call).
fn on_the_main_thread(py: Python<'_>) -> bool {
    use std::sync::atomic::{AtomicU64, Ordering};
    // The process generation the main thread was read in (0: not yet), and its identifier (0: unknown).
    static READ_IN: AtomicU64 = AtomicU64::new(0);
    static MAIN: AtomicU64 = AtomicU64::new(0);
    let generation = ratelock::process::generation() + 1;
    if READ_IN.load(Ordering::Acquire) != generation {
        let main: Option<u64> = py
            .import("threading")
            .and_then(|threading| threading.call_method0("main_thread")?.getattr("ident")?.extract())
            .ok();
        MAIN.store(main.unwrap_or(0), Ordering::Release);
        READ_IN.store(generation, Ordering::Release);
    }
    // SAFETY: no precondition; the GIL is held.
    #[allow(clippy::useless_conversion, reason = "c_ulong is 32 bits on Windows, 64 here")]
    let here = u64::from(unsafe { PyThread_get_thread_ident() });
    // Unknown: checked, as on the main thread.
    let main = MAIN.load(Ordering::Acquire);
    main == 0 || main == here
}

/// How often a blocked call lets Python run its signal handlers.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// `future`'s output, or the exception a Python signal handler raised while it waited (Ctrl-C's
/// `KeyboardInterrupt`, a `SIGALRM` timeout): then the call is dropped, as an interrupted
/// `threading.Lock.acquire` is (a lock call's grant is given back: the core's `run_to_end`). Handlers
/// run on the main thread only; elsewhere the check finds none.
async fn or_signal<F: Future + ?Sized>(mut future: Pin<&mut F>) -> PyResult<F::Output> {
    loop {
        let mut tick = std::pin::pin!(tokio::time::sleep(SIGNAL_CHECK));
        let done = std::future::poll_fn(|cx| match future.as_mut().poll(cx) {
            Poll::Ready(output) => Poll::Ready(Some(output)),
            Poll::Pending => tick.as_mut().poll(cx).map(|()| None),
        })
        .await;
        match done {
            Some(output) => return Ok(output),
            None => Python::attach(|py| py.check_signals())?,
        }
    }
}

/// Starts `future` and returns an asyncio future of its result, resolved through the running loop's
/// [`Completions`](crate::completions::Completions): the runtime's thread never takes the GIL for it, and
/// the result becomes a Python object on the loop's thread. Like [`run`], it is polled once on the
/// calling thread first, so calls reach a connection in the order the event loop made them (two `reserve`
/// calls book their slots in call order). Cancelling the future drops the call.
pub(crate) fn spawn<'py, T, F>(py: Python<'py>, future: F) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    F: Future<Output = PyResult<T>> + Send + 'static,
{
    live()?;
    // Earlier calls' measurements (made on the runtime's thread) are recorded here at the latest, on the
    // loop's thread.
    crate::metrics_queue::drain(py);
    let completions = crate::completions::Completions::of_running_loop(py)?;
    completions.get().submit_cancellable(
        py,
        async move { future.await.map(crate::completions::Reply::value) },
    )
}

/// Starts the core call `call` on the shared runtime and returns an asyncio awaitable of its answer: the
/// asyncio counterpart of [`run`].
pub(crate) fn awaitable<'py, T, F>(py: Python<'py>, call: F) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    F: Future<Output = ratelock::Result<T>> + Send + 'static,
{
    spawn(py, async move { call.await.map_err(to_py) })
}
