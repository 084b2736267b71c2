//! What the four native lock handles (`NativeLock`, `NativeSemaphore`, `NativeFairLock`,
//! `NativeReadWriteLock`) share: the options they are made with, opening the store, calling the core
//! on the runtime, and the `lock_handle!` macro that declares each handle class, its `connect...`
//! function and its acquire methods from one body.
//!
//! Why a macro and not one class over an enum of kinds: napi-rs classes cannot be generic, and the
//! handles' method sets differ (`state` of a fair lock and of a read-write lock are different objects, a
//! read-write lock acquires on two sides, only a lock has an owner token). One class over an enum would
//! declare every method for every kind and fail at run time for the kinds without it, and its
//! generated types would say so to nobody. The macro keeps one typed class per kind while each shared
//! method is written once; a kind's own queries follow in its own `#[napi] impl` block.

use std::future::Future;
use std::time::Duration;

use napi_derive::napi;

use crate::convert;
use crate::errors::{to_js, Result};
use crate::runtime::guarded;
use crate::stores::StoreSettings;

/// How a lock of any kind is made (all optional; what a kind does not use is not given by
/// `lib/`). The core's one `LockOptions`, plus where the store is.
#[napi(object, object_to_js = false)]
pub struct LockSettings {
    /// Where the keys live.
    pub store: StoreSettings,
    /// Each hold's lease length in milliseconds (default 30000).
    pub ttl_ms: Option<f64>,
    /// Renew each hold's lease while held (default true).
    pub auto_renew: Option<bool>,
    /// A lock only: let the same handle take it again while holding it (default false).
    pub reentrant: Option<bool>,
    /// A fair lock, a read-write lock: how long a waiter's place lasts unless renewed, in milliseconds
    /// (default 5000).
    pub waiter_ttl_ms: Option<f64>,
    /// A read-write lock only: a waiting writer holds back new readers (default true).
    pub prefer_writers: Option<bool>,
    /// Called with every measurement (`lib/otel.js`'s `Metrics` passes its own `record`).
    #[napi(
        ts_type = "(name: string, value: number, attributes: Record<string, string>, dropped: number) => void"
    )]
    pub metrics: Option<crate::metrics::Record>,
}

impl LockSettings {
    /// The core's lock options: its defaults, with what was given.
    fn options(&mut self) -> Result<ratelock::LockOptions> {
        let mut options = ratelock::LockOptions::default();
        if let Some(ms) = self.ttl_ms {
            options = options.with_ttl(convert::millis("ttlMs", ms)?);
        }
        if let Some(auto_renew) = self.auto_renew {
            options = options.with_auto_renew(auto_renew);
        }
        if let Some(reentrant) = self.reentrant {
            options = options.with_reentrant(reentrant);
        }
        if let Some(ms) = self.waiter_ttl_ms {
            options = options.with_waiter_ttl(convert::millis("waiterTtlMs", ms)?);
        }
        if let Some(prefer_writers) = self.prefer_writers {
            options = options.with_prefer_writers(prefer_writers);
        }
        if let Some(prefix) = &self.store.prefix {
            options = options.with_prefix(prefix.as_str());
        }
        if let Some(record) = self.metrics.take() {
            options = options.with_hook(crate::metrics::hook_of(record));
        }
        Ok(options)
    }
}

/// The checked lock options of `settings` and where the store they name comes from (the kind takes it
/// as the store of every role, or a `DistributedLock` as a lock store, Redlock too; no I/O).
pub(crate) fn open(
    mut settings: LockSettings,
) -> Result<(crate::stores::StoreChoice, ratelock::LockOptions)> {
    let (store, options) = (settings.store.options()?, settings.options()?);
    Ok((
        crate::stores::StoreChoice::new(settings.store.url, store),
        options,
    ))
}

/// A wait limit in milliseconds: none or `Infinity`, no limit; `0`, a wait that ends at once (one try,
/// then WAIT_TIMEOUT), as Python's `timeout=0`; else a positive, finite number.
pub(crate) fn wait_limit(timeout_ms: Option<f64>) -> Result<Duration> {
    match timeout_ms {
        None => Ok(Duration::MAX),
        Some(ms) if ms == f64::INFINITY => Ok(Duration::MAX),
        Some(0.0) => Ok(Duration::ZERO),
        Some(ms) => convert::millis("timeoutMs", ms),
    }
}

/// `call` on a clone of the core handle `inner`, on the runtime: a panic is caught and a core error
/// becomes its coded JavaScript error.
pub(crate) async fn ask<H, T, F>(inner: &H, call: impl FnOnce(H) -> F) -> Result<T>
where
    H: Clone,
    F: Future<Output = ratelock::Result<T>>,
{
    let inner = inner.clone();
    guarded(async move { call(inner).await.map_err(to_js) }).await
}

/// Declares a native lock handle over a core lock type: the class (the core handle and its lease
/// length, the default of each hold's `extend`), its `connect...` function (optionally with one
/// more argument, converted before the store is opened), and per acquire pair a `try...` method
/// (a `NativeGuard` or `null`) and a waiting one (rejects with WAIT_TIMEOUT). What each kind's acquire
/// does (queueing, sharing) is the core's, documented there and in `lib/`.
///
/// The class doc is given as `#[doc = "..."]`: a `///` comment passed through `macro_rules!` reaches
/// napi-rs as a raw string literal, and its `r"` would show in `native.d.ts`.
macro_rules! lock_handle {
    (
        $(#[$class_doc:meta])*
        $class:ident($core:ty) by $connect:ident($($arg:ident: $arg_type:ty => $checked:expr)?) = $make:expr;
        acquires $($try:ident / $wait:ident),+;
    ) => {
        $(#[$class_doc])*
        #[napi_derive::napi]
        pub struct $class {
            inner: $core,
        }

        /// Opens (or reuses) the store and makes the handle (`lib/` calls it on first use).
        #[napi_derive::napi]
        pub fn $connect(
            env: &napi::Env,
            name: napi::bindgen_prelude::Either<String, napi::bindgen_prelude::Buffer>,
            $($arg: $arg_type,)?
            settings: $crate::lock_handle::LockSettings,
        ) -> Result<napi::bindgen_prelude::PromiseRaw<'_, $class>> {
            let name = $crate::convert::key(name);
            $crate::runtime::promise_of(env, async move {
                $(let $arg = $checked;)?
                let (store, options) = $crate::lock_handle::open(settings)?;
                let inner = ($make)(store, name, options).map_err($crate::errors::to_js)?;
                Ok($class { inner })
            })
        }

        #[napi_derive::napi]
        impl $class {
            $(
                /// A hold if the core grants one at once; `null` otherwise (never waits).
                #[napi(ts_return_type = "Promise<NativeGuard | null>")]
                pub fn $try<'env>(
                    &self,
                    env: &'env napi::Env,
                ) -> Result<
                    napi::bindgen_prelude::PromiseRaw<'env, Option<$crate::guard::NativeGuard>>,
                > {
                    let lock = self.inner.clone();
                    $crate::runtime::promise_of(env, async move {
                        let take = |lock: $core| async move { lock.$try().await };
                        let guard = $crate::lock_handle::ask(&lock, take).await?;
                        Ok(guard.map($crate::guard::NativeGuard::new))
                    })
                }

                /// Waits up to `timeoutMs` (none: no limit) for a hold; rejects with WAIT_TIMEOUT, also
                /// when `abort` (an `AbortSignal`'s switch) is turned on first.
                #[napi(ts_return_type = "Promise<NativeGuard>")]
                pub fn $wait<'env>(
                    &self,
                    env: &'env napi::Env,
                    timeout_ms: Option<f64>,
                    abort: Option<&$crate::abort_switch::NativeAbortSwitch>,
                ) -> Result<napi::bindgen_prelude::PromiseRaw<'env, $crate::guard::NativeGuard>> {
                    let lock = self.inner.clone();
                    let watched = $crate::abort_switch::Watched::of(abort);
                    $crate::runtime::promise_of(env, async move {
                        // Checked in the future: a bad argument rejects, as every error does.
                        let wait = $crate::lock_handle::wait_limit(timeout_ms)?;
                        let take = |lock: $core| async move { lock.$wait(wait).await };
                        let guard = watched.or_abort($crate::lock_handle::ask(&lock, take)).await?;
                        Ok($crate::guard::NativeGuard::new(guard))
                    })
                }
            )+
        }
    };
}

pub(crate) use lock_handle;
