//! `DistributedLock`: a lease with an owner token per handle, a fencing token per grant, optional
//! re-entry, waiting with a deadline (woken by releases, capped by the holder's lease) and a guard that
//! renews itself and says at once when the lock was lost.

/// The answer inside `$reply` when it is the `$variant` the call expects; a protocol error otherwise
/// (a store answering another call's kind of reply is a bug, never an outage).
macro_rules! reply_as {
    ($reply:expr, $variant:path) => {
        match $reply {
            $variant(answer) => Ok(answer),
            other => Err($crate::lock::unexpected(other)),
        }
    };
}

mod any_guard;
mod fair;
mod guard;
mod hold_events;
mod lease_end;
mod lock_lease;
mod lost;
mod queued_lease;
mod rwlock;
mod semaphore;
mod shared;
mod upkeep;
mod wait;
mod watchdog;
mod watchdog_start;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

pub use any_guard::AnyGuard;
pub use fair::{FairLock, FairLockState};
pub use guard::{Guard, Lease};
use lock_lease::lock_guard;
pub use lock_lease::{LockGuard, LockLease};
pub use lost::{LostReason, LostSignal};
pub use queued_lease::{HeldLease, LeaseGuard};
pub use rwlock::{ReadWriteLock, RwLockState};
pub use semaphore::{ConcurrencyLimiter, PermitGuard, PermitLease, Semaphore};

use crate::algorithm::lease::{Acquired, LockCall, LockReply};
pub use crate::algorithm::lease::{Extended, Released};
use crate::error::{Error, Result};
use crate::key::{check_key, check_prefix, LockKeys};
use crate::store::{AnyLockStore, LockState, LockStore};
use wait::Attempt;

/// How a [`DistributedLock`] behaves. Start from `LockOptions::default()`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LockOptions {
    /// Length of the lease (renewed at a third of it when `auto_renew` is on). Default 30 s.
    pub ttl: Duration,
    /// Renew the lease while the guard lives (the watchdog). Default on.
    pub auto_renew: bool,
    /// Let the same handle acquire again while it holds the lock (holds are counted). Default off.
    pub reentrant: bool,
    /// Key prefix (no braces). Default `"rl"`.
    pub prefix: String,
    /// How long a waiter's place lasts unless renewed (a [`FairLock`] waiter, or a writer waiting on a
    /// [`ReadWriteLock`] with writer preference). Waiters renew at half of it while they wait, so a
    /// waiter that died holds up the queue for at most this long. Default 5 s.
    pub waiter_ttl: Duration,
    /// [`ReadWriteLock`] only: a waiting writer holds back new readers, so writers are not starved.
    /// Default on.
    pub prefer_writers: bool,
    /// What sees every event of this lock's holds: see [`Hook`](crate::hook::Hook). None by default.
    pub hooks: crate::hook::Hooks,
}

impl LockOptions {
    /// The same options with another lease length.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = ratelock::LockOptions::default().with_ttl(Duration::from_secs(5)).with_reentrant(true);
    /// assert_eq!(options.ttl, Duration::from_secs(5));
    /// ```
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The same options with auto-renew on or off.
    pub fn with_auto_renew(mut self, auto_renew: bool) -> Self {
        self.auto_renew = auto_renew;
        self
    }

    /// The same options with re-entry on or off.
    pub fn with_reentrant(mut self, reentrant: bool) -> Self {
        self.reentrant = reentrant;
        self
    }

    /// The same options with another key prefix.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The same options with another waiter place length (fair and read-write locks).
    pub fn with_waiter_ttl(mut self, waiter_ttl: Duration) -> Self {
        self.waiter_ttl = waiter_ttl;
        self
    }

    /// The same options with writer preference on or off (read-write locks).
    pub fn with_prefer_writers(mut self, prefer_writers: bool) -> Self {
        self.prefer_writers = prefer_writers;
        self
    }

    /// The same options with `hook` attached after any already attached: it sees every wait, grant,
    /// release and loss of this lock's holds.
    pub fn with_hook(mut self, hook: std::sync::Arc<dyn crate::hook::Hook>) -> Self {
        self.hooks = self.hooks.with(hook);
        self
    }
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            ttl: Duration::from_secs(30),
            auto_renew: true,
            reentrant: false,
            prefix: "rl".to_owned(),
            waiter_ttl: Duration::from_secs(5),
            prefer_writers: true,
            hooks: crate::hook::Hooks::default(),
        }
    }
}

/// A distributed lock. Each handle has its own 128-bit owner token (clones share it); each grant has a
/// fencing token that rises strictly, which the protected resource should check.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::time::Duration;
/// use ratelock::{DistributedLock, LockOptions, Store};
///
/// let store = Store::connect("memory://", &Default::default()).await?;
/// let lock = DistributedLock::new(&store, "orders:42", LockOptions::default())?;
/// let guard = lock.acquire(Duration::from_secs(5)).await?;
/// let token = guard.fencing_token(); // send it with every write to the protected resource
/// assert!(lock.is_locked().await?);
///
/// let other = DistributedLock::new(&store, "orders:42", LockOptions::default())?;
/// assert!(other.try_acquire().await?.is_none());
/// guard.release().await?;
/// let next = other.try_acquire().await?.expect("free now");
/// assert!(next.fencing_token() > token);
/// # next.release().await?;
/// # Ok::<(), ratelock::Error>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct DistributedLock {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) store: AnyLockStore,
    pub(crate) keys: LockKeys,
    pub(crate) owner: String,
    pub(crate) options: LockOptions,
    name: String,
}

impl std::fmt::Debug for DistributedLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributedLock")
            .field("name", &self.shared.name)
            .field("ttl", &self.shared.options.ttl)
            .finish()
    }
}

impl DistributedLock {
    /// A handle on lock `name` in `store` (a [`Store`](crate::Store) or an [`AnyLockStore`], by
    /// reference or by value), with a fresh random owner token.
    /// A name longer than [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES) (64 KiB) is an invalid argument (`name`).
    pub fn new(store: impl Into<AnyLockStore>, name: impl AsRef<[u8]>, options: LockOptions) -> Result<Self> {
        check_key("name", name.as_ref())?;
        check_prefix(&options.prefix)?;
        check_lease(options.ttl)?;
        let name = name.as_ref();
        Ok(DistributedLock {
            shared: Arc::new(Shared {
                keys: LockKeys::new(&options.prefix, name),
                store: store.into(),
                owner: owner_token()?,
                name: String::from_utf8_lossy(name).into_owned(),
                options,
            }),
        })
    }

    /// This handle's owner token (32 hex digits).
    pub fn owner_token(&self) -> &str {
        &self.shared.owner
    }

    /// Takes the lock if it is free (or re-enters it); `None` if someone else holds it.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        let sent = Instant::now();
        match self.attempt().await? {
            Acquired::Granted { fence, holds } => {
                Ok(Some(lock_guard(self.shared.clone(), fence, holds, sent)))
            }
            Acquired::Busy { .. } => Ok(None),
        }
    }

    /// Waits up to `timeout` for the lock. Releases wake waiters at once (Redis pub/sub, one subscriber
    /// connection per store); each wait is also capped at the holder's remaining lease, so a missed
    /// message cannot hang a waiter. Fails with [`Error::WaitTimeout`] when the deadline passes.
    pub async fn acquire(&self, timeout: Duration) -> Result<LockGuard> {
        wait::reported(&self.shared.options.hooks, "lock", self.wait(timeout)).await
    }

    async fn wait(&self, timeout: Duration) -> Result<LockGuard> {
        let shared = &self.shared;
        wait::until_granted(
            &shared.store,
            &shared.keys.channel,
            &shared.owner,
            timeout,
            || async {
                let sent = Instant::now();
                Ok(match self.attempt().await? {
                    Acquired::Granted { fence, holds } => {
                        Attempt::Got(lock_guard(shared.clone(), fence, holds, sent))
                    }
                    Acquired::Busy { remaining_us } => Attempt::Busy(Duration::from_micros(remaining_us)),
                })
            },
        )
        .await
    }

    /// Whether anyone holds the lock now.
    pub async fn is_locked(&self) -> Result<bool> {
        Ok(self.state().await?.held)
    }

    /// How long the current lease still runs (`None` when the lock is free).
    pub async fn remaining_ttl(&self) -> Result<Option<Duration>> {
        let state = self.state().await?;
        Ok(state.held.then(|| Duration::from_micros(state.remaining_us)))
    }

    /// The current holder's fencing token (`None` when the lock is free).
    pub async fn fencing_token(&self) -> Result<Option<u64>> {
        let state = self.state().await?;
        Ok(state.held.then_some(state.holder_fence))
    }

    /// The lock as it stands: holder, lease, last token minted.
    pub async fn state(&self) -> Result<LockState> {
        self.shared.state().await
    }

    /// Deletes the lease whoever holds it (an operator's tool); the holder's guard will see it lost.
    pub async fn force_release(&self) -> Result<bool> {
        reply_as!(
            self.shared.call(LockCall::ForceRelease).await?,
            LockReply::ForceReleased
        )
    }

    async fn attempt(&self) -> Result<Acquired> {
        let shared = &self.shared;
        let call = LockCall::Acquire {
            owner: &shared.owner,
            ttl_us: shared.options.ttl.as_micros() as u64,
            reentrant: shared.options.reentrant,
        };
        reply_as!(shared.call(call).await?, LockReply::Acquired)
    }
}

impl Shared {
    /// One call on this lock's keys.
    pub(crate) async fn call(&self, call: LockCall<'_>) -> Result<LockReply> {
        self.store.lock(&self.keys, call).await
    }

    /// The lock as it stands.
    pub(crate) async fn state(&self) -> Result<LockState> {
        reply_as!(self.call(LockCall::State).await?, LockReply::State)
    }
}

/// Longest accepted lease: 366 days (keeps every sum of µs far below 2^53 in Lua and u64 in Rust).
pub const MAX_LEASE: Duration = Duration::from_secs(366 * 24 * 3600);

/// A lease must last from 3 ms (a watchdog renews at a third of it) to [`MAX_LEASE`].
pub(crate) fn check_lease(ttl: Duration) -> Result<()> {
    if ttl < Duration::from_millis(3) || ttl > MAX_LEASE {
        return Err(Error::invalid_argument(
            "ttl",
            format!("a lease must last from 3 ms to 366 days, not {ttl:?}"),
        ));
    }
    Ok(())
}

/// A waiter's place must last from 10 ms to [`MAX_LEASE`] (waiters renew it at half its length).
pub(crate) fn check_waiter_ttl(waiter_ttl: Duration) -> Result<()> {
    if waiter_ttl < Duration::from_millis(10) || waiter_ttl > MAX_LEASE {
        return Err(Error::invalid_argument(
            "waiter_ttl",
            format!("a waiter's place must last from 10 ms to 366 days, not {waiter_ttl:?}"),
        ));
    }
    Ok(())
}

/// A store reply of the wrong kind for the call that was made (a bug or a foreign script): a protocol
/// error, which no failure policy covers.
pub(crate) fn unexpected(reply: impl std::fmt::Debug) -> Error {
    Error::Protocol(format!("unexpected lock reply: {reply:?}"))
}

/// 128 bits from the operating system's CSPRNG, as hex.
pub(crate) fn owner_token() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::StoreUnavailable(format!("no randomness for an owner token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A small xorshift generator for retry jitter (not for secrets), seeded from the owner token.
pub(crate) struct Jitter(u64);

impl Jitter {
    pub(crate) fn new(owner: &str) -> Self {
        let seed = u64::from_str_radix(&owner[..16], 16).unwrap_or(0x9e37_79b9_7f4a_7c15);
        Jitter(seed | 1)
    }

    pub(crate) fn up_to(&mut self, max: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let cap = max.min(Duration::from_millis(20)).as_micros() as u64;
        Duration::from_micros(if cap == 0 { 0 } else { self.0 % cap })
    }
}
