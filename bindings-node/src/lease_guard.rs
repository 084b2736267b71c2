//! One hold of a `FairLock` or of a `ReadWriteLock` (either side) for Node: the core's `LeaseGuard`
//! behind `LeaseGuard` in `lib/lease-guard.js`, and the lease options both lock kinds are made with.

use napi::bindgen_prelude::Function;
use napi_derive::napi;

use crate::convert;
use crate::guard_slot::GuardSlot;

/// One hold of a fair lock or of a read-write lock.
#[napi]
pub struct NativeLeaseGuard {
    slot: GuardSlot<ratelock::HeldLease>,
    fencing_token: u64,
}

impl NativeLeaseGuard {
    pub(crate) fn new(guard: ratelock::LeaseGuard) -> Self {
        NativeLeaseGuard {
            fencing_token: guard.fencing_token(),
            slot: GuardSlot::new(guard),
        }
    }
}

#[napi]
impl NativeLeaseGuard {
    /// The fencing token of this hold.
    #[napi(getter)]
    pub fn fencing_token(&self) -> f64 {
        self.fencing_token as f64
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

    /// Calls `callback()` once if the hold is lost before it is given back. Unlike `waitLost`, the watch
    /// does not keep the process alive.
    #[napi]
    pub fn on_lost(&self, callback: Function<(), ()>) -> napi::Result<()> {
        self.slot.on_lost(callback)
    }

    /// Moves the end of this hold's lease to `ttlMs` from now; `false` if the hold is gone.
    #[napi]
    pub async fn extend(&self, ttl_ms: f64) -> napi::Result<bool> {
        Ok(self.slot.extend(ttl_ms).await? == Some(ratelock::Extended::Extended))
    }

    /// Gives the hold back; `false` if it had been lost (or given back) before.
    #[napi]
    pub async fn release(&self) -> napi::Result<bool> {
        Ok(self.slot.release().await? == Some(ratelock::Released::Released))
    }
}

/// The core's lock options from the fields a fair or read-write lock is made with.
pub(crate) fn lease_options(
    ttl_ms: Option<f64>,
    waiter_ttl_ms: Option<f64>,
    auto_renew: Option<bool>,
    prefix: Option<&str>,
) -> napi::Result<ratelock::LockOptions> {
    let mut settings = ratelock::LockOptions::default()
        .with_ttl(convert::millis("ttlMs", ttl_ms.unwrap_or(30_000.0))?)
        .with_auto_renew(auto_renew.unwrap_or(true));
    if let Some(waiter_ttl_ms) = waiter_ttl_ms {
        settings = settings.with_waiter_ttl(convert::millis("waiterTtlMs", waiter_ttl_ms)?);
    }
    if let Some(prefix) = prefix {
        settings = settings.with_prefix(prefix);
    }
    Ok(settings)
}
