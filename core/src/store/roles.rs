//! The roles a store plays, one trait each: [`LimitStore`] (rate limits), [`LockStore`] (distributed
//! locks) and [`LockKindStore`] (semaphores, fair and read-write locks, which need one server's queues).
//! A store that cannot play a role does not implement it: a Redlock store is a `LockStore` only, so
//! giving it to a limiter or a semaphore fails to compile. Every lock kind is driven by its call enum
//! ([`LockCall`], [`SemaphoreCall`], [`FairCall`], [`RwCall`]): the memory store applies the pure
//! functions of `algorithm`, Redis runs the matching script.

use std::future::Future;

#[cfg(feature = "runtime")]
use crate::algorithm::fair::{FairCall, FairReply};
#[cfg(feature = "runtime")]
use crate::algorithm::lease::{LockCall, LockReply};
use crate::algorithm::overrides::Overrides;
#[cfg(feature = "runtime")]
use crate::algorithm::permits::{SemaphoreCall, SemaphoreReply};
#[cfg(feature = "runtime")]
use crate::algorithm::rwlock::{RwCall, RwReply};
use crate::algorithm::standing::{StandingCall, Verdict};
use crate::error::Result;
#[cfg(feature = "runtime")]
use crate::key::{FairLockKeys, LockKeys, RwLockKeys, SemaphoreKeys};
use crate::rule::Rules;

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
    /// A reservation (with `spend`): when some rule denies, book the earliest slot within this many
    /// µs instead (see [`reserve`](crate::algorithm::reserve)). `None` for a hit or a peek.
    pub max_wait_us: Option<u64>,
}

/// A change of one key's override: what `set_override` and `clear_override` send to a store.
#[derive(Debug, Clone, Copy)]
pub struct OverrideChange<'a> {
    /// Key prefix (no braces).
    pub prefix: &'a str,
    /// The user key, any bytes.
    pub key: &'a [u8],
    /// The override to keep (`None`: clear the key's override).
    pub overrides: Option<&'a Overrides>,
    /// How long it is kept in µs (`None`: with no end).
    pub for_us: Option<u64>,
    /// The memory store's clock in µs since the epoch, when given (Redis keeps time by `PX`).
    pub now_us: Option<u64>,
}

/// A change of one key's ban or list entry: what `Limiter::stand` (and `block`, `deny`, ...) sends to a
/// store.
#[derive(Debug, Clone, Copy)]
pub struct EntryChange<'a> {
    /// Key prefix (no braces).
    pub prefix: &'a str,
    /// The user key, any bytes.
    pub key: &'a [u8],
    /// What to put or remove.
    pub call: StandingCall,
    /// Explicit time in µs since the epoch; `None` lets the store use its own clock.
    pub now_us: Option<u64>,
}

pub(crate) mod sealed {
    /// Only ratelock's stores play its roles (their calls and replies are the scripts' contracts).
    pub trait Sealed {}
}

/// A store that keeps rate limits: every rule of a key checked (and for `hit`, spent) at once.
/// Implemented by [`MemoryStore`](super::MemoryStore), [`RedisStore`](super::RedisStore) (one server,
/// a Cluster or the master Sentinel names) and [`Store`](super::Store).
pub trait LimitStore: sealed::Sealed + Send + Sync {
    /// Checks the key's ban or list entry, then (and for `hit`, spends on) every rule of the request;
    /// one outcome per rule, and why.
    fn check(&self, request: &LimitRequest<'_>) -> impl Future<Output = Result<Verdict>> + Send;

    /// [`check`](Self::check) on the calling thread with no async runtime, when the store can (the
    /// memory store always; Redis over its blocking connection when that is free). `None`: use `check`.
    fn check_blocking(&self, request: &LimitRequest<'_>) -> Option<Result<Verdict>>;

    /// Forgets the state of every given rule for `key`.
    fn reset(&self, prefix: &str, key: &[u8], rules: &Rules) -> impl Future<Output = Result<()>> + Send;

    /// Gives back `request.cost` units of every rule of the request (where the algorithm can: see
    /// [`refund`](crate::algorithm::refund::refund)), then answers as a peek of that cost would.
    fn refund(&self, request: &LimitRequest<'_>) -> impl Future<Output = Result<Verdict>> + Send;

    /// Sets the key's override or clears it; true when one was set or cleared.
    fn set_override(&self, change: &OverrideChange<'_>) -> impl Future<Output = Result<bool>> + Send;

    /// Changes the key's ban or list entry; true when an entry was put or removed.
    fn stand(&self, change: &EntryChange<'_>) -> impl Future<Output = Result<bool>> + Send;
}

#[cfg(feature = "runtime")]
/// A store that holds distributed locks. Implemented by the memory store, Redis, a Redlock store
/// ([`RedlockStore`](super::redlock::RedlockStore)), [`Store`](super::Store) and
/// [`AnyLockStore`](super::AnyLockStore).
pub trait LockStore: sealed::Sealed + Send + Sync {
    /// One operation on the lock whose keys are `keys`.
    fn lock(&self, keys: &LockKeys, call: LockCall<'_>) -> impl Future<Output = Result<LockReply>> + Send;

    /// Reaches the store now: configuration errors and outages alike are returned.
    fn ping(&self) -> impl Future<Output = Result<()>> + Send;

    /// Starts listening for releases on `channel` (before trying, so no release is missed). Fails only
    /// for a refusal no retry mends (e.g. an ACL without SUBSCRIBE); an outage leaves a watch that is
    /// never woken, and the wait tries again at the holder's lease end.
    #[doc(hidden)]
    fn watch_releases(&self, channel: &[u8]) -> impl Future<Output = Result<ReleaseWatch>> + Send;
}

#[cfg(feature = "runtime")]
/// A store that also keeps the lock kinds that need one server's queues: semaphores, fair locks and
/// read-write locks. Implemented by the memory store, Redis and [`Store`](super::Store); not by Redlock.
pub trait LockKindStore: LockStore {
    /// One semaphore operation.
    fn semaphore(
        &self,
        keys: &SemaphoreKeys,
        call: SemaphoreCall<'_>,
    ) -> impl Future<Output = Result<SemaphoreReply>> + Send;

    /// One fair-lock operation. `now` (µs) replaces the store's clock, for tests that replay a timeline;
    /// `None` uses the store's clock (the server's, on Redis).
    fn fair_lock(
        &self,
        keys: &FairLockKeys,
        call: FairCall<'_>,
        now: Option<u64>,
    ) -> impl Future<Output = Result<FairReply>> + Send;

    /// One read-write-lock operation; `now` as for [`fair_lock`](Self::fair_lock).
    fn rw_lock(
        &self,
        keys: &RwLockKeys,
        call: RwCall<'_>,
        now: Option<u64>,
    ) -> impl Future<Output = Result<RwReply>> + Send;
}

#[cfg(feature = "runtime")]
/// What a waiter listens to: woken by every release of one lock.
#[doc(hidden)]
pub struct ReleaseWatch {
    pub(crate) source: WatchSource,
}

#[cfg(feature = "runtime")]
pub(crate) enum WatchSource {
    Memory(std::sync::Arc<tokio::sync::Notify>),
    #[cfg(feature = "redis")]
    Redis(super::redis::subscriber::Registration),
    /// Every server of a Redlock store.
    #[cfg(feature = "redis")]
    Redlock(super::redis::redlock_watch::RedlockWatch),
}

#[cfg(feature = "runtime")]
impl ReleaseWatch {
    pub(crate) fn notify(&self) -> &tokio::sync::Notify {
        match &self.source {
            WatchSource::Memory(notify) => notify,
            #[cfg(feature = "redis")]
            WatchSource::Redis(registration) => &registration.notify,
            #[cfg(feature = "redis")]
            WatchSource::Redlock(watch) => &watch.notify,
        }
    }

    /// [`notify`](Self::notify), shared.
    #[cfg(feature = "redis")]
    pub(crate) fn shared_notify(&self) -> std::sync::Arc<tokio::sync::Notify> {
        match &self.source {
            WatchSource::Memory(notify) => notify.clone(),
            WatchSource::Redis(registration) => registration.notify.clone(),
            WatchSource::Redlock(watch) => watch.notify.clone(),
        }
    }
}
