//! Stores hold the limiter's state: `memory` (embedded, the default) and `redis` (shared by every
//! process and language). Both answer the same [`LimitRequest`] with the same per-rule outcomes.

pub mod connection_core;
#[cfg(feature = "runtime")]
mod lock_kinds;
pub mod memory;
#[cfg(feature = "runtime")]
mod memory_locks;
#[cfg(feature = "redis")]
pub mod redis;
mod registry;

use std::time::Duration;

use crate::algorithm::Outcomes;
use crate::error::{Error, Result};
use crate::rule::Rules;

#[cfg(feature = "redis")]
pub use self::redis::{redlock, tagged_script, wire, Gate, RedisStore};
pub use memory::MemoryStore;

/// A lock as it stands (see `Store::lock_state`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockState {
    /// Someone holds the lock.
    pub held: bool,
    /// µs until the current lease ends (0 when free).
    pub remaining_us: u64,
    /// The holder's fencing token (0 when free).
    pub holder_fence: u64,
    /// The last fencing token minted for this lock (0 if none).
    pub last_fence: u64,
}

/// The answer of a Redlock store to anything but a lock.
#[cfg(feature = "redis")]
fn locks_only(what: &str) -> Error {
    Error::invalid_argument(
        "store",
        format!("a Redlock store (redlock://) holds locks only; give {what} one Redis URL"),
    )
}

/// What a waiter listens to: woken by every release of one lock.
#[cfg(feature = "runtime")]
pub(crate) enum ReleaseWatch {
    Memory(std::sync::Arc<tokio::sync::Notify>),
    #[cfg(feature = "redis")]
    Redis(redis::subscriber::Registration),
}

#[cfg(feature = "runtime")]
impl ReleaseWatch {
    pub(crate) fn notify(&self) -> &tokio::sync::Notify {
        match self {
            ReleaseWatch::Memory(notify) => notify,
            #[cfg(feature = "redis")]
            ReleaseWatch::Redis(registration) => &registration.notify,
        }
    }
}

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
    /// A Redis server (or a cluster, or the master Sentinel names).
    #[cfg(feature = "redis")]
    Redis(RedisStore),
    /// N independent Redis servers holding locks by majority (Redlock); locks only.
    #[cfg(feature = "redis")]
    Redlock(redlock::RedlockStore),
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
        if [
            "redis://",
            "rediss://",
            "redis+unix://",
            "redis+cluster://",
            "redis+sentinel://",
        ]
        .iter()
        .any(|scheme| url.starts_with(scheme))
        {
            return Ok(Store::Redis(RedisStore::new(url, options)?));
        }
        #[cfg(feature = "redis")]
        if url.starts_with(redlock::REDLOCK_SCHEME) {
            return Ok(Store::Redlock(redlock::RedlockStore::new(url, options)?));
        }
        Err(Error::invalid_argument(
            "url",
            format!("unsupported URL {:?} (expected memory://, redis://, rediss://, redis+cluster://, redis+sentinel:// or redlock://)", crate::excerpt::of(url)),
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
            #[cfg(feature = "redis")]
            Store::Redlock(_) => Err(locks_only("a limiter")),
        }
    }

    /// [`check`](Self::check) on the calling thread, blocking, with no async runtime: always on the
    /// memory store; on Redis over its blocking connection when that is free (`None` otherwise, and
    /// when it cannot be opened: then use `check`).
    pub fn check_blocking(&self, request: &LimitRequest<'_>) -> Option<Result<Outcomes>> {
        match self {
            Store::Memory(store) => Some(store.check(request)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => store.check_blocking(request),
            #[cfg(feature = "redis")]
            Store::Redlock(_) => Some(Err(locks_only("a limiter"))),
        }
    }

    /// Reaches the store now (`PING`, connecting first if needed): configuration errors and outages
    /// alike are returned. The memory store always answers.
    pub async fn ping(&self) -> Result<()> {
        match self {
            Store::Memory(_) => Ok(()),
            #[cfg(feature = "redis")]
            Store::Redis(store) => store.ping().await,
            #[cfg(feature = "redis")]
            Store::Redlock(store) => store.ping().await,
        }
    }

    /// Where this process's circuit breaker for the store stands (`None` for the memory store and
    /// for Redlock, whose servers each have their own).
    pub fn breaker_state(&self) -> Option<connection_core::BreakerState> {
        match self {
            #[cfg(feature = "redis")]
            Store::Redis(store) => Some(store.gate().state()),
            _ => None,
        }
    }

    /// Whether calls can block on I/O (a network store), as opposed to answering in memory.
    pub fn does_io(&self) -> bool {
        !matches!(self, Store::Memory(_))
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
            #[cfg(feature = "redis")]
            Store::Redlock(_) => Err(locks_only("a limiter")),
        }
    }
}

/// Lock operations: the lease functions of `algorithm::lease` on the memory store, the `lock_*.lua`
/// scripts on Redis. Owner tokens and keys come from `DistributedLock`.
#[cfg(feature = "runtime")]
impl Store {
    /// Takes the lock (or re-enters it) for `owner`, minting a fencing token.
    pub async fn lock_acquire(
        &self,
        keys: &crate::key::LockKeys,
        owner: &str,
        ttl: Duration,
        reentrant: bool,
    ) -> Result<crate::algorithm::lease::Acquired> {
        let ttl_us = ttl.as_micros() as u64;
        match self {
            Store::Memory(store) => Ok(store.locks().acquire(keys, owner, ttl_us, reentrant)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.lock_acquire(keys, owner, ttl_us, reentrant)).await,
            #[cfg(feature = "redis")]
            Store::Redlock(store) => Box::pin(store.lock_acquire(keys, owner, ttl_us, reentrant)).await,
        }
    }

    /// Gives back one hold of the grant (`owner`, `fence`), if it still holds the lock.
    pub async fn lock_release(
        &self,
        keys: &crate::key::LockKeys,
        owner: &str,
        fence: u64,
    ) -> Result<crate::algorithm::lease::Released> {
        match self {
            Store::Memory(store) => Ok(store.locks().release(keys, owner, fence)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.lock_release(keys, owner, fence)).await,
            #[cfg(feature = "redis")]
            Store::Redlock(store) => Box::pin(store.lock_release(keys, owner, fence)).await,
        }
    }

    /// Moves the end of grant (`owner`, `fence`)'s lease to `ttl` from now; never re-acquires.
    pub async fn lock_extend(
        &self,
        keys: &crate::key::LockKeys,
        owner: &str,
        fence: u64,
        ttl: Duration,
    ) -> Result<crate::algorithm::lease::Extended> {
        let ttl_us = ttl.as_micros() as u64;
        match self {
            Store::Memory(store) => Ok(store.locks().extend(keys, owner, fence, ttl_us)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.lock_extend(keys, owner, fence, ttl_us)).await,
            #[cfg(feature = "redis")]
            Store::Redlock(store) => Box::pin(store.lock_extend(keys, owner, fence, ttl_us)).await,
        }
    }

    /// Reads the lock without changing it.
    pub async fn lock_state(&self, keys: &crate::key::LockKeys) -> Result<LockState> {
        match self {
            Store::Memory(store) => Ok(store.locks().state(keys)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.lock_state(keys)).await,
            #[cfg(feature = "redis")]
            Store::Redlock(store) => Box::pin(store.lock_state(keys)).await,
        }
    }

    /// Deletes the lease whoever holds it; true if it was held.
    pub async fn lock_force_release(&self, keys: &crate::key::LockKeys) -> Result<bool> {
        match self {
            Store::Memory(store) => Ok(store.locks().force_release(keys)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.lock_force_release(keys)).await,
            #[cfg(feature = "redis")]
            Store::Redlock(store) => Box::pin(store.lock_force_release(keys)).await,
        }
    }

    /// Starts listening for releases on `channel` (before trying, so no release is missed).
    pub(crate) async fn watch_releases(&self, channel: &[u8]) -> ReleaseWatch {
        match self {
            Store::Memory(store) => ReleaseWatch::Memory(store.locks().channel(channel)),
            #[cfg(feature = "redis")]
            // Boxed like every other Redis call here: the subscriber's future is deep (a pub/sub
            // connection held across awaits), and inline it pushed the futures of code that awaits a
            // lock wait past rustc's query depth limit.
            Store::Redis(store) => ReleaseWatch::Redis(Box::pin(store.subscriber().register(channel)).await),
            #[cfg(feature = "redis")]
            Store::Redlock(store) => {
                ReleaseWatch::Redis(Box::pin(store.first_node().subscriber().register(channel)).await)
            }
        }
    }

    /// Takes one of `limit` permits for `id` (reclaiming expired ones first).
    pub async fn semaphore_acquire(
        &self,
        keys: &crate::key::SemaphoreKeys,
        id: &str,
        limit: u64,
        ttl: Duration,
    ) -> Result<crate::algorithm::permits::PermitAcquired> {
        let ttl_us = ttl.as_micros() as u64;
        match self {
            Store::Memory(store) => Ok(store.locks().semaphore_acquire(keys, id, limit, ttl_us)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.semaphore_acquire(keys, id, limit, ttl_us)).await,
            #[cfg(feature = "redis")]
            Store::Redlock(_) => Err(locks_only("a semaphore")),
        }
    }

    /// Gives back `id`'s permit; true if it was held.
    pub async fn semaphore_release(&self, keys: &crate::key::SemaphoreKeys, id: &str) -> Result<bool> {
        match self {
            Store::Memory(store) => Ok(store.locks().semaphore_release(keys, id)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.semaphore_release(keys, id)).await,
            #[cfg(feature = "redis")]
            Store::Redlock(_) => Err(locks_only("a semaphore")),
        }
    }

    /// Moves the end of `id`'s permit lease; false if the permit is gone (never re-taken).
    pub async fn semaphore_extend(
        &self,
        keys: &crate::key::SemaphoreKeys,
        id: &str,
        ttl: Duration,
    ) -> Result<bool> {
        let ttl_us = ttl.as_micros() as u64;
        match self {
            Store::Memory(store) => Ok(store.locks().semaphore_extend(keys, id, ttl_us)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.semaphore_extend(keys, id, ttl_us)).await,
            #[cfg(feature = "redis")]
            Store::Redlock(_) => Err(locks_only("a semaphore")),
        }
    }

    /// Permits in use, and µs until the earliest of their leases ends.
    pub async fn semaphore_state(&self, keys: &crate::key::SemaphoreKeys) -> Result<(u64, u64)> {
        match self {
            Store::Memory(store) => Ok(store.locks().semaphore_state(keys)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.semaphore_state(keys)).await,
            #[cfg(feature = "redis")]
            Store::Redlock(_) => Err(locks_only("a semaphore")),
        }
    }
}
