//! `FairLock` for Node: the native handle behind `FairLock` in `lib/fair-lock.js`. Each acquire gives
//! a `NativeLeaseGuard`; the queue, its order and the tokens are the core's.

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;

use crate::convert;
use crate::errors::to_js;
use crate::lease_guard::{lease_options, NativeLeaseGuard};
use crate::lock::wait_limit;
use crate::runtime::guarded;

/// How a fair lock is made (all optional).
#[napi(object)]
pub struct FairLockOptions {
    /// `redis://...`; none: the embedded memory store.
    pub url: Option<String>,
    /// Each hold's lease length in milliseconds (default 30000).
    pub ttl_ms: Option<f64>,
    /// How long a waiter's place lasts unless renewed, in milliseconds (default 5000).
    pub waiter_ttl_ms: Option<f64>,
    /// Renew each hold's lease while held (default true).
    pub auto_renew: Option<bool>,
    /// Key prefix, `rl` by default.
    pub prefix: Option<String>,
    /// Each store call's timeout in milliseconds (default 1000).
    pub timeout_ms: Option<f64>,
}

/// A fair lock as it stands.
#[napi(object)]
pub struct FairLockState {
    /// Someone holds the lock.
    pub held: bool,
    /// Milliseconds the holder's lease still runs (0 when free).
    pub remaining_ms: f64,
    /// The holder's fencing token (0 when free).
    pub holder_fence: f64,
    /// The last fencing token minted.
    pub last_fence: f64,
    /// Waiters in the queue.
    pub waiting: f64,
}

/// The native fair lock handle behind `FairLock` in `index.js`.
#[napi]
pub struct NativeFairLock {
    inner: ratelock::FairLock,
}

/// Opens (or reuses) the store and makes a fair lock handle.
#[napi]
pub async fn connect_fair_lock(
    name: Either<String, Buffer>,
    options: FairLockOptions,
) -> napi::Result<NativeFairLock> {
    let name = convert::key(name);
    guarded(async move {
        let timeout = convert::millis("timeoutMs", options.timeout_ms.unwrap_or(1000.0))?;
        let settings = lease_options(
            options.ttl_ms,
            options.waiter_ttl_ms,
            options.auto_renew,
            options.prefix.as_deref(),
        )?;
        let store = crate::stores::shared(options.url, timeout).await.map_err(to_js)?;
        let inner = ratelock::FairLock::new(&store, name, settings).map_err(to_js)?;
        Ok(NativeFairLock { inner })
    })
    .await
}

#[napi]
impl NativeFairLock {
    /// Takes the lock if it is free and nobody waits; `null` otherwise (never queues).
    #[napi]
    pub async fn try_acquire(&self) -> napi::Result<Option<NativeLeaseGuard>> {
        let inner = self.inner.clone();
        guarded(async move {
            Ok(inner
                .try_acquire()
                .await
                .map_err(to_js)?
                .map(NativeLeaseGuard::new))
        })
        .await
    }

    /// Queues and waits up to `timeoutMs` (none: no limit) for its turn; rejects with WAIT_TIMEOUT.
    #[napi]
    pub async fn acquire(&self, timeout_ms: Option<f64>) -> napi::Result<NativeLeaseGuard> {
        let wait = wait_limit(timeout_ms)?;
        let inner = self.inner.clone();
        guarded(async move { Ok(NativeLeaseGuard::new(inner.acquire(wait).await.map_err(to_js)?)) }).await
    }

    /// The lock as it stands: holder, lease, last token, queue length.
    #[napi]
    pub async fn state(&self) -> napi::Result<FairLockState> {
        let inner = self.inner.clone();
        guarded(async move {
            let state = inner.state().await.map_err(to_js)?;
            Ok(FairLockState {
                held: state.held,
                remaining_ms: convert::to_millis(state.remaining),
                holder_fence: state.holder_fence as f64,
                last_fence: state.last_fence as f64,
                waiting: state.waiting as f64,
            })
        })
        .await
    }

    /// Whether anyone holds the lock now.
    #[napi]
    pub async fn is_locked(&self) -> napi::Result<bool> {
        let inner = self.inner.clone();
        guarded(async move { inner.is_locked().await.map_err(to_js) }).await
    }
}
