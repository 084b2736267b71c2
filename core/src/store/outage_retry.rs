//! Trying a call again while the store cannot be reached, with pauses that double from 50 ms to 1 s,
//! until a deadline: how a release nobody awaits (a dropped guard's, a failed Redlock attempt's
//! leftover grant) gets through a short outage before the lease would run out anyway.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::Result;

/// The first pause before a call is tried again, and the longest.
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// Runs [`while_outage`] in a task of the current runtime, for a call nobody awaits (a release, a
/// give-back): a refusal, like a last outage, leaves what it would have freed to its lease, since
/// nobody is left to tell. Outside a runtime nothing runs, and the same holds.
pub(crate) fn in_background_while_outage<F, Fut, T>(until: Instant, attempt: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T>> + Send,
    T: Send + 'static,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let _ = while_outage(until, attempt).await;
    });
}

/// Runs `attempt` until it answers anything but an outage, or until the next try would start after
/// `until`; the last answer.
pub(crate) async fn while_outage<T, F, Fut>(until: Instant, mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut pause = FIRST_PAUSE;
    loop {
        match attempt().await {
            Err(error) if error.is_store_failure() && Instant::now() + pause < until => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(LONGEST_PAUSE);
            }
            outcome => return outcome,
        }
    }
}
