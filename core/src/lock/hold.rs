//! What every guard (lock or permit) shares: the lease's end as this process sees it, the lost signal,
//! the watchdog task (started with the guard, stopped before release, resumed if a release fails on
//! the way), the runtime the hold was taken on (a guard dropped outside any runtime gives its hold back
//! there), and the process that took the hold: a forked child cannot use its parent's holds.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::hold_events::HoldEvents;
use super::lease_end::LeaseEnd;
use super::lost::{LostReason, LostSender, LostSignal};
use super::watchdog::{self, Renew};
use crate::error::{Error, Result};

pub(crate) struct Hold {
    lease_end: Arc<LeaseEnd>,
    lost_sender: Arc<LostSender>,
    lost: LostSignal,
    watchdog: Option<JoinHandle<()>>,
    renew: Renew,
    ttl: Duration,
    auto_renew: bool,
    /// The runtime current when the hold was taken, if any: its watchdog runs there, and a guard
    /// dropped where no runtime is current gives the hold back there.
    runtime: Option<tokio::runtime::Handle>,
    /// The process generation that took the hold (see `crate::process`).
    generation: u64,
    events: HoldEvents,
}

impl Hold {
    /// Starts the watchdog (when a tokio runtime is running) for a lease of `ttl` granted by a request
    /// sent at `sent` (the lease cannot have started earlier, so its end is counted from there).
    pub(crate) fn start(
        sent: Instant,
        ttl: Duration,
        auto_renew: bool,
        renew: Renew,
        events: HoldEvents,
    ) -> Self {
        let lease_end = LeaseEnd::new(sent + ttl);
        let (sender, lost) = LostSignal::new(lease_end.clone());
        let mut hold = Hold {
            lease_end,
            lost_sender: Arc::new(sender),
            lost,
            watchdog: None,
            renew,
            ttl,
            auto_renew,
            runtime: tokio::runtime::Handle::try_current().ok(),
            generation: crate::process::generation(),
            events,
        };
        hold.resume();
        hold
    }

    pub(crate) fn lost(&self) -> &LostSignal {
        &self.lost
    }

    /// `Ok` in the process that took the hold; in a forked child, the typed error that says the hold is
    /// its parent's (the child can neither release, extend nor renew it).
    pub(crate) fn owned_here(&self) -> Result<()> {
        if self.generation == crate::process::generation() {
            return Ok(());
        }
        Err(Error::LockNotOwned(
            "this hold was taken by the parent process before a fork; it stays the parent's".into(),
        ))
    }

    /// Records the answer of a manual extension sent at `sent`.
    pub(crate) fn extended(&self, still_held: bool, sent: Instant, ttl: Duration) {
        if still_held {
            self.lease_end.set(sent + ttl);
        } else {
            self.events.lost(&self.lost_sender, LostReason::Taken);
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

    /// Starts the watchdog again (after a release that failed on the way: the hold is still ours).
    pub(crate) fn resume(&mut self) {
        if self.watchdog.is_some() || self.lost.is_lost() {
            return;
        }
        self.watchdog = self.runtime_here().map(|runtime| {
            runtime.spawn(watchdog::run(
                self.renew.clone(),
                self.ttl,
                self.auto_renew,
                self.lease_end.clone(),
                self.lost_sender.clone(),
                self.events.clone(),
            ))
        });
    }

    /// Gives the hold back through `release` (the guard's store call), once (a hold already known lost
    /// answers what `as_lost` makes of the store's answer): a forked child is refused
    /// (and its guard counts as released, so its drop does nothing), the watchdog stops first, and a
    /// release that fails on the transport resumes it and leaves `released` false, so the caller can
    /// retry. `already` is the answer once the hold was given back.
    pub(crate) async fn give_back<T>(
        &mut self,
        released: &mut bool,
        already: T,
        as_lost: impl FnOnce(T) -> T,
        release: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        if *released {
            return Ok(already);
        }
        if let Err(err) = self.owned_here() {
            *released = true;
            self.lease_end.give_back();
            return Err(err);
        }
        // A hold already signalled lost (its lease ran out here first) is still given back, in case the
        // server's lease has not quite ended, but answers as lost: the holder was told to stop.
        let was_lost = self.lost.is_lost();
        self.stop();
        let outcome = release.await;
        match &outcome {
            Err(err) if err.is_store_failure() => self.resume(),
            _ => {
                *released = true;
                self.lease_end.give_back();
                if !was_lost {
                    self.events.released();
                }
            }
        }
        match outcome {
            Ok(answer) if was_lost => Ok(as_lost(answer)),
            other => other,
        }
    }

    /// The hold was found lost when it was given back (`reason`), unless it was known lost already.
    pub(crate) fn lost_at_release(&self, reason: LostReason) {
        self.events.lost(&self.lost_sender, reason);
    }

    /// Tells the hooks the hold was given back, unless it had been lost (its loss was the end of it).
    fn released_unless_lost(&self) {
        if !self.lost.is_lost() {
            self.events.released();
        }
    }

    /// The runtime to spawn on: the current one, else the one the hold was taken on.
    fn runtime_here(&self) -> Option<tokio::runtime::Handle> {
        tokio::runtime::Handle::try_current()
            .ok()
            .or_else(|| self.runtime.clone())
    }

    /// When the lease ends as this process sees it (a release after that has nothing left to give back).
    pub(crate) fn lease_end(&self) -> Instant {
        self.lease_end.get()
    }

    /// For a guard being dropped: stops the watchdog, then runs `release` in the background, on the
    /// current runtime or else on the one the hold was taken on. `Err(release)` when there is neither
    /// (only the memory store can then give the hold back, synchronously).
    pub(crate) fn release_in_background<F>(&mut self, release: F) -> std::result::Result<(), F>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let watchdog = self.watchdog.take();
        let Some(runtime) = self.runtime_here() else {
            if let Some(task) = watchdog {
                task.abort();
            }
            // The caller gives it back in memory (the one store that needs no runtime).
            self.released_unless_lost();
            return Err(release);
        };
        runtime.spawn(async move {
            if let Some(task) = watchdog {
                task.abort();
                let _ = task.await;
            }
            release.await;
        });
        self.released_unless_lost();
        Ok(())
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if self.owned_here().is_err() {
            // The parent's watchdog task lives on the parent's runtime: not ours to touch.
            std::mem::forget(self.watchdog.take());
        }
    }
}
