//! The background task behind every hold: renews the lease at a third of its length (auto-renew), or
//! waits for its end (no auto-renew); either way it raises the lost signal as soon as the hold is known
//! lost. It runs only while its guard lives: release and drop stop it before anything else.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

use crate::error::Result;

/// When the lease ends as far as this process can tell (the time a renewal was sent, plus the ttl).
pub(crate) type LeaseEnd = Arc<Mutex<Instant>>;

/// One renewal: `Ok(true)` renewed, `Ok(false)` the hold is gone (expired or taken), `Err` no answer.
pub(crate) type Renew = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<bool>> + Send>> + Send + Sync>;

/// How soon to try again after a renewal that failed for lack of the store.
const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(100);

pub(crate) async fn run(
    renew: Renew,
    ttl: Duration,
    auto_renew: bool,
    lease_end: LeaseEnd,
    lost: Arc<watch::Sender<bool>>,
) {
    let every = (ttl / 3).max(Duration::from_millis(1));
    let mut next = Instant::now() + every;
    loop {
        let end = *lease_end.lock();
        let wake = if auto_renew { next.min(end) } else { end };
        sleep_until(wake).await;
        if !auto_renew {
            if Instant::now() >= *lease_end.lock() {
                lost.send_replace(true);
                return;
            }
            continue;
        }
        let sent = Instant::now();
        match renew().await {
            Ok(true) => {
                *lease_end.lock() = sent + ttl;
                next = sent + every;
            }
            Ok(false) => {
                lost.send_replace(true);
                return;
            }
            Err(_) if Instant::now() >= *lease_end.lock() => {
                // The store stayed unreachable past the lease: we cannot know we still hold it.
                lost.send_replace(true);
                return;
            }
            Err(_) => next = Instant::now() + RETRY_AFTER_FAILURE.min(every),
        }
    }
}
