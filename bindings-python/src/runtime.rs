//! The tokio runtime of the Python process: one per process, built on first use and built again in a
//! forked child (gunicorn `--preload`, uWSGI, Celery prefork, `multiprocessing` with fork), whose copy of
//! the parent's runtime has no threads. `run` blocks (GIL released) for the sync API; `spawn` returns an
//! asyncio awaitable for `ratelock.asyncio`. Either way a panic becomes a Python exception instead of
//! crossing into the interpreter.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use pyo3::prelude::*;

use crate::errors::{internal_error, to_py};

/// One worker thread: measured on 2 vCPUs, it serves sync calls about 15% faster than two (fewer
/// threads to wake per round trip; asyncio loses ~6%), and the GIL bounds Python's parallelism anyway.
static RUNTIME: ratelock::process::PerProcess<ProcessRuntimeSlot> = ratelock::process::PerProcess::new();

/// This process's runtime: the handle every call uses, and the runtime itself until the interpreter
/// exits ([`stop_at_exit`] takes it out and shuts it down).
struct ProcessRuntimeSlot {
    handle: tokio::runtime::Handle,
    owned: parking_lot::Mutex<Option<tokio::runtime::Runtime>>,
    stopped: std::sync::atomic::AtomicBool,
}

/// This process's runtime (a forked child builds its own).
pub(crate) fn runtime() -> &'static tokio::runtime::Handle {
    &slot().handle
}

fn slot() -> &'static ProcessRuntimeSlot {
    RUNTIME.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ratelock")
            // The host's stop and reload signals go to its own threads (see ratelock::host_signals).
            .on_thread_start(|| {
                ratelock::host_signals::keep_off_this_thread();
                // Its measurements wait for a thread that holds the GIL (`metrics_queue`).
                crate::metrics_queue::runtime_thread_started();
            })
            .enable_all()
            .build()
            .expect("ratelock cannot start its tokio runtime");
        ProcessRuntimeSlot {
            handle: runtime.handle().clone(),
            owned: parking_lot::Mutex::new(Some(runtime)),
            stopped: std::sync::atomic::AtomicBool::new(false),
        }
    })
}

/// `Ok` while the runtime runs; after [`stop_at_exit`], the error every call that needs it raises
/// (a task spawned then would be dropped unanswered: its awaitable would never resolve).
pub(crate) fn live() -> PyResult<()> {
    let stopped = RUNTIME
        .get()
        .is_some_and(|slot| slot.stopped.load(std::sync::atomic::Ordering::Acquire));
    if stopped {
        return Err(crate::errors::RatelockError::new_err(
            "ratelock's runtime is stopped: the interpreter is exiting",
        ));
    }
    Ok(())
}

/// How long the exit waits for runtime threads to finish what they are doing (a completion that holds
/// the GIL, a release on its way to the store).
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Shuts this process's runtime down while the interpreter can still run Python code (registered with
/// `atexit` when the module loads, so after every exit handler registered later). A runtime thread
/// that attaches to the interpreter once it is finalizing aborts the process (`PyGILState_Release`:
/// "must be current when releasing"); the exit closes the metrics queue so that its late drain never
/// does. Holds still open are not released here; their leases run out on the store.
#[pyfunction]
pub(crate) fn stop_at_exit(py: Python<'_>) {
    let Some(slot) = RUNTIME.get() else { return };
    slot.stopped.store(true, std::sync::atomic::Ordering::Release);
    if let Some(runtime) = slot.owned.lock().take() {
        py.detach(|| runtime.shutdown_timeout(EXIT_GRACE));
    }
    // Measurements the runtime's threads made last, while a recorder can still take them; no thread
    // of the runtime attaches after this.
    crate::metrics_queue::close(py);
    crate::stale_answers::close(py);
}

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

/// Polls `future` once on this thread, inside the runtime's context, with a waker that does nothing:
/// a call that needs no I/O finishes here, and any other has sent what it could (in call order) before
/// it goes on elsewhere, where its next poll gives it a real waker.
pub(crate) fn poll_here<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    let _context = runtime().enter();
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// A call's outcome, a panic inside it as a Python exception like any other failure.
pub(crate) fn settle<T>(outcome: std::thread::Result<PyResult<T>>) -> PyResult<T> {
    outcome.unwrap_or_else(|panic| Err(internal_error(panic)))
}

/// Runs `call` on this thread, turning a panic into a Python exception.
pub(crate) fn catch_panic<T>(call: impl FnOnce() -> T) -> PyResult<T> {
    std::panic::catch_unwind(AssertUnwindSafe(call)).map_err(internal_error)
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
