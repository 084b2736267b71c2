//! The process's shared stores, from the core's registry (`Store::shared`): one store per URL and
//! options, shared by every Limiter, lock and semaphore that names it.

use std::time::Duration;

/// The process's store for `url` (`None`: the embedded memory store), connecting on first use.
pub(crate) async fn shared(url: Option<String>, timeout: Duration) -> ratelock::Result<ratelock::Store> {
    let options = ratelock::StoreOptions::default().with_timeout(timeout);
    ratelock::Store::shared(url.as_deref(), &options).await
}
