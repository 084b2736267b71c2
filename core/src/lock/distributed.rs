//! `DistributedLock`: a lease with an owner token per handle, a fencing token per grant, optional
//! re-entry, waiting with a deadline (woken by releases, capped by the holder's lease) and a guard that
//! renews itself and says at once when the lock was lost.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::lock_lease::{lock_guard, LockGuard};
use super::options::{check_lease, LockOptions};
use super::orphan::give_back_orphan;
use super::own_grants::begin_try;
use super::owner::ProcessOwner;
use super::run_to_end::run_to_end;
use super::shared::DistributedShared;
use super::wait::{self, Attempt};
use crate::algorithm::lease::{Acquired, LockCall, LockReply};
use crate::error::Result;
use crate::key::{check_key, check_prefix, LockKeys};
use crate::store::{AnyLockStore, LockState};

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
    shared: Arc<DistributedShared>,
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
            shared: Arc::new(DistributedShared {
                keys: LockKeys::new(&options.prefix, name),
                store: store.into(),
                owner: ProcessOwner::new()?,
                name: String::from_utf8_lossy(name).into_owned(),
                options,
                own: Arc::default(),
            }),
        })
    }

    /// This handle's owner token in this process (32 hex digits): a handle made before a fork has
    /// another in the child, which is another owner.
    pub fn owner_token(&self) -> String {
        self.shared.owner.token().to_string()
    }

    /// Takes the lock if it is free (or re-enters it); `None` if someone else holds it.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        Ok(match self.attempt().await? {
            Attempt::Got(guard) => Some(guard),
            Attempt::Busy(_) => None,
        })
    }

    /// Waits up to `timeout` for the lock. Releases wake waiters at once (Redis pub/sub, one subscriber
    /// connection per store); each wait is also capped at the holder's remaining lease, so a missed
    /// message cannot hang a waiter. Fails with [`Error::WaitTimeout`](crate::Error::WaitTimeout) when
    /// the deadline passes.
    pub async fn acquire(&self, timeout: Duration) -> Result<LockGuard> {
        wait::reported(&self.shared.options.hooks, "lock", self.wait(timeout)).await
    }

    async fn wait(&self, timeout: Duration) -> Result<LockGuard> {
        let shared = &self.shared;
        wait::until_granted(
            &shared.store,
            &shared.keys.channel,
            &shared.owner.token(),
            timeout,
            || self.attempt(),
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

    /// One try, run to its end even when the caller stops waiting ([`run_to_end`]). A try that fails
    /// after its request may have reached the store leaves the handle to give back any grant it was
    /// made but never heard of ([`give_back_orphan`]).
    async fn attempt(&self) -> Result<Attempt<LockGuard>> {
        let shared = self.shared.clone();
        run_to_end(async move {
            let in_flight = begin_try(&shared.own);
            let sent = Instant::now();
            // This process's token: a handle made before a fork is another owner in the child.
            let owner = shared.owner.token();
            let call = LockCall::Acquire {
                owner: &owner,
                ttl_us: shared.options.ttl.as_micros() as u64,
                reentrant: shared.options.reentrant,
            };
            let answer = (shared.call(call).await).and_then(|reply| reply_as!(reply, LockReply::Acquired));
            let attempt = match answer {
                Ok(Acquired::Granted { fence, holds }) => {
                    Attempt::Got(lock_guard(shared.clone(), owner.clone(), fence, holds, sent))
                }
                Ok(Acquired::Busy { remaining_us }) => Attempt::Busy(Duration::from_micros(remaining_us)),
                Err(err) => {
                    drop(in_flight);
                    if err.may_have_run() {
                        give_back_orphan(&shared, owner);
                    }
                    return Err(err);
                }
            };
            drop(in_flight);
            Ok(attempt)
        })
        .await
    }
}
