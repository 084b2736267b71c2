//! Waiting with a deadline for a lock or a permit: try once; if busy, listen for releases and try again
//! (so no release is missed), and between tries sleep until a release message or the holder's lease
//! end (plus jitter), whichever comes first. One loop for every kind of lease.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::Jitter;
use crate::error::{Error, Result};
use crate::store::Store;

/// One try: got it, or busy until the current holder's lease ends (unless renewed).
pub(crate) enum Attempt<T> {
    Got(T),
    Busy(Duration),
}

/// Tries `attempt` until it succeeds or `timeout` passes (then `Error::WaitTimeout`).
pub(crate) async fn until_granted<T, F, Fut>(
    store: &Store,
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
    if let Attempt::Got(granted) = attempt().await? {
        return Ok(granted);
    }
    // Listening is bounded by the deadline too: without it, the naps below still end every wait.
    let watch = match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, store.watch_releases(channel))
            .await
            .ok(),
        None => Some(store.watch_releases(channel).await),
    };
    let never = tokio::sync::Notify::new();
    let mut jitter = Jitter::new(owner);
    loop {
        let released = watch.as_ref().map_or(&never, |w| w.notify()).notified();
        tokio::pin!(released);
        released.as_mut().enable();
        let busy_for = match attempt().await? {
            Attempt::Got(granted) => return Ok(granted),
            Attempt::Busy(remaining) => remaining,
        };
        let now = Instant::now();
        let left = match deadline {
            Some(deadline) if now >= deadline => return Err(Error::WaitTimeout(started.elapsed())),
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
