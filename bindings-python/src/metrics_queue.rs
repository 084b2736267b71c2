//! Measurements made on a thread that does not hold the GIL (the runtime's threads, or a caller blocked
//! with the GIL released) wait here for a thread that does, instead of waiting for the GIL where they
//! are made. Recorded on the runtime's thread, each waited for the GIL and stalled every connection of
//! the process behind the Python code that held it: 100 concurrent asyncio hits with metrics ran at
//! 0.15x the rate without, and at 0.02x beside one busy Python thread.
//!
//! The queue is drained, in the order the measurements were made:
//! - when a blocking call returns to Python ([`detached`]), so that a call's measurements are recorded
//!   before it returns;
//! - when an asyncio loop resolves finished checks (`Completions::drain`), before their futures, and
//!   when it starts any other call (`crate::runtime::spawn`);
//! - otherwise (a watchdog's renewal, a hold lost, a release in the background, an asyncio lock call
//!   with no call after it): what has waited [`LATE_DRAIN`] is recorded by a thread of the runtime's
//!   blocking pool, which may wait for the GIL without stalling a connection.
//!
//! One drain runs at a time (`draining`, always taken before the GIL), and a drain that finds another
//! running waits for it, so a drain that returns has recorded everything queued before it began. At
//! most [`MAX_QUEUED`] measurements wait; more are dropped and counted, and the next drain warns how
//! many. Once the interpreter starts to exit ([`close`]), no thread of the runtime attaches to it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::recorder_call::Queued;

/// The most measurements that wait for the GIL; beyond, they are dropped (and counted).
const MAX_QUEUED: usize = 100_000;

/// How long a measurement waits for a call's return or an asyncio drain before a thread of the
/// blocking pool records it. Long enough that a busy loop or caller records its own (on its thread);
/// metrics are exported every few seconds at the most.
const LATE_DRAIN: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Queue {
    waiting: Mutex<Waiting>,
    /// Whether any measurement waits: read without the lock on every drain point, set and cleared
    /// under it.
    pending: AtomicBool,
    /// Held by the one drain that runs (taken before the GIL).
    draining: Mutex<()>,
    /// Set (under `draining`) when the interpreter starts to exit.
    closed: AtomicBool,
    dropped: AtomicU64,
}

/// The queue itself, with when each measurement was queued, and whether a late drain is scheduled
/// (both under one lock, so a push never misses a scheduled drain ending).
#[derive(Default)]
struct Waiting {
    measurements: Vec<(Instant, Queued)>,
    late_drain_scheduled: bool,
}

thread_local! {
    /// Whether this thread is inside a drain.
    static DRAINING_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Whether this thread runs ratelock's code without the GIL as a caller inside [`detached`] (the
    /// runtime's own threads are known to `process_runtime`).
    static OFF_THE_GIL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// This process's queue (a forked child starts with an empty one).
static QUEUE: ratelock::process::PerProcess<Queue> = ratelock::process::PerProcess::new();

fn queue() -> &'static Queue {
    QUEUE.get_or_init(Queue::default)
}

/// Whether the calling thread holds the GIL, as far as ratelock's code can tell: any thread but the
/// runtime's and a caller inside [`detached`] (another thread, a breaker's probe, attaches to record).
pub(crate) fn holds_the_gil() -> bool {
    !OFF_THE_GIL.get() && !crate::process_runtime::on_a_runtime_thread()
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
    let schedule = {
        let mut waiting = queue.waiting.lock();
        if waiting.measurements.len() >= MAX_QUEUED {
            queue.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        waiting.measurements.push((Instant::now(), measurement));
        queue.pending.store(true, Ordering::Release);
        !std::mem::replace(&mut waiting.late_drain_scheduled, true)
    };
    if schedule {
        schedule_late_drain(queue);
    }
}

/// Records on a thread of the blocking pool what has waited [`LATE_DRAIN`], and again while anything
/// waits (the runtime's own threads never wait for the GIL). None once the interpreter exits.
fn schedule_late_drain(queue: &'static Queue) {
    if crate::process_runtime::live().is_err() {
        queue.waiting.lock().late_drain_scheduled = false;
        return;
    }
    crate::process_runtime::runtime().spawn(async move {
        loop {
            tokio::time::sleep(LATE_DRAIN).await;
            let recorded = tokio::task::spawn_blocking(move || late_drain(queue)).await;
            let mut waiting = queue.waiting.lock();
            if recorded.is_err() || waiting.measurements.is_empty() {
                waiting.late_drain_scheduled = false;
                return;
            }
        }
    });
}

/// The late drain: the measurements that have waited [`LATE_DRAIN`], unless the interpreter exits.
fn late_drain(queue: &'static Queue) {
    let Some(stale_from) = Instant::now().checked_sub(LATE_DRAIN) else {
        return;
    };
    // Under steady load the loops and callers record everything: then nothing is stale, and nobody is
    // made to wait for this drain.
    let oldest = queue.waiting.lock().measurements.first().map(|(at, _)| *at);
    if oldest.is_none_or(|at| at > stale_from) {
        return;
    }
    // The drain lock first, without the GIL; then, unless the exit has begun, the GIL.
    let _draining = queue.draining.lock();
    if queue.closed.load(Ordering::Acquire) {
        return;
    }
    let _attached = Python::try_attach(|py| {
        let batch = take(queue, |at| at <= stale_from);
        record(py, queue, batch);
    });
}

/// Records every queued measurement, in order, on this thread (which holds the GIL). Cheap when none
/// waits and no drain runs: two atomic loads.
pub(crate) fn drain(py: Python<'_>) {
    let queue = queue();
    // `pending` first: found clear, it was cleared by a drain's take, made under the drain lock, so
    // that drain is seen running here until it has recorded what it took.
    if DRAINING_HERE.get() || (!queue.pending.load(Ordering::Acquire) && !queue.draining.is_locked()) {
        return;
    }
    // The drain lock before the GIL, always: a drain that must wait for another (it may be recording
    // what this thread's call measured) waits without the GIL, which the other may need to finish.
    if let Some(taken) = queue.draining.try_lock() {
        std::mem::forget(taken);
    } else {
        py.detach(|| std::mem::forget(queue.draining.lock()));
    }
    let _draining = Unlock(&queue.draining);
    let batch = take(queue, |_| true);
    record(py, queue, batch);
}

/// Takes the queued measurements from the first on while `taken(when queued)` says so.
fn take(queue: &Queue, taken: impl Fn(Instant) -> bool) -> Vec<Queued> {
    let mut waiting = queue.waiting.lock();
    let count = waiting
        .measurements
        .iter()
        .take_while(|(at, _)| taken(*at))
        .count();
    let batch = waiting
        .measurements
        .drain(..count)
        .map(|(_, measurement)| measurement)
        .collect();
    queue
        .pending
        .store(!waiting.measurements.is_empty(), Ordering::Release);
    batch
}

/// Records `batch` (the drain lock and the GIL held), then warns of any dropped.
fn record(py: Python<'_>, queue: &Queue, batch: Vec<Queued>) {
    // A recorder that calls ratelock would drain again inside this drain, and wait for itself.
    DRAINING_HERE.set(true);
    let _reset = ResetOnDrop;
    for measurement in batch {
        measurement.send_now(py);
    }
    let dropped = queue.dropped.swap(0, Ordering::Relaxed);
    if dropped > 0 {
        warn_dropped(py, dropped);
    }
}

/// At the interpreter's exit (the GIL held, the runtime stopped): what still waits is recorded here,
/// and no thread of the runtime attaches to the interpreter after this.
pub(crate) fn close(py: Python<'_>) {
    let queue = queue();
    py.detach(|| std::mem::forget(queue.draining.lock()));
    let _draining = Unlock(&queue.draining);
    queue.closed.store(true, Ordering::Release);
    let batch = take(queue, |_| true);
    record(py, queue, batch);
}

/// Unlocks the drain lock, taken on this thread (its guard forgotten: a guard cannot leave the closure
/// that waited for it without the GIL).
struct Unlock<'a>(&'a Mutex<()>);

impl Drop for Unlock<'_> {
    fn drop(&mut self) {
        // SAFETY: this thread locked it (in `drain` or `close`) and forgot the guard; nothing else
        // unlocks it.
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
