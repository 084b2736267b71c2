//! Giving back, in the background, what a try whose answer never came may have been granted: which
//! failures leave that possibility, and a release nobody awaits, asked again through an outage until
//! the lease would have run out anyway.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::store::outage_retry::while_outage;

/// Whether a try that failed with `err` may have run on the server all the same: its request may have
/// been written before the store stopped answering, or it was answered with something unexpected.
pub(crate) fn may_have_run(err: &Error) -> bool {
    err.is_store_failure() || err.is_protocol()
}

/// Runs `release` in a task of the current runtime, again while the store is out, for at most `lease`
/// (after which the grant has lapsed). Outside a runtime nothing runs, and the grant lapses with its
/// lease. Nobody is left to tell of a failure.
pub(crate) fn release_in_background<F, Fut>(lease: Duration, release: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<()>> + Send,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let _ = while_outage(Instant::now() + lease, release).await;
    });
}
