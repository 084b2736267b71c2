//! `ReadWriteLock` for Node: the native handle behind `ReadWriteLock` in `lib/read-write-lock.js`.
//! Each read or write acquire gives a `NativeLeaseGuard`; sharing, exclusion and writer preference are
//! the core's.

use napi::bindgen_prelude::{Buffer, Either};
use napi_derive::napi;

use crate::convert;
use crate::errors::to_js;
use crate::lease_guard::{lease_options, NativeLeaseGuard};
use crate::lock::wait_limit;
use crate::runtime::guarded;

/// How a read-write lock is made (all optional).
#[napi(object)]
pub struct ReadWriteLockOptions {
    /// `redis://...`; none: the embedded memory store.
    pub url: Option<String>,
    /// Each hold's lease length in milliseconds (default 30000).
    pub ttl_ms: Option<f64>,
    /// How long a waiting writer's mark lasts unless renewed, in milliseconds (default 5000).
    pub waiter_ttl_ms: Option<f64>,
    /// A waiting writer holds back new readers (default true).
    pub prefer_writers: Option<bool>,
    /// Renew each hold's lease while held (default true).
    pub auto_renew: Option<bool>,
    /// Key prefix, `rl` by default.
    pub prefix: Option<String>,
    /// Each store call's timeout in milliseconds (default 1000).
    pub timeout_ms: Option<f64>,
}

/// A read-write lock as it stands.
#[napi(object)]
pub struct RwLockState {
    /// Live read holds.
    pub readers: f64,
    /// A writer holds the lock.
    pub writer: bool,
    /// The writer's fencing token (0 when none).
    pub writer_fence: f64,
    /// Milliseconds the writer's lease still runs (0 when none).
    pub writer_remaining_ms: f64,
    /// Writers waiting (writer preference).
    pub waiting_writers: f64,
    /// The last fencing token minted.
    pub last_fence: f64,
}

/// The native read-write lock handle behind `ReadWriteLock` in `index.js`.
#[napi]
pub struct NativeReadWriteLock {
    inner: ratelock::ReadWriteLock,
}

/// Opens (or reuses) the store and makes a read-write lock handle.
#[napi]
pub async fn connect_read_write_lock(
    name: Either<String, Buffer>,
    options: ReadWriteLockOptions,
) -> napi::Result<NativeReadWriteLock> {
    let name = convert::key(name);
    guarded(async move {
        let timeout = convert::millis("timeoutMs", options.timeout_ms.unwrap_or(1000.0))?;
        let settings = lease_options(
            options.ttl_ms,
            options.waiter_ttl_ms,
            options.auto_renew,
            options.prefix.as_deref(),
        )?
        .with_prefer_writers(options.prefer_writers.unwrap_or(true));
        let store = crate::stores::shared(options.url, timeout).await.map_err(to_js)?;
        let inner = ratelock::ReadWriteLock::new(&store, name, settings).map_err(to_js)?;
        Ok(NativeReadWriteLock { inner })
    })
    .await
}

#[napi]
impl NativeReadWriteLock {
    /// A read hold if no writer holds (or, with writer preference, waits for) the lock; `null` otherwise.
    #[napi]
    pub async fn try_acquire_read(&self) -> napi::Result<Option<NativeLeaseGuard>> {
        let inner = self.inner.clone();
        guarded(async move {
            Ok(inner
                .try_acquire_read()
                .await
                .map_err(to_js)?
                .map(NativeLeaseGuard::new))
        })
        .await
    }

    /// Waits up to `timeoutMs` (none: no limit) for a read hold; rejects with WAIT_TIMEOUT.
    #[napi]
    pub async fn acquire_read(&self, timeout_ms: Option<f64>) -> napi::Result<NativeLeaseGuard> {
        let wait = wait_limit(timeout_ms)?;
        let inner = self.inner.clone();
        guarded(async move {
            Ok(NativeLeaseGuard::new(
                inner.acquire_read(wait).await.map_err(to_js)?,
            ))
        })
        .await
    }

    /// The write hold if nobody holds the lock; `null` otherwise (never marks itself waiting).
    #[napi]
    pub async fn try_acquire_write(&self) -> napi::Result<Option<NativeLeaseGuard>> {
        let inner = self.inner.clone();
        guarded(async move {
            Ok(inner
                .try_acquire_write()
                .await
                .map_err(to_js)?
                .map(NativeLeaseGuard::new))
        })
        .await
    }

    /// Waits up to `timeoutMs` (none: no limit) for the write hold; rejects with WAIT_TIMEOUT.
    #[napi]
    pub async fn acquire_write(&self, timeout_ms: Option<f64>) -> napi::Result<NativeLeaseGuard> {
        let wait = wait_limit(timeout_ms)?;
        let inner = self.inner.clone();
        guarded(async move {
            Ok(NativeLeaseGuard::new(
                inner.acquire_write(wait).await.map_err(to_js)?,
            ))
        })
        .await
    }

    /// The lock as it stands: readers, writer, waiting writers, last token.
    #[napi]
    pub async fn state(&self) -> napi::Result<RwLockState> {
        let inner = self.inner.clone();
        guarded(async move {
            let state = inner.state().await.map_err(to_js)?;
            Ok(RwLockState {
                readers: state.readers as f64,
                writer: state.writer,
                writer_fence: state.writer_fence as f64,
                writer_remaining_ms: convert::to_millis(state.writer_remaining),
                waiting_writers: state.waiting_writers as f64,
                last_fence: state.last_fence as f64,
            })
        })
        .await
    }
}
