//! A guard's upkeep, what every guard (lock or permit) carries besides its lease: the lease's end as this
//! process sees it, the lost signal, the watchdog (booked with the guard when it renews or has hooks to
//! tell, its task started when first needed, stopped before release, and after a release that fails
//! on the way only watching the lease's end), the runtime the hold was taken on (a guard dropped
//! outside any runtime gives its hold back there), and the process that took the hold (a forked child
//! cannot use it).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::hold_events::HoldEvents;
use super::lease_end::LeaseEnd;
use super::lost::{LostReason, LostSender, LostSignal};
use super::watchdog::{self, Renew};
use super::watchdog_start::Watchdog;
use crate::algorithm::lease::Released;
use crate::error::{Error, Result};

pub(crate) struct Upkeep {
    lease_end: Arc<LeaseEnd>,
    lost_sender: Arc<LostSender>,
    lost: LostSignal,
    watchdog: Option<Arc<Watchdog>>,
    renew: Renew,
    ttl: Duration,
    /// How much of a lease of a given length the store's clocks may have taken already (Redlock's
    /// drift allowance; none for one server): a lease's end, as this process counts it, comes that much
    /// before the store's.
    drift: fn(Duration) -> Duration,
    auto_renew: bool,
    /// The runtime current when the hold was taken, if any: its watchdog runs there, and a guard
    /// dropped where no runtime is current gives the hold back there.
    runtime: Option<tokio::runtime::Handle>,
    /// The process generation that took the hold (see `crate::process`).
    generation: u64,
    events: HoldEvents,
    /// A release failed after it may have reached the store ([`Error::may_have_run`]): a later one
    /// that finds the lease gone asks whether this one freed it.
    release_unheard: bool,
}

impl Upkeep {
    /// Starts the watchdog (when a tokio runtime is running) for a lease of `ttl` granted by a request
    /// sent at `sent` (the lease cannot have started earlier, so its end is counted from there).
    pub(crate) fn start(
        sent: Instant,
        ttl: Duration,
        drift: fn(Duration) -> Duration,
        auto_renew: bool,
        renew: Renew,
        events: HoldEvents,
    ) -> Self {
        let lease_end = LeaseEnd::new(sent + valid_for(ttl, drift));
        let (sender, lost) = LostSignal::new(lease_end.clone());
        let mut upkeep = Upkeep {
            lease_end,
            lost_sender: Arc::new(sender),
            lost,
            watchdog: None,
            renew,
            ttl,
            drift,
            auto_renew,
            runtime: tokio::runtime::Handle::try_current().ok(),
            generation: crate::process::generation(),
            events,
            release_unheard: false,
        };
        upkeep.resume();
        upkeep
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
            self.lease_end.set(sent + valid_for(ttl, self.drift));
            // A watchdog only booked would not see the new end until it starts: start it now.
            if let Some(watchdog) = &self.watchdog {
                watchdog.start_now();
            }
        } else {
            self.events.lost(&self.lost_sender, LostReason::Taken);
        }
    }

    /// Stops the watchdog. It is aborted, not awaited (awaiting costs a wake-up of the runtime's
    /// thread per release): a renewal already on the wire can only land after the release as a no-op,
    /// since extending never re-creates a lease that is gone.
    pub(crate) fn stop(&mut self) {
        if let Some(task) = self.watchdog.take().and_then(|watchdog| watchdog.stop()) {
            task.abort();
        }
    }

    /// Starts the watchdog (at the start, and after a release that failed on the way). A
    /// hold that is not renewed and has no hooks to tell needs none: its lost signal compares with the
    /// lease's end itself, and its waiters wait for that end. Not spawning one saves a task and, from
    /// outside the runtime (the memory store, Python's blocking lane), a wake-up of its thread per hold.
    pub(crate) fn resume(&mut self) {
        if self.watchdog.is_some() || self.lost.is_lost() || !(self.auto_renew || self.events.heard()) {
            return;
        }
        let first_renewal = if self.auto_renew {
            Instant::now() + watchdog::renewal_period(self.ttl)
        } else {
            self.lease_end.get()
        };
        let (renew, ttl, auto_renew) = (self.renew.clone(), self.ttl, self.auto_renew);
        let valid = valid_for(ttl, self.drift);
        let (lease_end, lost, events) = (
            self.lease_end.clone(),
            self.lost_sender.clone(),
            self.events.clone(),
        );
        let starts_at = first_renewal.min(lease_end.get());
        self.watchdog = self.runtime_here().map(|runtime| {
            Watchdog::book(
                runtime,
                starts_at,
                Box::new(move |runtime: &tokio::runtime::Handle| {
                    runtime.spawn(watchdog::run(
                        first_renewal,
                        renew,
                        (ttl, valid),
                        auto_renew,
                        lease_end,
                        lost,
                        events,
                    ))
                }),
            )
        });
    }

    /// Gives the hold back through `release` (the guard's store call), once: a forked child is refused
    /// (and its guard counts as released, so its drop does nothing), the watchdog stops first, and a
    /// release that fails on the transport leaves `released` false, so the caller can retry, with
    /// renewals off for good (its watchdog, if it has hooks to tell, only watches the lease's end). A
    /// hold already signalled lost answers as lost (see [`as_lost`]). The hooks hear one event of it
    /// ([`HoldEvents::settled`]); a release that finds the lease gone marks the hold lost.
    pub(crate) async fn give_back<R, C>(
        &mut self,
        released: &mut bool,
        release: R,
        freed_by_unheard: impl FnOnce() -> C,
    ) -> Result<Released>
    where
        R: std::future::Future<Output = Result<Released>>,
        C: std::future::Future<Output = Result<bool>>,
    {
        if *released {
            return Ok(Released::NotHeld);
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
        let unheard_before = self.release_unheard;
        let mut outcome = release
            .await
            .map(|answer| if was_lost { as_lost(answer) } else { answer });
        // An earlier release whose answer was lost may have run after all, and a lease it freed is
        // found gone: when the lease can tell that it was (the lock is free and its last grant is
        // still this one), the answer is released. Reporting it lost told a caller who retried, as
        // the failed release advised, that its lock had been lost while held. A lease gone some other
        // way (a restart without persistence, a grant to another since) stays not held.
        if unheard_before && !was_lost && matches!(outcome, Ok(Released::NotHeld)) {
            if let Ok(true) = freed_by_unheard().await {
                outcome = Ok(Released::Released);
            }
        }
        match &outcome {
            Err(err) if err.is_store_failure() => {
                // Still ours, so release can be called again, but no longer renewed: unless it is, the
                // lease runs out by itself (a renewed one would stay taken while its owner lives).
                self.release_unheard |= err.may_have_run();
                self.auto_renew = false;
                self.resume();
            }
            _ => {
                *released = true;
                self.lease_end.give_back();
            }
        }
        self.events.settled(&self.lost_sender, was_lost, &outcome);
        outcome
    }

    /// The runtime to spawn on: the current one, else the one the hold was taken on.
    fn runtime_here(&self) -> Option<tokio::runtime::Handle> {
        super::run_to_end::current_or(self.runtime.clone())
    }

    /// When the lease ends as this process sees it (a release after that has nothing left to give back).
    pub(crate) fn lease_end(&self) -> Instant {
        self.lease_end.get()
    }

    /// For a guard being dropped: stops the watchdog, then runs `release` in the background, on the
    /// current runtime or else on the one the hold was taken on; the hooks hear what it came to.
    /// `Err(release)` when there is neither (only the memory store can then give the hold back,
    /// synchronously: the hooks hear it released).
    pub(crate) fn release_in_background<F>(&mut self, release: F) -> std::result::Result<(), F>
    where
        F: std::future::Future<Output = Result<Released>> + Send + 'static,
    {
        let watchdog = self.watchdog.take().and_then(|watchdog| watchdog.stop());
        let was_lost = self.lost.is_lost();
        // Given back, as far as the lost signal goes: its end no longer counts (only the release's
        // answer can still say the hold was lost).
        self.lease_end.give_back();
        let Some(runtime) = self.runtime_here() else {
            if let Some(task) = watchdog {
                task.abort();
            }
            self.events
                .settled(&self.lost_sender, was_lost, &Ok(Released::Released));
            return Err(release);
        };
        let (events, sender) = (self.events.clone(), self.lost_sender.clone());
        runtime.spawn(async move {
            if let Some(task) = watchdog {
                task.abort();
                // An aborted task's `JoinError` is the abort itself: nothing to learn from it.
                let _ = task.await;
            }
            events.settled(&sender, was_lost, &release.await);
        });
        Ok(())
    }
}

impl Drop for Upkeep {
    fn drop(&mut self) {
        if self.owned_here().is_err() {
            // The parent's watchdog task lives on the parent's runtime: not ours to touch.
            std::mem::forget(self.watchdog.take());
        }
    }
}

/// What a release by a hold already signalled lost answers, given the store's answer: nothing given
/// back was still this grant's (a lease that had not quite ended on the server counts as lost, as the
/// holder was told).
fn as_lost(released: Released) -> Released {
    match released {
        Released::HeldByOther => Released::HeldByOther,
        _ => Released::NotHeld,
    }
}

/// How long a lease of `ttl` stays valid as this process counts it from its request: `ttl` less what
/// the store's clocks may have taken of it (`drift`).
fn valid_for(ttl: Duration, drift: fn(Duration) -> Duration) -> Duration {
    ttl.saturating_sub(drift(ttl))
}
