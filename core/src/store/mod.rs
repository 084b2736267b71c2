//! Stores hold the limiter's state: `memory` (embedded, the default) and `redis` (shared by every
//! process and language). Both answer the same [`LimitRequest`] with the same per-rule outcomes.

pub mod memory;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "redis")]
mod script;

use std::time::Duration;

use crate::algorithm::Outcomes;
use crate::error::{Error, Result};
use crate::rule::Rules;

#[cfg(feature = "redis")]
pub use self::redis::RedisStore;
pub use memory::MemoryStore;

/// One check of all rules of one key: what `hit` and `peek` send to a store.
#[derive(Debug, Clone, Copy)]
pub struct LimitRequest<'a> {
    /// Key prefix (no braces).
    pub prefix: &'a str,
    /// The user key, any bytes.
    pub key: &'a [u8],
    /// The rules, all checked together.
    pub rules: &'a Rules,
    /// Units to take from every rule.
    pub cost: u64,
    /// Explicit time in µs since the epoch; `None` lets the store use its own clock (Redis: `TIME`).
    pub now_us: Option<u64>,
    /// `true` for `hit` (spend when all allow), `false` for `peek`.
    pub spend: bool,
}

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

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            timeout: Duration::from_secs(1),
            max_keys: 1_000_000,
            tls_root_ca: None,
        }
    }
}

/// A store of either kind, chosen by URL.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = ratelock::Store::connect("memory://", &Default::default()).await?;
/// assert!(matches!(store, ratelock::Store::Memory(_)));
/// # Ok::<(), ratelock::Error>(()) });
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Store {
    /// In-process, expiring, bounded.
    Memory(MemoryStore),
    /// A Redis server.
    #[cfg(feature = "redis")]
    Redis(RedisStore),
}

impl Store {
    /// Opens a store: `memory://` (or an empty URL) for the embedded store, `redis://` or `rediss://`
    /// (with optional `user:password@` and `/db`) for Redis.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Store> {
        let url = url.trim();
        if url.is_empty() || url == "memory://" || url == "memory" {
            return Ok(Store::Memory(MemoryStore::new(options.max_keys)));
        }
        #[cfg(feature = "redis")]
        if url.starts_with("redis://") || url.starts_with("rediss://") || url.starts_with("redis+unix://") {
            return Ok(Store::Redis(RedisStore::connect(url, options).await?));
        }
        Err(Error::invalid_argument(
            "url",
            format!("unsupported URL {url:?} (expected memory://, redis:// or rediss://)"),
        ))
    }

    /// Checks (and for `hit`, spends on) every rule of the request; one outcome per rule.
    pub async fn check(&self, request: &LimitRequest<'_>) -> Result<Outcomes> {
        match self {
            Store::Memory(store) => store.check(request),
            // Boxed: the Redis future is large, and embedding it would make every memory-store call
            // move it around; one allocation is nothing beside a network round trip.
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.check(request)).await,
        }
    }

    /// Forgets the state of every given rule for `key`.
    pub async fn reset(&self, prefix: &str, key: &[u8], rules: &Rules) -> Result<()> {
        match self {
            Store::Memory(store) => {
                store.reset(prefix, key, rules);
                Ok(())
            }
            #[cfg(feature = "redis")]
            Store::Redis(store) => store.reset(prefix, key, rules).await,
        }
    }
}
