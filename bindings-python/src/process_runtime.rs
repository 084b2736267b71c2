//! The tokio runtime of the Python process: one per process, built on first use and built again in a
//! forked child (gunicorn `--preload`, uWSGI, Celery prefork, `multiprocessing` with fork), whose copy of
//! the parent's runtime has no threads; whether a thread is one of its own; and its stop at exit. The
//! calls that run on it are `runtime.rs`'s.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use pyo3::prelude::*;

use crate::errors::internal_error;

/// One worker thread: measured on 2 vCPUs, it serves sync calls about 15% faster than two (fewer
/// threads to wake per round trip; asyncio loses ~6%), and the GIL bounds Python's parallelism anyway.
static RUNTIME: ratelock::process::PerProcess<ProcessRuntimeSlot> = ratelock::process::PerProcess::new();

/// This process's runtime: the handle every call uses, and the runtime itself until the interpreter
/// exits ([`stop`] takes it out and shuts it down).
struct ProcessRuntimeSlot {
    handle: tokio::runtime::Handle,
    owned: parking_lot::Mutex<Option<tokio::runtime::Runtime>>,
    stopped: std::sync::atomic::AtomicBool,
}

thread_local! {
    /// Set on the runtime's own threads, which never hold the GIL.
    static ON_A_RUNTIME_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is one of the runtime's own.
pub(crate) fn on_a_runtime_thread() -> bool {
    ON_A_RUNTIME_THREAD.get()
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
                ON_A_RUNTIME_THREAD.set(true);
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

/// `Ok` while the runtime runs; after [`stop`], the error every call that needs it raises
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

/// Stops this process's runtime (at exit, `exit.rs`): every later call that needs it raises, and its
/// threads get [`EXIT_GRACE`] to finish what they are doing.
pub(crate) fn stop(py: Python<'_>) {
    let Some(slot) = RUNTIME.get() else { return };
    slot.stopped.store(true, std::sync::atomic::Ordering::Release);
    if let Some(runtime) = slot.owned.lock().take() {
        py.detach(|| runtime.shutdown_timeout(EXIT_GRACE));
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
