//! A Redlock waiter's watch over every server at once: a release is published only on the servers that
//! granted the lock, so the first server's channel alone missed every release it had no part in, and
//! the waiter slept until the holder's lease would have ended.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::store::roles::ReleaseWatch;

/// The servers' watches and one `Notify` woken by a release heard on any of them.
pub(crate) struct RedlockWatch {
    pub(crate) notify: Arc<Notify>,
    /// Each server's registration, kept for as long as the watch lives.
    _watches: Vec<ReleaseWatch>,
    /// One task per server passing its wake-ups on, stopped with the watch.
    forwards: Vec<tokio::task::JoinHandle<()>>,
}

impl RedlockWatch {
    /// One watch over `watches` (each server's that could be had). Runs on a Tokio runtime.
    pub(crate) fn over(watches: Vec<ReleaseWatch>) -> Self {
        let notify = Arc::new(Notify::new());
        let forwards = watches
            .iter()
            .map(|watch| {
                let (heard, told) = (watch.shared_notify(), notify.clone());
                // Listening from here, before the task first runs: a release heard in between is
                // passed on (a `Notified` hears `notify_waiters` from its creation).
                let mut next = heard.clone().notified_owned();
                tokio::spawn(async move {
                    loop {
                        next.await;
                        next = heard.clone().notified_owned();
                        told.notify_waiters();
                    }
                })
            })
            .collect();
        RedlockWatch {
            notify,
            _watches: watches,
            forwards,
        }
    }
}

impl Drop for RedlockWatch {
    fn drop(&mut self) {
        for forward in &self.forwards {
            forward.abort();
        }
    }
}
