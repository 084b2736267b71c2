//! `AnyGuard`: a [`Guard`] of any lock kind behind one type, as a binding hands it to another language.
//! The rules every binding needs are kept here once: calls on one guard take turns; a release that
//! fails on the way (the store could not be reached) keeps the guard, unrenewed, so the caller can
//! retry; a guard given back answers [`Error::LockNotOwned`] to every later call; an extension or
//! release that finds the lease gone is [`Error::LockLost`]. Dropping the last clone drops the guard,
//! which gives the lease back in the background.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Mutex};

use super::guard::{Guard, Lease};
use super::lost::{LostReason, LostSignal};
use crate::algorithm::lease::{Extended, Released};
use crate::error::{Error, Result};

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A held [`Guard`] of some lease kind, its kind erased.
trait ErasedGuard: Send + Sync {
    fn extend(&self, ttl: Duration) -> BoxFuture<'_, Result<Extended>>;
    fn try_release(&mut self) -> BoxFuture<'_, Result<Released>>;
}

impl<L: Lease> ErasedGuard for Guard<L> {
    fn extend(&self, ttl: Duration) -> BoxFuture<'_, Result<Extended>> {
        Box::pin(Guard::extend(self, ttl))
    }

    fn try_release(&mut self) -> BoxFuture<'_, Result<Released>> {
        Box::pin(Guard::try_release(self))
    }
}

/// A guard of any lock kind (a lock grant, a semaphore permit, a fair or read-write hold), shared by
/// its clones; the futures it returns own what they need, so they can run on any task.
///
/// # Examples
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use ratelock::{AnyGuard, DistributedLock, Error, LockOptions, Store};
///
/// let store = Store::connect("memory://", &Default::default()).await?;
/// let lock = DistributedLock::new(&store, "report", LockOptions::default())?;
/// let guard = AnyGuard::new(lock.try_acquire().await?.expect("free"));
/// assert_eq!(guard.what(), "lock");
/// assert!(guard.fencing_token().is_some());
/// assert_eq!(guard.release().await?.as_str(), "released");
/// assert!(matches!(guard.release().await, Err(Error::LockNotOwned(_))));
/// # Ok::<(), ratelock::Error>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct AnyGuard {
    /// The guard while held; `None` once given back.
    slot: Arc<Mutex<Option<Box<dyn ErasedGuard>>>>,
    what: &'static str,
    fencing_token: Option<u64>,
    ttl: Duration,
    lost: LostSignal,
    /// Turns true when the guard is given back (a waiter for the lost signal then stops waiting).
    released: Arc<watch::Sender<bool>>,
}

impl std::fmt::Debug for AnyGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnyGuard")
            .field("what", &self.what)
            .field("fencing_token", &self.fencing_token)
            .field("lost", &self.is_lost())
            .field("released", &self.is_released())
            .finish()
    }
}

impl AnyGuard {
    /// `guard`, its kind erased.
    pub fn new<L: Lease>(guard: Guard<L>) -> Self {
        AnyGuard {
            what: guard.what(),
            fencing_token: guard.lease.fence(),
            ttl: guard.lease.options().ttl,
            lost: guard.lost_signal(),
            released: Arc::new(watch::channel(false).0),
            slot: Arc::new(Mutex::new(Some(Box::new(guard)))),
        }
    }

    /// What the guard holds, for messages: `"lock"`, `"permit"`, `"fair lock"`, `"read hold"` or
    /// `"write hold"`.
    pub fn what(&self) -> &'static str {
        self.what
    }

    /// The grant's fencing token (`None` for a semaphore permit).
    pub fn fencing_token(&self) -> Option<u64> {
        self.fencing_token
    }

    /// The lease length the lock was made with: what [`extend`](Self::extend) extends by when not told.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// True once the lease is known lost.
    pub fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// Why the lease was lost, or `None` while it is not.
    pub fn lost_reason(&self) -> Option<LostReason> {
        self.lost.reason()
    }

    /// True once the guard was given back.
    pub fn is_released(&self) -> bool {
        *self.released.borrow()
    }

    /// Waits until the lease is lost, the guard is given back or `timeout` passes (`None`: no limit);
    /// answers whether it was lost (at once for a guard given back, which can no longer be lost).
    pub fn wait_lost(&self, timeout: Option<Duration>) -> impl Future<Output = bool> + Send + 'static {
        let lost = self.lost.clone();
        let mut released = self.released.subscribe();
        async move {
            let either = async {
                tokio::select! {
                    () = lost.wait() => {}
                    _ = released.wait_for(|given_back| *given_back) => {}
                }
            };
            match timeout {
                Some(timeout) => drop(tokio::time::timeout(timeout, either).await),
                None => either.await,
            }
            lost.is_lost()
        }
    }

    /// Moves the end of the lease to `ttl` from now (`None`: [`ttl`](Self::ttl)). Never takes the lease
    /// again: `LockLost` if it is gone, `LockNotOwned` once the guard was given back.
    pub fn extend(&self, ttl: Option<Duration>) -> impl Future<Output = Result<()>> + Send + 'static {
        let this = self.clone();
        async move {
            let slot = this.slot.lock().await;
            let guard = slot.as_ref().ok_or_else(|| this.given_back())?;
            guard.extend(ttl.unwrap_or(this.ttl)).await?.or_lost(this.what)
        }
    }

    /// Gives the lease back: `Released` or `StillHeld` (a re-entrant lock keeps other holds);
    /// `LockLost` if it had been lost, `LockNotOwned` once given back. A release that fails on the way
    /// keeps the guard, so it can be called again; any other answer gives it up.
    pub fn release(&self) -> impl Future<Output = Result<Released>> + Send + 'static {
        let this = self.clone();
        async move {
            let mut slot = this.slot.lock().await;
            let guard = slot.as_mut().ok_or_else(|| this.given_back())?;
            let answer = guard.try_release().await;
            if !matches!(&answer, Err(err) if err.is_store_failure()) {
                *slot = None;
                this.released.send_replace(true);
            }
            answer?.or_lost(this.what)
        }
    }

    /// The error of a call on a guard given back already.
    fn given_back(&self) -> Error {
        Error::LockNotOwned(format!("this {} was released already", self.what))
    }
}
