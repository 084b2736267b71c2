//! What every guard (lock or permit) shares: the lease's end as this process sees it, the lost signal,
//! and the watchdog task, started with the guard and stopped before release.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::lost::LostSignal;
use super::watchdog::{self, LeaseEnd, Renew};

pub(crate) struct Hold {
    lease_end: Arc<LeaseEnd>,
    lost_sender: Arc<watch::Sender<bool>>,
    lost: LostSignal,
    watchdog: Option<JoinHandle<()>>,
}

impl Hold {
    /// Starts the watchdog (when a tokio runtime is running) for a lease of `ttl` granted by a request
    /// sent at `sent` (the lease cannot have started earlier, so its end is counted from there).
    pub(crate) fn start(sent: Instant, ttl: Duration, auto_renew: bool, renew: Renew) -> Self {
        let lease_end = LeaseEnd::new(sent + ttl);
        let (sender, lost) = LostSignal::new();
        let lost_sender = Arc::new(sender);
        let watchdog = tokio::runtime::Handle::try_current().ok().map(|runtime| {
            runtime.spawn(watchdog::run(
                renew,
                ttl,
                auto_renew,
                lease_end.clone(),
                lost_sender.clone(),
            ))
        });
        Hold {
            lease_end,
            lost_sender,
            lost,
            watchdog,
        }
    }

    pub(crate) fn lost(&self) -> &LostSignal {
        &self.lost
    }

    /// Records the answer of a manual extension sent at `sent`.
    pub(crate) fn extended(&self, still_held: bool, sent: Instant, ttl: Duration) {
        if still_held {
            self.lease_end.set(sent + ttl);
        } else {
            self.lost_sender.send_replace(true);
        }
    }

    /// Stops the watchdog. It is aborted, not awaited (awaiting costs a wake-up of the runtime's
    /// thread per release): a renewal already on the wire can only land after the release as a no-op,
    /// since extending never re-creates a lease that is gone.
    pub(crate) fn stop(&mut self) {
        if let Some(task) = self.watchdog.take() {
            task.abort();
        }
    }

    /// The watchdog, for a guard being dropped to stop in the background.
    pub(crate) fn take_watchdog(&mut self) -> Option<JoinHandle<()>> {
        self.watchdog.take()
    }
}

/// Stops a watchdog taken from a dropped guard, then runs `release`.
pub(crate) fn release_in_background<F>(watchdog: Option<JoinHandle<()>>, release: F) -> Result<(), F>
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn(async move {
                if let Some(task) = watchdog {
                    task.abort();
                    let _ = task.await;
                }
                release.await;
            });
            Ok(())
        }
        Err(_) => {
            if let Some(task) = watchdog {
                task.abort();
            }
            Err(release)
        }
    }
}
