//! `FairLock`: a distributed lock handed out first come, first served. Waiters queue; each renews its
//! place while it waits (a dead waiter's place lapses after `waiter_ttl`), a free lock goes only to the
//! head of the queue, and a release wakes only that one waiter (its own channel).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::give_back::{Unheard, WaitEnd};
use super::options::LockOptions;
use super::queued_lease::{before_next_try, give_back_later, lease_guard, LeaseGuard, QueuedLock, Waiting};
use super::reply::unexpected;
use super::run_to_end::run_to_end;
use super::shared::FairShared;
use super::wait::{self, Attempt};
use crate::algorithm::fair::{FairCall, FairReply};
use crate::error::Result;
use crate::key::FairLockKeys;
use crate::store::{LockKindStore, Store};

/// A fair distributed lock: grants go in the order the waiting `acquire` calls arrived, across every
/// process. Each acquire is its own grant (`reentrant` is ignored), with a fencing token from a counter
/// that only rises.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::time::Duration;
/// use ratelock::{FairLock, Store};
/// let store = Store::connect("memory://", &Default::default()).await?;
/// let lock = FairLock::new(&store, "payouts", Default::default())?;
/// let first = lock.acquire(Duration::from_secs(1)).await?;
/// assert!(lock.try_acquire().await?.is_none());
/// let token = first.fencing_token();
/// first.release().await?;
/// let next = lock.try_acquire().await?.expect("free, nobody waiting");
/// assert!(next.fencing_token() > token);
/// # next.release().await?;
/// # Ok::<(), ratelock::Error>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct FairLock {
    shared: Arc<FairShared>,
}

/// A fair lock as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FairLockState {
    /// Someone holds the lock.
    pub held: bool,
    /// How long the holder's lease still runs (zero when free).
    pub remaining: Duration,
    /// The holder's fencing token (0 when free).
    pub holder_fence: u64,
    /// The last fencing token minted.
    pub last_fence: u64,
    /// Waiters in the queue.
    pub waiting: u64,
}

impl std::fmt::Debug for FairLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FairLock")
            .field("ttl", &self.shared.options.ttl)
            .finish()
    }
}

impl FairLock {
    /// A handle on fair lock `name` in `store`.
    /// A name longer than [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES) (64 KiB) is an invalid argument (`name`).
    pub fn new(store: &Store, name: impl AsRef<[u8]>, options: LockOptions) -> Result<Self> {
        let shared = FairShared::new(store, name.as_ref(), options, FairLockKeys::new)?;
        Ok(FairLock {
            shared: Arc::new(shared),
        })
    }

    /// Takes the lock if it is free and nobody is waiting; never queues.
    pub async fn try_acquire(&self) -> Result<Option<LeaseGuard>> {
        let id: Arc<str> = Arc::from(self.shared.next_id());
        Ok(self.attempt(id, false, Unheard::lone()).await?.ok())
    }

    /// Queues for the lock and waits up to `timeout` for its turn ([`Error::WaitTimeout`](crate::Error::WaitTimeout) after).
    /// A waiter that gives up, fails or is dropped leaves the queue.
    pub async fn acquire(&self, timeout: Duration) -> Result<LeaseGuard> {
        let hooks = &self.shared.options.hooks;
        wait::reported(hooks, "fair lock", self.wait_for_turn(timeout)).await
    }

    /// A wait for one grant id. A try whose answer was lost may have been granted it: the wait keeps
    /// that grant before its next try, and gives it back when it ends without a grant or is dropped.
    async fn wait_for_turn(&self, timeout: Duration) -> Result<LeaseGuard> {
        let id: Arc<str> = Arc::from(self.shared.next_id());
        let held = QueuedLock::Fair(self.shared.clone(), id.clone());
        let place = Waiting::new(Some(held.clone()));
        let unheard = Unheard::for_wait();
        let _end = WaitEnd::new(&unheard, || give_back_later(held.clone()));
        let channel = self.shared.keys.wake_channel(&id);
        let granted = wait::until_granted(
            &self.shared.store,
            &channel,
            &self.shared.owner.token(),
            timeout,
            || async {
                if let Some(guard) = before_next_try(&held, &unheard).await? {
                    return Ok(Attempt::Got(guard));
                }
                Ok(match self.attempt(id.clone(), true, unheard.clone()).await? {
                    Ok(guard) => Attempt::Got(guard),
                    Err(FairReply::Busy { retry_us, .. }) => Attempt::Busy(Duration::from_micros(retry_us)),
                    Err(other) => return Err(unexpected(other)),
                })
            },
        )
        .await;
        if granted.is_ok() {
            unheard.settled();
        }
        place.settle(granted).await
    }

    /// The lock as it stands: holder, lease, last token, queue length.
    pub async fn state(&self) -> Result<FairLockState> {
        let shared = &self.shared;
        match shared
            .store
            .fair_lock(&shared.keys, FairCall::State, None)
            .await?
        {
            FairReply::State {
                remaining_us,
                holder_fence,
                last_fence,
                waiting,
            } => Ok(FairLockState {
                held: holder_fence != 0,
                remaining: Duration::from_micros(remaining_us),
                holder_fence,
                last_fence,
                waiting,
            }),
            other => Err(unexpected(other)),
        }
    }

    /// Whether anyone holds the lock now.
    pub async fn is_locked(&self) -> Result<bool> {
        Ok(self.state().await?.held)
    }

    /// One try for grant `id` (`queue`: keeping a place in the queue), run to its end even when the
    /// caller stops waiting ([`run_to_end`]): its guard, or the reply that granted nothing. A try whose
    /// answer was lost tells `unheard`, and gives the grant back itself when no wait is there to.
    async fn attempt(
        &self,
        id: Arc<str>,
        queue: bool,
        unheard: Arc<Unheard>,
    ) -> Result<std::result::Result<LeaseGuard, FairReply>> {
        let lock = self.clone();
        run_to_end(async move {
            let sent = Instant::now();
            let answer = lock.call(&id, queue).await;
            if unheard.try_must_give_back(&answer) {
                give_back_later(QueuedLock::Fair(lock.shared.clone(), id.clone()));
            }
            Ok(match answer? {
                FairReply::Granted { fence } => Ok(lock.guard(id, fence, sent)),
                other => Err(other),
            })
        })
        .await
    }

    async fn call(&self, id: &str, queue: bool) -> Result<FairReply> {
        let shared = &self.shared;
        let call = FairCall::Acquire {
            id,
            ttl_us: shared.options.ttl.as_micros() as u64,
            waiter_ttl_us: shared.options.waiter_ttl.as_micros() as u64,
            queue,
        };
        shared.store.fair_lock(&shared.keys, call, None).await
    }

    fn guard(&self, id: impl Into<Arc<str>>, fence: u64, sent: Instant) -> LeaseGuard {
        lease_guard(QueuedLock::Fair(self.shared.clone(), id.into()), fence, sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreOptions;

    /// A wait keeps a grant its lost answer made (`before_next_try`). Its tries after the lost one may
    /// have queued its own id meanwhile (the holder is its own id, so the store queued it): that place,
    /// left at the head, kept the next waiter waiting `waiter_ttl` after the release.
    #[tokio::test]
    async fn a_kept_grant_leaves_no_place_of_its_own_in_the_queue() {
        let store = Store::new("memory://", &StoreOptions::default()).unwrap();
        let lock = FairLock::new(&store, "kept", LockOptions::default()).unwrap();
        let granted = match lock.call("first", true).await.unwrap() {
            FairReply::Granted { fence } => fence,
            other => panic!("the free lock was not granted: {other:?}"),
        };
        // The wait's next try, after the lost answer, queues its own id; a later waiter queues behind.
        for id in ["first", "later"] {
            let busy = lock.call(id, true).await.unwrap();
            assert!(matches!(busy, FairReply::Busy { .. }), "{busy:?}");
        }
        let unheard = Unheard::for_wait();
        assert!(!unheard.try_must_give_back::<()>(&Err(crate::Error::Timeout(Duration::from_millis(1)))));
        let held = QueuedLock::Fair(lock.shared.clone(), Arc::from("first"));
        let kept = before_next_try(&held, &unheard)
            .await
            .unwrap()
            .expect("the wait keeps the grant its lost answer made");
        assert_eq!(kept.fencing_token(), granted);
        assert_eq!(
            lock.state().await.unwrap().waiting,
            1,
            "the kept grant's own place is still queued"
        );
        kept.release().await.unwrap();
        let next = lock.call("later", true).await.unwrap();
        assert!(
            matches!(next, FairReply::Granted { .. }),
            "the later waiter waits on a place nobody holds: {next:?}"
        );
    }
}
