//! The process's shared stores, from the core's registry (`AnyLockStore::shared_now`): one store per URL
//! and options, shared by every Limiter, lock and semaphore that names it. A Redlock URL gives a store
//! for distributed locks only.

use std::time::Duration;

use napi_derive::napi;

use crate::convert;

/// Where a limiter's or a lock's keys live, the same three settings for every kind (all optional);
/// `lib/` passes them as each kind's `store`.
#[napi(object)]
pub struct StoreSettings {
    /// `redis://...` or `rediss://...`; none: the embedded memory store.
    pub url: Option<String>,
    /// Key prefix, `rl` by default.
    pub prefix: Option<String>,
    /// Each store call's timeout in milliseconds (default 1000).
    pub timeout_ms: Option<f64>,
}

impl StoreSettings {
    /// Each store call's timeout (the core's default unless given).
    pub(crate) fn timeout(&self) -> napi::Result<Duration> {
        match self.timeout_ms {
            Some(ms) => convert::millis("timeoutMs", ms),
            None => Ok(ratelock::StoreOptions::default().timeout),
        }
    }
}

/// The process's store for `url` (`None`: the embedded memory store), connecting on first use.
pub(crate) async fn shared(url: Option<String>, timeout: Duration) -> ratelock::Result<ratelock::Store> {
    shared_now(url.as_deref(), timeout)
}

/// [`shared`] without the `async`: making a store does no I/O.
pub(crate) fn shared_now(url: Option<&str>, timeout: Duration) -> ratelock::Result<ratelock::Store> {
    ratelock::Store::shared_now(url, &options(timeout))
}

fn options(timeout: Duration) -> ratelock::StoreOptions {
    ratelock::StoreOptions::default().with_timeout(timeout)
}

/// A lock handle's store, not yet chosen by role: its URL and each call's timeout.
pub(crate) struct StoreChoice {
    url: Option<String>,
    timeout: Duration,
}

impl StoreChoice {
    pub(crate) fn new(url: Option<String>, timeout: Duration) -> Self {
        StoreChoice { url, timeout }
    }

    /// The store of every role (what a semaphore, fair or read-write lock runs on).
    pub(crate) fn store(self) -> ratelock::Result<ratelock::Store> {
        ratelock::Store::shared_now(self.url.as_deref(), &options(self.timeout))
    }

    /// The store a `DistributedLock` runs on (Redlock too).
    pub(crate) fn lock_store(self) -> ratelock::Result<ratelock::AnyLockStore> {
        ratelock::AnyLockStore::shared_now(self.url.as_deref(), &options(self.timeout))
    }
}
