//! `StoreOptions`: what every store is opened with (each call's timeout, the memory store's bound, the
//! certificates to trust for TLS).

use std::time::Duration;

/// Options shared by the stores that talk to a server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StoreOptions {
    /// Timeout of every call (and of connecting).
    pub timeout: Duration,
    /// Memory store: the most keys kept before the ones closest to expiry are evicted.
    pub max_keys: usize,
    /// `rediss://`: PEM certificate(s) to trust instead of the system's roots (e.g. a private CA).
    pub tls_root_ca: Option<Vec<u8>>,
}

impl StoreOptions {
    /// The same options with another timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same options with another memory-store bound.
    pub fn with_max_keys(mut self, max_keys: usize) -> Self {
        self.max_keys = max_keys;
        self
    }

    /// The same options trusting these PEM certificates for `rediss://`.
    pub fn with_tls_root_ca(mut self, pem: Vec<u8>) -> Self {
        self.tls_root_ca = Some(pem);
        self
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            timeout: Duration::from_secs(1),
            max_keys: 1_000_000,
            tls_root_ca: None,
        }
    }
}
