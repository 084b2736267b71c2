//! `LockOptions`: how every lock kind behaves (its lease and renewal, re-entry, key prefix, waiters'
//! places, hooks), and the bounds a lease and a waiter's place are checked against.

use std::time::Duration;

use crate::error::{Error, Result};

/// How a lock behaves ([`DistributedLock`](super::DistributedLock), and every other kind's handle).
/// Start from `LockOptions::default()`.
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
    /// How long a waiter's place lasts unless renewed (a [`FairLock`](super::FairLock) waiter, or a
    /// writer waiting on a [`ReadWriteLock`](super::ReadWriteLock) with writer preference). Waiters
    /// renew at half of it while they wait, so a waiter that died holds up the queue for at most this
    /// long. Default 5 s.
    pub waiter_ttl: Duration,
    /// [`ReadWriteLock`](super::ReadWriteLock) only: a waiting writer holds back new readers, so
    /// writers are not starved. Default on.
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
