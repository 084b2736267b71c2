//! Waiting with a deadline for a lock or a permit: try once; if busy, listen for releases and try again
//! (so no release is missed), and between tries sleep until a release message or the holder's lease
//! end (plus jitter), whichever comes first. One loop for every kind of lease. A try that meets an
//! outage (a dropped connection, a timeout) is tried again after a short pause while the wait's own
//! budget lasts; only a wait without a deadline, or a failure that is not an outage, gives up at once.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::owner::Jitter;
use crate::error::{Error, Result};
use crate::store::LockStore;

/// One try: got it, or busy until the current holder's lease ends (unless renewed).
pub(crate) enum Attempt<T> {
    Got(T),
    Busy(Duration),
}

/// Runs the whole wait `wait` for a hold of kind `what`, telling `hooks` how long it took and how it
/// ended (nothing measured without hooks), also when its caller gives it up (the future dropped).
pub(crate) async fn reported<T>(
    hooks: &crate::hook::Hooks,
    what: &'static str,
    wait: impl Future<Output = Result<T>>,
) -> Result<T> {
    if hooks.is_empty() {
        return wait.await;
    }
    let mut waiting = Waiting {
        hooks,
        what,
        started: Instant::now(),
        ended: false,
    };
    let outcome = wait.await;
    waiting.ended = true;
    waiting.report(outcome.as_ref().err(), false);
    outcome
}

/// A reported wait under way: dropped before it ended, it reports the wait cancelled.
struct Waiting<'h> {
    hooks: &'h crate::hook::Hooks,
    what: &'static str,
    started: Instant,
    ended: bool,
}

impl Waiting<'_> {
    fn report(&self, error: Option<&Error>, cancelled: bool) {
        self.hooks.on_lock_event(&crate::hook::LockEvent::Waited {
            what: self.what,
            waited: self.started.elapsed(),
            error,
            cancelled,
        });
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        // A wait that panicked was not given up by its caller (and no hook runs while unwinding).
        if !self.ended && !std::thread::panicking() {
            self.report(None, true);
        }
    }
}

/// Tries `attempt` until it succeeds or `timeout` passes (then `Error::WaitTimeout`).
pub(crate) async fn until_granted<T, F, Fut>(
    store: &impl LockStore,
    channel: &[u8],
    owner: &str,
    timeout: Duration,
    mut attempt: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Attempt<T>>>,
{
    let started = Instant::now();
    let deadline = started.checked_add(timeout);
    // Uncontended: one round trip, no subscription. Busy: listen, then try again at once, so a
    // release between the two tries cannot be missed.
    let mut last_outage = None;
    match survive(attempt().await, deadline, &mut last_outage)? {
        Attempt::Got(granted) => return Ok(granted),
        // A wait that ends at once (a zero timeout) is that one try.
        Attempt::Busy(_) if timeout.is_zero() => return Err(Error::WaitTimeout(started.elapsed())),
        Attempt::Busy(_) => {}
    }
    // Listening is bounded by the deadline too: without it, the naps below still end every wait.
    let watch = match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, store.watch_releases(channel))
            .await
            .ok()
            .transpose()?,
        None => Some(store.watch_releases(channel).await?),
    };
    let never = tokio::sync::Notify::new();
    let mut jitter = Jitter::new(owner);
    loop {
        let released = watch.as_ref().map_or(&never, |w| w.notify()).notified();
        tokio::pin!(released);
        released.as_mut().enable();
        let busy_for = match survive(attempt().await, deadline, &mut last_outage)? {
            Attempt::Got(granted) => return Ok(granted),
            Attempt::Busy(remaining) => remaining,
        };
        let now = Instant::now();
        let left = match deadline {
            // A wait that ran out during an outage says so: the outage is why it was not granted.
            Some(deadline) if now >= deadline => {
                return Err(last_outage.unwrap_or(Error::WaitTimeout(started.elapsed())))
            }
            Some(deadline) => deadline - now,
            None => Duration::MAX,
        };
        let nap = (busy_for + jitter.up_to(busy_for / 10))
            .max(Duration::from_millis(1))
            .min(left);
        tokio::select! {
            _ = released => {}
            _ = tokio::time::sleep(nap) => {}
        }
    }
}

/// How long to pause before trying again after an outage.
const OUTAGE_PAUSE: Duration = Duration::from_millis(50);

/// A try's answer, with an outage turned into "busy for a short pause" while a deadline is set and
/// has not passed (the outage is kept to report if the deadline passes before the store answers).
fn survive<T>(
    tried: Result<Attempt<T>>,
    deadline: Option<Instant>,
    last_outage: &mut Option<Error>,
) -> Result<Attempt<T>> {
    match tried {
        Err(err) if err.is_store_failure() && deadline.is_some_and(|d| Instant::now() < d) => {
            *last_outage = Some(err);
            Ok(Attempt::Busy(OUTAGE_PAUSE))
        }
        Ok(answer) => {
            *last_outage = None;
            Ok(answer)
        }
        Err(err) => Err(err),
    }
}
