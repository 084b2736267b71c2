//! The process's shared stores, from the core's registry (`AnyLockStore::shared_now`): one store per URL
//! and options, shared by every Limiter, lock and semaphore that names it. A Redlock URL gives a store
//! for distributed locks only.

use std::time::Duration;

/// The process's store for `url` (`None`: the embedded memory store), connecting on first use.
pub(crate) async fn shared(url: Option<String>, timeout: Duration) -> ratelock::Result<ratelock::Store> {
    ratelock::Store::shared_now(url.as_deref(), &options(timeout))
}

/// The process's store for a `DistributedLock` on `url`: as [`shared`], and Redlock too.
pub(crate) async fn shared_lock_store(
    url: Option<String>,
    timeout: Duration,
) -> ratelock::Result<ratelock::AnyLockStore> {
    ratelock::AnyLockStore::shared_now(url.as_deref(), &options(timeout))
}

fn options(timeout: Duration) -> ratelock::StoreOptions {
    ratelock::StoreOptions::default().with_timeout(timeout)
}
