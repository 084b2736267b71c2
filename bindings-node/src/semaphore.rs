//! `Semaphore` for Node: the native handle and the guard of one permit; `index.js` gives each
//! `acquire()` its own permit object and builds `using()`.

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;

use crate::convert;
use crate::errors::to_js;
use crate::guard_slot::GuardSlot;
use crate::lock::wait_limit;
use crate::runtime::guarded;

/// How a semaphore is made (all optional).
#[napi(object)]
pub struct SemaphoreOptions {
    /// `redis://...`; none: the embedded memory store.
    pub url: Option<String>,
    /// Each permit's lease length in milliseconds (default 30000).
    pub ttl_ms: Option<f64>,
    /// Renew each permit's lease while held (default true).
    pub auto_renew: Option<bool>,
    /// Key prefix, `rl` by default.
    pub prefix: Option<String>,
    /// Each store call's timeout in milliseconds (default 1000).
    pub timeout_ms: Option<f64>,
}

/// The native semaphore handle behind `Semaphore` in `index.js`.
#[napi]
pub struct NativeSemaphore {
    inner: ratelock::Semaphore,
}

/// One permit.
#[napi]
pub struct NativePermit {
    slot: GuardSlot<ratelock::PermitLease>,
}

/// Opens (or reuses) the store and makes a semaphore of `permits` permits.
#[napi]
pub async fn connect_semaphore(
    name: Either<String, Buffer>,
    permits: f64,
    options: SemaphoreOptions,
) -> napi::Result<NativeSemaphore> {
    let name = convert::key(name);
    guarded(async move {
        let permits = convert::count("permits", permits)?;
        let timeout = convert::millis("timeoutMs", options.timeout_ms.unwrap_or(1000.0))?;
        let mut settings = ratelock::LockOptions::default()
            .with_ttl(convert::millis("ttlMs", options.ttl_ms.unwrap_or(30_000.0))?)
            .with_auto_renew(options.auto_renew.unwrap_or(true));
        if let Some(prefix) = &options.prefix {
            settings = settings.with_prefix(prefix.as_str());
        }
        let store = crate::stores::shared(options.url, timeout).await.map_err(to_js)?;
        let inner = ratelock::Semaphore::new(&store, name, permits, settings).map_err(to_js)?;
        Ok(NativeSemaphore { inner })
    })
    .await
}

#[napi]
impl NativeSemaphore {
    /// Takes a permit if one is free; `null` otherwise.
    #[napi]
    pub async fn try_acquire(&self) -> napi::Result<Option<NativePermit>> {
        let inner = self.inner.clone();
        guarded(async move { Ok(inner.try_acquire().await.map_err(to_js)?.map(NativePermit::new)) }).await
    }

    /// Waits up to `timeoutMs` (none: no limit) for a permit; rejects with WAIT_TIMEOUT.
    #[napi]
    pub async fn acquire(&self, timeout_ms: Option<f64>) -> napi::Result<NativePermit> {
        let wait = wait_limit(timeout_ms)?;
        let inner = self.inner.clone();
        guarded(async move { Ok(NativePermit::new(inner.acquire(wait).await.map_err(to_js)?)) }).await
    }

    /// Permits in use now.
    #[napi]
    pub async fn in_use(&self) -> napi::Result<f64> {
        let inner = self.inner.clone();
        guarded(async move { Ok(inner.in_use().await.map_err(to_js)? as f64) }).await
    }
}

impl NativePermit {
    fn new(guard: ratelock::PermitGuard) -> Self {
        NativePermit {
            slot: GuardSlot::new(guard),
        }
    }
}

#[napi]
impl NativePermit {
    /// True once the permit is known lost.
    #[napi]
    pub fn is_lost(&self) -> bool {
        self.slot.is_lost()
    }

    /// Resolves `true` when the permit is lost, `false` when it is given back first.
    #[napi]
    pub async fn wait_lost(&self) -> bool {
        self.slot.wait_lost().await
    }

    /// Moves the end of this permit's lease to `ttlMs` from now; `false` if the permit is gone.
    #[napi]
    pub async fn extend(&self, ttl_ms: f64) -> napi::Result<bool> {
        Ok(self.slot.extend(ttl_ms).await? == Some(ratelock::Extended::Extended))
    }

    /// Gives the permit back; `false` if it had been lost (or given back) before.
    #[napi]
    pub async fn release(&self) -> napi::Result<bool> {
        Ok(self.slot.release().await? == Some(ratelock::Released::Released))
    }
}
