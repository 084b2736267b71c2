//! The background task behind every hold: renews the lease at a third of its length (auto-renew), or
//! waits for its end (no auto-renew); either way it raises the lost signal as soon as the hold is known
//! lost — at the latest when the lease's end (as this process sees it) passes without a renewal, even
//! if a renewal is still waiting for an answer. A renewal the store could not answer (an outage) is
//! tried again; one that fails otherwise (configuration, protocol, an unexpected state) cannot succeed
//! later and loses the hold at once, saying why. It runs only while its guard lives: release and drop
//! stop it before anything else.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::{sleep_until, Instant};

use super::hold_events::HoldEvents;
use super::lease_end::LeaseEnd;
use super::lost::{LostReason, LostSender};
use crate::error::Result;

/// One renewal: `Ok(true)` renewed, `Ok(false)` the hold is gone (expired or taken), `Err` no answer.
pub(crate) type Renew = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<bool>> + Send>> + Send + Sync>;

/// How soon to try again after a renewal that failed for lack of the store.
const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(100);

/// How often a lease of `ttl` is renewed.
pub(crate) fn renewal_period(ttl: Duration) -> Duration {
    (ttl / 3).max(Duration::from_millis(1))
}

/// The watchdog of one hold, whose next renewal is due at `first_renewal` (it is started then, or
/// earlier after a manual extension: see `watchdog_start.rs`).
pub(crate) async fn run(
    first_renewal: Instant,
    renew: Renew,
    (ttl, valid): (Duration, Duration),
    auto_renew: bool,
    lease_end: Arc<LeaseEnd>,
    lost: Arc<LostSender>,
    events: HoldEvents,
) {
    let every = renewal_period(ttl);
    let mut next = first_renewal;
    loop {
        // Listening before looking: an extension made after the look still wakes this task.
        let moved = lease_end.changed.notified();
        tokio::pin!(moved);
        moved.as_mut().enable();
        let end = lease_end.get();
        if Instant::now() >= end {
            events.lost(&lost, LostReason::Expired);
            return;
        }
        // An extension longer than the ttl (`extend(60 s)` on a lock of 3 s) moved the end past what a
        // renewal would give: the next renewal waits until it would no longer shorten the lease (it
        // cut the 60 s back to 3 s at the next third, so a holder that then stalled lost what it asked
        // for).
        let due = end
            .checked_sub(valid)
            .map_or(next, |start| next.max(start + every));
        let wake = if auto_renew { due.min(end) } else { end };
        tokio::select! {
            _ = sleep_until(wake) => {}
            _ = &mut moved => continue,
        }
        if !auto_renew || Instant::now() >= lease_end.get() {
            continue;
        }
        let sent = Instant::now();
        let answer = tokio::select! {
            answer = renew() => answer,
            // A renewal still unanswered when the lease ends cannot keep the lock: it is lost now.
            _ = sleep_until(lease_end.get()) => {
                events.lost(&lost, LostReason::Expired);
                return;
            }
        };
        match answer {
            Ok(true) => {
                lease_end.set(sent + valid);
                next = sent + every;
            }
            Ok(false) => {
                events.lost(&lost, LostReason::Taken);
                return;
            }
            Err(error) if error.is_store_failure() => next = Instant::now() + RETRY_AFTER_FAILURE.min(every),
            Err(error) => {
                events.lost(&lost, LostReason::Failed(error));
                return;
            }
        }
    }
}
