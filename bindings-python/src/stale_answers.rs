//! Answers queued for an asyncio loop that will never drain them: a loop closed (or collected) while
//! calls it started were still running. Such an answer may hold a lock's grant, which would stay taken,
//! and renewed, for the life of the process. A look on a thread of the runtime's blocking pool (never
//! one of the runtime's own threads, which must not wait for the GIL) finds a queue left undrained for a
//! while and, when its loop is closed or gone, drops what waits there: a dropped grant gives itself back.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use pyo3::prelude::*;

/// How long a queue may stay undrained before its loop is looked at.
const LOOK_AFTER: Duration = Duration::from_secs(1);
/// The longest wait between two looks at a loop found open but not draining (stopped, to run again):
/// each look doubles the wait up to this.
const LOOK_AFTER_AT_MOST: Duration = Duration::from_secs(60);

/// Held by a look while it is attached to the interpreter; set once the interpreter exits, after which
/// no look attaches. One per process: a child forked while a look held it gets its own.
static EXITED: ratelock::process::PerProcess<Mutex<bool>> = ratelock::process::PerProcess::new();

fn exited() -> &'static Mutex<bool> {
    EXITED.get_or_init(|| Mutex::new(false))
}

/// What a queue tells its looks: whether one is scheduled, and how many drains it has had.
#[derive(Default)]
pub(crate) struct Watch {
    scheduled: AtomicBool,
    drains: AtomicU64,
}

impl Watch {
    /// Counts a drain of the queue (its loop is alive and running).
    pub(crate) fn drained(&self) {
        self.drains.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether a look must be scheduled now (the first answer queued since the last one ended).
    pub(crate) fn needs_look(&self) -> bool {
        !self.scheduled.swap(true, Ordering::AcqRel)
    }

    /// Ends the looks (nothing waits any more); the next queued answer schedules another.
    pub(crate) fn stop(&self) {
        self.scheduled.store(false, Ordering::Release);
    }
}

/// A queue the looks watch.
pub(crate) trait Watched: Send + Sync + 'static {
    /// Its drain count and look flag.
    fn watch(&self) -> &Watch;
    /// Whether answers wait; when none does, it ends the looks ([`Watch::stop`]) under the queue's own
    /// lock, so that an answer queued meanwhile schedules the next.
    fn still_waiting(&self) -> bool;
    /// Ends the looks, under the queue's own lock, whatever waits; true when answers wait (then a new
    /// look must be scheduled for them).
    fn stop_looks(&self) -> bool;
    /// Drops what waits when the queue's loop is closed or gone (the GIL held).
    fn sweep(&self, py: Python<'_>);
}

/// Looks at `queue` every [`LOOK_AFTER`] while answers wait there; when no drain came since the last
/// look, it sweeps under the GIL on a thread of the blocking pool. Call it when [`Watch::needs_look`].
pub(crate) fn look_later<Q: Watched>(queue: std::sync::Arc<Q>) {
    if crate::process_runtime::live().is_err() {
        queue.watch().stop();
        return;
    }
    crate::process_runtime::runtime().spawn(async move {
        let mut drains = queue.watch().drains.load(Ordering::Relaxed);
        let mut wait = LOOK_AFTER;
        loop {
            tokio::time::sleep(wait).await;
            if !queue.still_waiting() {
                return;
            }
            let now = queue.watch().drains.load(Ordering::Relaxed);
            if now != drains {
                drains = now;
                wait = LOOK_AFTER;
                continue;
            }
            let looked = queue.clone();
            let swept = tokio::task::spawn_blocking(move || {
                let exited = exited().lock();
                if !*exited {
                    Python::try_attach(|py| looked.sweep(py));
                }
            })
            .await;
            if swept.is_err() {
                // The runtime is shutting down (or the look panicked): no look waits any more.
                if queue.stop_looks() && queue.watch().needs_look() {
                    look_later(queue);
                }
                return;
            }
            wait = (wait * 2).min(LOOK_AFTER_AT_MOST);
        }
    });
}

/// At the interpreter's exit (the GIL held): no look attaches after this.
pub(crate) fn close(py: Python<'_>) {
    py.detach(|| *exited().lock() = true);
}
