//! `DistributedLock` for Node: the native handle (one owner token) and the guard of one hold, with
//! outcomes as strings; `index.js` keeps the holds, throws the typed errors and builds `using()`.

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;

use crate::convert;
use crate::errors::to_js;
use crate::guard_slot::GuardSlot;
use crate::runtime::guarded;

/// How a lock is made (all optional).
#[napi(object)]
pub struct LockOptions {
    /// `redis://...`; none: the embedded memory store.
    pub url: Option<String>,
    /// Lease length in milliseconds (default 30000).
    pub ttl_ms: Option<f64>,
    /// Renew the lease while held (default true).
    pub auto_renew: Option<bool>,
    /// Let the same handle take the lock again while holding it (default false).
    pub reentrant: Option<bool>,
    /// Key prefix, `rl` by default.
    pub prefix: Option<String>,
    /// Each store call's timeout in milliseconds (default 1000).
    pub timeout_ms: Option<f64>,
}

/// The native lock handle behind `DistributedLock` in `index.js`.
#[napi]
pub struct NativeLock {
    inner: ratelock::DistributedLock,
}

/// One hold of a lock.
#[napi]
pub struct NativeLockGuard {
    slot: GuardSlot<ratelock::LockLease>,
    fencing_token: u64,
    holds: u64,
}

/// Opens (or reuses) the store and makes a lock handle with its own owner token.
#[napi]
pub async fn connect_lock(name: Either<String, Buffer>, options: LockOptions) -> napi::Result<NativeLock> {
    let name = convert::key(name);
    guarded(async move {
        let timeout = convert::millis("timeoutMs", options.timeout_ms.unwrap_or(1000.0))?;
        let settings = lock_options(&options)?;
        let store = crate::stores::shared_lock_store(options.url, timeout)
            .await
            .map_err(to_js)?;
        let inner = ratelock::DistributedLock::new(&store, name, settings).map_err(to_js)?;
        Ok(NativeLock { inner })
    })
    .await
}

#[napi]
impl NativeLock {
    /// Takes the lock if free; `null` if someone else holds it.
    #[napi]
    pub async fn try_acquire(&self) -> napi::Result<Option<NativeLockGuard>> {
        let inner = self.inner.clone();
        guarded(async move {
            Ok(inner
                .try_acquire()
                .await
                .map_err(to_js)?
                .map(NativeLockGuard::new))
        })
        .await
    }

    /// Waits up to `timeoutMs` (none: no limit) for the lock; rejects with WAIT_TIMEOUT.
    #[napi]
    pub async fn acquire(&self, timeout_ms: Option<f64>) -> napi::Result<NativeLockGuard> {
        let wait = wait_limit(timeout_ms)?;
        let inner = self.inner.clone();
        guarded(async move { Ok(NativeLockGuard::new(inner.acquire(wait).await.map_err(to_js)?)) }).await
    }

    /// Whether anyone holds the lock now.
    #[napi]
    pub async fn is_locked(&self) -> napi::Result<bool> {
        let inner = self.inner.clone();
        guarded(async move { inner.is_locked().await.map_err(to_js) }).await
    }

    /// Milliseconds left on the current lease, or `null` when free.
    #[napi]
    pub async fn remaining_ttl_ms(&self) -> napi::Result<Option<f64>> {
        let inner = self.inner.clone();
        guarded(async move {
            Ok(inner
                .remaining_ttl()
                .await
                .map_err(to_js)?
                .map(convert::to_millis))
        })
        .await
    }

    /// The current holder's fencing token, or `null` when free.
    #[napi]
    pub async fn current_fencing_token(&self) -> napi::Result<Option<f64>> {
        let inner = self.inner.clone();
        guarded(async move { Ok(inner.fencing_token().await.map_err(to_js)?.map(|t| t as f64)) }).await
    }

    /// Deletes the lease whoever holds it; `true` if it was held.
    #[napi]
    pub async fn force_release(&self) -> napi::Result<bool> {
        let inner = self.inner.clone();
        guarded(async move { inner.force_release().await.map_err(to_js) }).await
    }

    /// This handle's owner token.
    #[napi(getter)]
    pub fn owner_token(&self) -> String {
        self.inner.owner_token().to_owned()
    }
}

impl NativeLockGuard {
    fn new(guard: ratelock::LockGuard) -> Self {
        NativeLockGuard {
            fencing_token: guard.fencing_token(),
            holds: guard.holds(),
            slot: GuardSlot::new(guard),
        }
    }
}

#[napi]
impl NativeLockGuard {
    /// The fencing token of this hold.
    #[napi(getter)]
    pub fn fencing_token(&self) -> f64 {
        self.fencing_token as f64
    }

    /// How many times the handle holds the lock (re-entry), counting this hold.
    #[napi(getter)]
    pub fn holds(&self) -> f64 {
        self.holds as f64
    }

    /// True once the hold is known lost.
    #[napi]
    pub fn is_lost(&self) -> bool {
        self.slot.is_lost()
    }

    /// Resolves `true` when the hold is lost, `false` when it is given back first.
    #[napi]
    pub async fn wait_lost(&self) -> bool {
        self.slot.wait_lost().await
    }

    /// Moves the lease's end to `ttlMs` from now: "extended", "expired", "held_by_other" or "not_held".
    #[napi]
    pub async fn extend(&self, ttl_ms: f64) -> napi::Result<&'static str> {
        Ok(match self.slot.extend(ttl_ms).await? {
            None => "not_held",
            Some(ratelock::Extended::Extended) => "extended",
            Some(ratelock::Extended::Expired) => "expired",
            Some(_) => "held_by_other",
        })
    }

    /// Gives the hold back: "released", "still_held", "not_held" or "held_by_other". A release that
    /// fails on the transport keeps the hold (and its watchdog), so the caller can retry.
    #[napi]
    pub async fn release(&self) -> napi::Result<&'static str> {
        Ok(match self.slot.release().await? {
            Some(ratelock::Released::Released) => "released",
            Some(ratelock::Released::StillHeld { .. }) => "still_held",
            None | Some(ratelock::Released::NotHeld) => "not_held",
            _ => "held_by_other",
        })
    }
}

/// A wait limit in milliseconds (none: no limit).
pub(crate) fn wait_limit(timeout_ms: Option<f64>) -> napi::Result<std::time::Duration> {
    timeout_ms.map_or(Ok(std::time::Duration::MAX), |ms| {
        convert::millis("timeoutMs", ms)
    })
}

fn lock_options(options: &LockOptions) -> napi::Result<ratelock::LockOptions> {
    let mut settings = ratelock::LockOptions::default()
        .with_ttl(convert::millis("ttlMs", options.ttl_ms.unwrap_or(30_000.0))?)
        .with_auto_renew(options.auto_renew.unwrap_or(true))
        .with_reentrant(options.reentrant.unwrap_or(false));
    if let Some(prefix) = &options.prefix {
        settings = settings.with_prefix(prefix.as_str());
    }
    Ok(settings)
}
