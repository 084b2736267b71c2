//! Giving back, in the background, what an unanswered try may have been granted: the pauses between
//! two asks of a store that does not answer, bounded by the lease (after which the grant has lapsed),
//! and which failures end the asking.

use std::time::Duration;

use tokio::time::Instant;

use crate::error::Error;

/// The first pause between two asks, doubled up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(25);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// Whether a try that failed with `err` may have run on the server all the same: its request may have
/// been written before the store stopped answering, or it was answered with something unexpected.
pub(crate) fn may_have_run(err: &Error) -> bool {
    err.is_store_failure() || err.is_protocol()
}

/// Whether asking again may help after `err`: only an outage. Nobody is left to tell of any other
/// failure, which ends the asking; what was granted then lapses with its lease.
pub(crate) fn ask_again_after(err: &Error) -> bool {
    err.is_store_failure()
}

/// The pauses between asks over one lease length: 25 ms, doubled up to 1 s.
pub(crate) struct Pauses {
    until: Instant,
    next: Duration,
}

impl Pauses {
    /// Pauses for asks that stop making sense after `lease` from now.
    pub(crate) fn over(lease: Duration) -> Self {
        Pauses {
            until: Instant::now() + lease,
            next: FIRST_PAUSE,
        }
    }

    /// The next pause, or `None` once it would end past the lease.
    pub(crate) fn next_pause(&mut self) -> Option<Duration> {
        let pause = self.next;
        if Instant::now() + pause >= self.until {
            return None;
        }
        self.next = (pause * 2).min(LONGEST_PAUSE);
        Some(pause)
    }
}

/// Gives back `id`'s grant with `release` (answered `Ok` when done, held or not), in a task of the
/// current runtime, asking again through an outage for at most `lease`. Outside a runtime nothing
/// runs, and the grant lapses with its lease.
pub(crate) fn release_in_background<F, Fut>(lease: Duration, mut release: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = crate::error::Result<()>> + Send,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let mut pauses = Pauses::over(lease);
        loop {
            match release().await {
                Err(err) if ask_again_after(&err) => {}
                _ => return,
            }
            match pauses.next_pause() {
                Some(pause) => tokio::time::sleep(pause).await,
                None => return,
            }
        }
    });
}
