//! Measurements made on a thread that does not hold the GIL (the runtime's thread, or a caller blocked
//! with the GIL released) wait here for a thread that does, instead of taking the GIL where they are
//! made. Taken on the runtime's thread, the GIL stalled every connection of the process behind the
//! Python code that held it: 100 concurrent asyncio hits with metrics ran at 0.15x the rate without,
//! and at 0.02x beside one busy Python thread.
//!
//! The queue is drained, in the order the measurements were made:
//! - when a blocking call returns to Python ([`crate::runtime::run`]), so that a call's measurements
//!   are recorded before it returns;
//! - when an asyncio loop resolves finished checks (`Completions::drain`), before their futures, and
//!   when it starts any other call (`crate::runtime::spawn`);
//! - otherwise (a watchdog's renewal, a hold lost, a release in the background, an asyncio lock call)
//!   by a thread of the runtime's blocking pool, [`LATE_DRAIN`] after the first measurement queued.
//!
//! One drain runs at a time (`draining`, always taken before the GIL), so a drain that returns has
//! recorded everything queued before it began. At most [`MAX_QUEUED`] measurements wait; more are
//! dropped and counted, and the next drain warns how many.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use pyo3::prelude::*;

/// The most measurements that wait for the GIL; beyond, they are dropped (and counted).
const MAX_QUEUED: usize = 100_000;

/// How long a measurement may wait for a call's return or an asyncio drain before a thread of the
/// blocking pool records it.
const LATE_DRAIN: Duration = Duration::from_millis(50);

/// One measurement as made: where it goes, the instrument's name, a histogram's or a counter's value,
/// and the attributes.
pub(crate) struct Queued {
    pub(crate) record: Arc<Py<PyAny>>,
    pub(crate) name: &'static str,
    pub(crate) histogram: bool,
    pub(crate) value: f64,
    pub(crate) attributes: Vec<(&'static str, String)>,
}

#[derive(Default)]
struct Queue {
    waiting: Mutex<Vec<Queued>>,
    /// Whether any measurement waits (read without the lock on every drain point).
    pending: AtomicBool,
    /// Whether a late drain is scheduled.
    scheduled: AtomicBool,
    /// Held by the one drain that runs (taken before the GIL).
    draining: Mutex<()>,
    dropped: AtomicU64,
}

thread_local! {
    /// Whether this thread is inside [`drain`].
    static DRAINING_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Unlocks the drain lock, taken on this thread (its guard forgotten: a guard cannot leave the closure
/// that waited for it without the GIL).
struct Unlock<'a>(&'a Mutex<()>);

impl Drop for Unlock<'_> {
    fn drop(&mut self) {
        // SAFETY: this thread locked it (in `drain`) and forgot the guard; nothing else unlocks it.
        unsafe { self.0.force_unlock() };
    }
}

/// Clears [`DRAINING_HERE`] when a drain ends, a panic in a recorder's call included.
struct ResetOnDrop;

impl Drop for ResetOnDrop {
    fn drop(&mut self) {
        DRAINING_HERE.set(false);
    }
}

/// This process's queue (a forked child starts with an empty one).
static QUEUE: ratelock::process::PerProcess<Queue> = ratelock::process::PerProcess::new();

fn queue() -> &'static Queue {
    QUEUE.get_or_init(Queue::default)
}

thread_local! {
    /// Whether this thread runs ratelock's code without the GIL: a thread of the runtime, or a caller
    /// inside [`detached`].
    static OFF_THE_GIL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread holds the GIL, as far as ratelock's code can tell: any thread but the
/// runtime's and a caller inside [`detached`] (another thread, a breaker's probe, attaches to record).
pub(crate) fn holds_the_gil() -> bool {
    !OFF_THE_GIL.get()
}

/// Marks a thread of the runtime (its `on_thread_start`).
pub(crate) fn runtime_thread_started() {
    OFF_THE_GIL.set(true);
}

/// `work` with the GIL released, then what it measured recorded (the GIL held again).
pub(crate) fn detached<T: Send>(py: Python<'_>, work: impl FnOnce() -> T + Send) -> T {
    let done = py.detach(|| {
        let was = OFF_THE_GIL.replace(true);
        let done = work();
        OFF_THE_GIL.set(was);
        done
    });
    drain(py);
    done
}

/// Queues `measurement` for a thread that holds the GIL, and schedules a late drain.
pub(crate) fn push(measurement: Queued) {
    let queue = queue();
    {
        let mut waiting = queue.waiting.lock();
        if waiting.len() >= MAX_QUEUED {
            queue.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        waiting.push(measurement);
        queue.pending.store(true, Ordering::Release);
    }
    if !queue.scheduled.swap(true, Ordering::AcqRel) {
        schedule_late_drain(queue);
    }
}

/// A drain on the blocking pool after [`LATE_DRAIN`], should none have run by then (the runtime's own
/// threads never wait for the GIL). None once the interpreter exits: its exit drains what is left.
fn schedule_late_drain(queue: &'static Queue) {
    if crate::runtime::live().is_err() {
        queue.scheduled.store(false, Ordering::Release);
        return;
    }
    crate::runtime::runtime().spawn(async move {
        tokio::time::sleep(LATE_DRAIN).await;
        queue.scheduled.store(false, Ordering::Release);
        if queue.pending.load(Ordering::Acquire) {
            let _done = tokio::task::spawn_blocking(|| {
                let _finalizing = Python::try_attach(drain);
            })
            .await;
        }
    });
}

/// Records every queued measurement, in order, on this thread (which holds the GIL). Cheap when none
/// waits: one atomic load.
pub(crate) fn drain(py: Python<'_>) {
    let queue = queue();
    if !queue.pending.load(Ordering::Acquire) || DRAINING_HERE.get() {
        return;
    }
    // A recorder that calls ratelock would drain again inside this drain, and wait for itself.
    DRAINING_HERE.set(true);
    let _reset = ResetOnDrop;
    // The drain lock before the GIL, always: a drain that must wait for another waits without the GIL,
    // which the other may need to finish.
    if let Some(taken) = queue.draining.try_lock() {
        std::mem::forget(taken);
    } else {
        py.detach(|| std::mem::forget(queue.draining.lock()));
    }
    let _draining = Unlock(&queue.draining);
    let batch = {
        let mut waiting = queue.waiting.lock();
        queue.pending.store(false, Ordering::Release);
        std::mem::take(&mut *waiting)
    };
    for measurement in batch {
        crate::metrics::send_now(py, measurement);
    }
    let dropped = queue.dropped.swap(0, Ordering::Relaxed);
    if dropped > 0 {
        warn_dropped(py, dropped);
    }
}

/// A `RuntimeWarning` that `dropped` measurements never reached the recorder.
fn warn_dropped(py: Python<'_>, dropped: u64) {
    let message =
        format!("ratelock: {dropped} measurements were dropped: {MAX_QUEUED} already waited for the GIL");
    let Ok(text) = std::ffi::CString::new(message) else {
        return;
    };
    let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
    if let Err(raised) = PyErr::warn(py, &category, &text, 1) {
        // A filter that turns warnings into errors: the error cannot reach a call, as a recorder's.
        raised.write_unraisable(py, None);
    }
}
