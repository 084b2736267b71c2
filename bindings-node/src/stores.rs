//! The process's shared stores, from the core's registry (`AnyLockStore::shared_now`): one store per URL
//! and options, shared by every Limiter, lock and semaphore that names it. A Redlock URL gives a store
//! for distributed locks only.

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;

use crate::convert;
use crate::errors::{invalid_argument, to_js, Result};
use crate::option_names::{SENTINEL_OPTION_NAMES, TLS_OPTION_NAMES};

/// Where a limiter's or a lock's keys live, the same settings for every kind (all optional); `lib/`
/// passes them as each kind's `store`.
#[napi(object)]
pub struct StoreSettings {
    /// `redis://...` or `rediss://...`; none: the embedded memory store.
    pub url: Option<String>,
    /// Key prefix, `rl` by default.
    pub prefix: Option<String>,
    /// Each store call's timeout in milliseconds (default 1000).
    pub timeout_ms: Option<f64>,
    /// `rediss://`, `rediss+cluster://` or `rediss+sentinel://`: the PEM certificate(s) to trust instead of the public roots
    /// (a private CA).
    pub tls_root_ca: Option<Either<String, Buffer>>,
    /// `rediss://...`: the client certificate (PEM chain) to present to a server that asks for one
    /// (mutual TLS), with `tlsClientKey`.
    pub tls_client_cert: Option<Either<String, Buffer>>,
    /// The private key (PEM) of `tlsClientCert`.
    pub tls_client_key: Option<Either<String, Buffer>>,
    /// `redis+sentinel://...`: the sentinels' ACL user, with `sentinelPassword`.
    pub sentinel_username: Option<String>,
    /// `redis+sentinel://...`: the sentinels' own password, when it differs from the master's.
    pub sentinel_password: Option<String>,
    /// The memory store: the most keys it keeps (none: no bound but memory).
    pub max_keys: Option<f64>,
    /// The memory store, with `maxKeys`: `refuse` (the default) or `evict`.
    pub when_full: Option<String>,
}

impl StoreSettings {
    /// The core's store options of these settings (its defaults, with what was given), checked.
    pub(crate) fn options(&self) -> Result<ratelock::StoreOptions> {
        let mut options = ratelock::StoreOptions::default();
        if let Some(ms) = self.timeout_ms {
            let timeout = convert::millis("timeoutMs", ms)?;
            // The core's own check would name its `timeout` and print a Duration.
            if timeout < ratelock::store::MIN_TIMEOUT || timeout > ratelock::store::MAX_TIMEOUT {
                return Err(invalid_argument(
                    "timeoutMs",
                    format!("expected from 1 ms to 366 days, got {ms}"),
                ));
            }
            options = options.with_timeout(timeout);
        }
        let url = self.url.as_deref().unwrap_or("memory://");
        let pems = [&self.tls_root_ca, &self.tls_client_cert, &self.tls_client_key].map(pem_bytes);
        options = options
            .with_tls_for_url(pems, url, TLS_OPTION_NAMES)
            .map_err(to_js)?;
        options.sentinel_username = self.sentinel_username.clone();
        options.sentinel_password = self.sentinel_password.clone();
        options
            .check_sentinel_for_url(url, SENTINEL_OPTION_NAMES)
            .map_err(to_js)?;
        options
            .with_memory_bound(
                self.max_keys,
                self.when_full.as_deref(),
                crate::option_names::MEMORY_OPTION_NAMES,
            )
            .map_err(to_js)
    }
}

/// PEM text given as a string or a Buffer, as bytes.
fn pem_bytes(pem: &Option<Either<String, Buffer>>) -> Option<Vec<u8>> {
    pem.as_ref().map(|pem| match pem {
        Either::A(text) => text.as_bytes().to_vec(),
        Either::B(bytes) => bytes.to_vec(),
    })
}

/// The process's store for `url` (`None`: the embedded memory store) with `options`; making a store
/// does no I/O (a Redis store connects on its first call).
pub(crate) fn shared_now(
    url: Option<&str>,
    options: &ratelock::StoreOptions,
) -> ratelock::Result<ratelock::Store> {
    ratelock::Store::shared_now(url, options)
}

/// A lock handle's store, not yet chosen by role: its URL and options.
pub(crate) struct StoreChoice {
    url: Option<String>,
    options: ratelock::StoreOptions,
}

impl StoreChoice {
    pub(crate) fn new(url: Option<String>, options: ratelock::StoreOptions) -> Self {
        StoreChoice { url, options }
    }

    /// The store of every role (what a semaphore, fair or read-write lock runs on).
    pub(crate) fn store(self) -> ratelock::Result<ratelock::Store> {
        ratelock::Store::shared_now(self.url.as_deref(), &self.options)
    }

    /// The store a `DistributedLock` runs on (Redlock too).
    pub(crate) fn lock_store(self) -> ratelock::Result<ratelock::AnyLockStore> {
        ratelock::AnyLockStore::shared_now(self.url.as_deref(), &self.options)
    }
}
