//! Stores hold the limiter's and the locks' state: `memory` (embedded, the default), `redis` (shared by
//! every process and language) and `redlock` (locks only). What a store can do is a role trait
//! (`roles.rs`); [`Store`] is the store chosen by URL, which plays every role, and [`AnyLockStore`]
//! adds Redlock for the one role it plays. Each enum dispatches to its variants once (`dispatch.rs`).

pub mod connection_core;
mod dispatch;
pub mod memory;
#[cfg(feature = "runtime")]
mod memory_locks;
mod memory_roles;
mod memory_slots;
mod options;
#[cfg(feature = "runtime")]
pub(crate) mod outage_retry;
#[cfg(feature = "redis")]
pub mod redis;
mod registry;
mod roles;
mod sentinel_options;
mod tls_options;

use crate::error::{Error, Result};

#[cfg(feature = "redis")]
pub use self::redis::server_code::MODULE_CONTRACT_VERSION;
#[cfg(feature = "redis")]
pub use self::redis::{function_library, redlock, tagged_script, wire, FunctionLibrary, Gate, RedisStore};
pub use crate::algorithm::lease::LockState;
pub use memory::MemoryStore;
pub use options::{ServerCode, StoreOptions, WhenFull, MAX_TIMEOUT, MEMORY_OPTION_NAMES, MIN_TIMEOUT};
pub use roles::{EntryChange, LimitRequest, LimitStore, OverrideChange};
#[cfg(feature = "runtime")]
pub use roles::{LockKindStore, LockStore, ReleaseWatch};
pub use sentinel_options::{SentinelOptionNames, SENTINEL_OPTION_NAMES};
pub use tls_options::{TlsOptionNames, TLS_OPTION_NAMES};

/// Why a Redlock store is refused where one Redis is needed.
#[cfg(feature = "redis")]
const LOCKS_ONLY: &str = "a Redlock store (redlock://) holds distributed locks only; limiters, semaphores, fair and read-write locks need one Redis URL";

/// The store chosen by URL: it plays every role (limits, and every lock kind).
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
}

impl Store {
    /// The store's kind, as metrics name it: `memory` or `redis`.
    pub fn kind(&self) -> &'static str {
        match self {
            Store::Memory(_) => "memory",
            #[cfg(feature = "redis")]
            Store::Redis(_) => "redis",
        }
    }

    /// Opens a store: `memory://` (or an empty URL) for the embedded store, `redis://` or `rediss://`
    /// (with optional `user:password@` and `/db`), `redis+unix://`, `redis+cluster://` (or
    /// `rediss+cluster://` over TLS) or `redis+sentinel://` (or `rediss+sentinel://` over TLS) for Redis.
    /// A `redlock://` URL is refused
    /// here: Redlock holds locks only (see [`AnyLockStore::connect`]).
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Store> {
        Store::new(url, options)
    }

    /// [`connect`](Self::connect) without the `async`: no store does I/O when it is made (lazy start).
    pub fn new(url: &str, options: &StoreOptions) -> Result<Store> {
        options.check_for_store(url)?;
        let url = url.trim();
        if url.is_empty() || url == "memory://" || url == "memory" {
            return Ok(Store::Memory(MemoryStore::for_options(options)));
        }
        #[cfg(feature = "redis")]
        if [
            "redis://",
            "rediss://",
            "redis+unix://",
            "redis+cluster://",
            "rediss+cluster://",
            "redis+sentinel://",
            "rediss+sentinel://",
        ]
        .iter()
        .any(|scheme| url.starts_with(scheme))
        {
            return Ok(Store::Redis(RedisStore::new(url, options)?));
        }
        #[cfg(feature = "redis")]
        if url.starts_with(redlock::REDLOCK_SCHEME) {
            return Err(Error::invalid_argument("url", LOCKS_ONLY));
        }
        Err(Error::invalid_argument(
            "url",
            format!("unsupported URL {:?} (expected memory://, redis://, rediss://, redis+unix://, redis+cluster://, rediss+cluster://, redis+sentinel://, rediss+sentinel:// or redlock://)", crate::excerpt::of(url)),
        ))
    }

    /// Reaches the store now (`PING`, connecting first if needed): configuration errors and outages
    /// alike are returned. The memory store always answers.
    pub async fn ping(&self) -> Result<()> {
        match self {
            Store::Memory(_) => Ok(()),
            #[cfg(feature = "redis")]
            Store::Redis(store) => store.ping().await,
        }
    }

    /// Where this process's circuit breaker for the store stands (`None` for the memory store).
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

    /// The server code a limiter call takes now: `module`, `fcall` or `evalsha` on Redis (`None` for
    /// the memory store, or before the server's code was checked).
    pub(crate) fn limit_route(&self) -> Option<&'static str> {
        match self {
            #[cfg(feature = "redis")]
            Store::Redis(store) => store.limit_route(),
            _ => None,
        }
    }
}

/// A store a [`DistributedLock`](crate::DistributedLock) can run on: any [`Store`], or N independent
/// Redis servers holding the lock by majority (Redlock), which plays no other role. Every lock
/// constructor takes `&Store` or `&AnyLockStore` alike.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use ratelock::{AnyLockStore, DistributedLock};
/// let store = AnyLockStore::connect("memory://", &Default::default()).await?;
/// let orders = DistributedLock::new(&store, "orders:1", Default::default())?;
/// assert!(!orders.is_locked().await?);
/// # Ok::<(), ratelock::Error>(()) });
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum AnyLockStore {
    /// A store of every role.
    Store(Store),
    /// Redlock over N independent servers (`redlock://host:port,host:port,...`).
    #[cfg(feature = "redis")]
    Redlock(redlock::RedlockStore),
}

impl AnyLockStore {
    /// What this store's clocks may have taken of a lease of a given length before the holder counts
    /// it: Redlock's drift allowance, none for one server.
    #[cfg(feature = "runtime")]
    pub(crate) fn clock_drift(&self) -> fn(std::time::Duration) -> std::time::Duration {
        match self {
            #[cfg(feature = "redis")]
            AnyLockStore::Redlock(_) => redlock::clock_drift,
            _ => |_| std::time::Duration::ZERO,
        }
    }

    /// Opens a lock store: every URL [`Store::connect`] takes, and `redlock://host:port,...`.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<AnyLockStore> {
        AnyLockStore::new(url, options)
    }

    /// [`connect`](Self::connect) without the `async`: no store does I/O when it is made (lazy start).
    pub fn new(url: &str, options: &StoreOptions) -> Result<AnyLockStore> {
        // Every other URL is checked by `Store::new`.
        #[cfg(feature = "redis")]
        if url.trim().starts_with(redlock::REDLOCK_SCHEME) {
            options.check_for_store(url)?;
            return Ok(AnyLockStore::Redlock(redlock::RedlockStore::new(
                url.trim(),
                options,
            )?));
        }
        Store::new(url, options).map(AnyLockStore::Store)
    }

    /// The store of every role this is; for Redlock, the invalid-argument error that says it holds
    /// distributed locks only (what a binding answers when a Redlock URL is given to a limiter).
    pub fn into_store(self) -> Result<Store> {
        match self {
            AnyLockStore::Store(store) => Ok(store),
            #[cfg(feature = "redis")]
            AnyLockStore::Redlock(_) => Err(Error::invalid_argument("url", LOCKS_ONLY)),
        }
    }

    /// The store of every role this is (`None` for Redlock).
    pub fn as_store(&self) -> Option<&Store> {
        match self {
            AnyLockStore::Store(store) => Some(store),
            #[cfg(feature = "redis")]
            AnyLockStore::Redlock(_) => None,
        }
    }

    /// Whether calls can block on I/O (every store but the memory store).
    pub fn does_io(&self) -> bool {
        self.as_store().is_none_or(Store::does_io)
    }
}

impl From<Store> for AnyLockStore {
    fn from(store: Store) -> Self {
        AnyLockStore::Store(store)
    }
}

impl From<&Store> for AnyLockStore {
    fn from(store: &Store) -> Self {
        AnyLockStore::Store(store.clone())
    }
}

impl From<&AnyLockStore> for AnyLockStore {
    fn from(store: &AnyLockStore) -> Self {
        store.clone()
    }
}

#[cfg(feature = "redis")]
impl From<redlock::RedlockStore> for AnyLockStore {
    fn from(store: redlock::RedlockStore) -> Self {
        AnyLockStore::Redlock(store)
    }
}

#[cfg(feature = "redis")]
impl From<&redlock::RedlockStore> for AnyLockStore {
    fn from(store: &redlock::RedlockStore) -> Self {
        AnyLockStore::Redlock(store.clone())
    }
}
