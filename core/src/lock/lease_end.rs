//! When a hold's lease ends as far as this process can tell: set from the request that granted or
//! renewed it, moved by manual extensions, and given back on release (its end then no longer counts).
//! One notifier tells of every change; whoever waits for it (the watchdog, the lost signal's waiters)
//! listens before it reads the end, so no change is missed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

/// When the lease ends as far as this process can tell (the time the request that set it was sent,
/// plus its ttl), the notifiers of its changes, and whether the hold was given back (its end then no
/// longer counts).
pub(crate) struct LeaseEnd {
    at: Mutex<Instant>,
    /// Wakes everyone waiting on the end at any change (renewal, extension, give-back).
    pub(crate) changed: Notify,
    given_back: AtomicBool,
}

impl std::fmt::Debug for LeaseEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseEnd").field("at", &self.get()).finish()
    }
}

impl LeaseEnd {
    pub(crate) fn new(at: Instant) -> Arc<Self> {
        Arc::new(LeaseEnd {
            at: Mutex::new(at),
            changed: Notify::new(),
            given_back: AtomicBool::new(false),
        })
    }

    /// True when the lease's end has passed on a hold not given back: it is lost now, whether or not
    /// the watchdog has woken to say so (a busy or absent runtime wakes it late or never).
    pub(crate) fn passed(&self) -> bool {
        !self.given_back.load(Ordering::Acquire) && Instant::now() >= self.get()
    }

    /// Marks the hold given back: its end no longer makes it lost.
    pub(crate) fn give_back(&self) {
        self.given_back.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// True once the hold was given back.
    pub(crate) fn is_given_back(&self) -> bool {
        self.given_back.load(Ordering::Acquire)
    }

    pub(crate) fn get(&self) -> Instant {
        *self.at.lock()
    }

    /// Moves the end (earlier or later) and wakes everyone waiting on it to take it into account.
    pub(crate) fn set(&self, at: Instant) {
        *self.at.lock() = at;
        self.changed.notify_waiters();
    }
}
