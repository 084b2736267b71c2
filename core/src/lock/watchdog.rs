//! The guard's background task: renews the lease at a third of its length (auto-renew), or waits for
//! its end (no auto-renew); either way it raises the lost signal as soon as the lock is known lost.
//! It runs only while the guard lives: release and drop abort it before anything else.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

use super::Shared;
use crate::algorithm::lease::Extended;

/// When the lease ends as far as this process can tell (the time a renewal was sent, plus the ttl).
pub(crate) type LeaseEnd = Arc<Mutex<Instant>>;

/// How soon to try again after a renewal that failed for lack of the store.
const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(100);

pub(crate) async fn run(shared: Arc<Shared>, lease_end: LeaseEnd, lost: Arc<watch::Sender<bool>>) {
    let ttl = shared.options.ttl;
    let every = (ttl / 3).max(Duration::from_millis(1));
    let mut next = Instant::now() + every;
    loop {
        let end = *lease_end.lock();
        let wake = if shared.options.auto_renew {
            next.min(end)
        } else {
            end
        };
        sleep_until(wake).await;
        if !shared.options.auto_renew {
            if Instant::now() >= *lease_end.lock() {
                let _ = lost.send(true);
                return;
            }
            continue;
        }
        let sent = Instant::now();
        match shared.store.lock_extend(&shared.keys, &shared.owner, ttl).await {
            Ok(Extended::Extended) => {
                *lease_end.lock() = sent + ttl;
                next = sent + every;
            }
            Ok(_) => {
                let _ = lost.send(true);
                return;
            }
            Err(_) if Instant::now() >= *lease_end.lock() => {
                // The store stayed unreachable past the lease: we cannot know we still hold it.
                let _ = lost.send(true);
                return;
            }
            Err(_) => next = Instant::now() + RETRY_AFTER_FAILURE.min(every),
        }
    }
}
