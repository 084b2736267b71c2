//! `ReadWriteLock`: many readers or one writer, each hold its own lease with its own fencing token.
//! With writer preference (the default) a waiting writer holds back new readers; its mark is renewed
//! while it waits and lapses if it dies. Releases that may let someone in publish on the lock's channel.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::give_back::{Unheard, WaitEnd};
use super::options::LockOptions;
use super::queued_lease::{before_next_try, give_back_later, lease_guard, LeaseGuard, QueuedLock, Waiting};
use super::reply::unexpected;
use super::run_to_end::run_to_end;
use super::shared::RwShared;
use super::wait::{self, Attempt};
use crate::algorithm::rwlock::{RwCall, RwMode, RwReply};
use crate::error::Result;
use crate::key::RwLockKeys;
use crate::store::{LockKindStore, Store};

/// A distributed read-write lock. Every acquire is its own hold (`reentrant` is ignored); readers and
/// writers draw fencing tokens from one rising counter.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::time::Duration;
/// use ratelock::{ReadWriteLock, Store};
/// let store = Store::connect("memory://", &Default::default()).await?;
/// let config = ReadWriteLock::new(&store, "config", Default::default())?;
/// let a = config.acquire_read(Duration::from_secs(1)).await?;
/// let b = config.try_acquire_read().await?.expect("readers share");
/// assert!(config.try_acquire_write().await?.is_none());
/// a.release().await?;
/// b.release().await?;
/// let writer = config.try_acquire_write().await?.expect("no readers left");
/// assert!(writer.fencing_token() > 0);
/// # writer.release().await?;
/// # Ok::<(), ratelock::Error>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct ReadWriteLock {
    shared: Arc<RwShared>,
}

/// A read-write lock as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RwLockState {
    /// Live read holds.
    pub readers: u64,
    /// A writer holds the lock.
    pub writer: bool,
    /// The writer's fencing token (0 when none).
    pub writer_fence: u64,
    /// How long the writer's lease still runs (zero when none).
    pub writer_remaining: Duration,
    /// Writers waiting (writer preference).
    pub waiting_writers: u64,
    /// The last fencing token minted.
    pub last_fence: u64,
}

impl std::fmt::Debug for ReadWriteLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadWriteLock")
            .field("ttl", &self.shared.options.ttl)
            .field("prefer_writers", &self.shared.options.prefer_writers)
            .finish()
    }
}

impl ReadWriteLock {
    /// A handle on read-write lock `name` in `store`.
    /// A name longer than [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES) (64 KiB) is an invalid argument (`name`).
    pub fn new(store: &Store, name: impl AsRef<[u8]>, options: LockOptions) -> Result<Self> {
        let shared = RwShared::new(store, name.as_ref(), options, RwLockKeys::new)?;
        Ok(ReadWriteLock {
            shared: Arc::new(shared),
        })
    }

    /// A read hold if no writer holds (or, with writer preference, waits for) the lock.
    pub async fn try_acquire_read(&self) -> Result<Option<LeaseGuard>> {
        self.try_acquire(RwMode::Read).await
    }

    /// The write hold if nobody holds the lock. Never marks itself waiting.
    pub async fn try_acquire_write(&self) -> Result<Option<LeaseGuard>> {
        self.try_acquire(RwMode::Write).await
    }

    /// Waits up to `timeout` for a read hold ([`Error::WaitTimeout`](crate::Error::WaitTimeout) after).
    pub async fn acquire_read(&self, timeout: Duration) -> Result<LeaseGuard> {
        self.acquire(RwMode::Read, timeout).await
    }

    /// Waits up to `timeout` for the write hold. With writer preference, new readers are held back
    /// while it waits; giving up, failing or being dropped removes that mark.
    pub async fn acquire_write(&self, timeout: Duration) -> Result<LeaseGuard> {
        self.acquire(RwMode::Write, timeout).await
    }

    /// The lock as it stands.
    pub async fn state(&self) -> Result<RwLockState> {
        let shared = &self.shared;
        match shared.store.rw_lock(&shared.keys, RwCall::State, None).await? {
            RwReply::State {
                readers,
                writer_fence,
                writer_remaining_us,
                waiting_writers,
                last_fence,
            } => Ok(RwLockState {
                readers,
                writer: writer_fence != 0,
                writer_fence,
                writer_remaining: Duration::from_micros(writer_remaining_us),
                waiting_writers,
                last_fence,
            }),
            other => Err(unexpected(other)),
        }
    }

    async fn try_acquire(&self, mode: RwMode) -> Result<Option<LeaseGuard>> {
        let id: Arc<str> = Arc::from(self.shared.next_id());
        Ok(self.attempt(id, mode, false, Unheard::lone()).await?.ok())
    }

    async fn acquire(&self, mode: RwMode, timeout: Duration) -> Result<LeaseGuard> {
        let what = match mode {
            RwMode::Read => "read hold",
            RwMode::Write => "write hold",
        };
        wait::reported(&self.shared.options.hooks, what, self.wait_for(mode, timeout)).await
    }

    /// A wait for one grant id. A try whose answer was lost may have been granted it: the wait keeps
    /// that grant before its next try, and gives it back when it ends without a grant or is dropped.
    async fn wait_for(&self, mode: RwMode, timeout: Duration) -> Result<LeaseGuard> {
        let id: Arc<str> = Arc::from(self.shared.next_id());
        let held = QueuedLock::Rw(self.shared.clone(), id.clone(), mode);
        let marks = mode == RwMode::Write && self.shared.options.prefer_writers;
        let mark = Waiting::new(marks.then(|| held.clone()));
        let unheard = Unheard::for_wait();
        let _end = WaitEnd::new(&unheard, || give_back_later(held.clone()));
        let shared = &self.shared;
        let granted = wait::until_granted(
            &shared.store,
            &shared.keys.channel,
            &shared.owner.token(),
            timeout,
            || async {
                if let Some(guard) = before_next_try(&held, &unheard).await? {
                    return Ok(Attempt::Got(guard));
                }
                Ok(
                    match self.attempt(id.clone(), mode, true, unheard.clone()).await? {
                        Ok(guard) => Attempt::Got(guard),
                        Err(RwReply::Busy { retry_us }) => Attempt::Busy(Duration::from_micros(retry_us)),
                        Err(other) => return Err(unexpected(other)),
                    },
                )
            },
        )
        .await;
        if granted.is_ok() {
            unheard.settled();
        }
        mark.settle(granted).await
    }

    /// One try for grant `id` in `mode` (`queue`: marking a waiting writer), run to its end even when
    /// the caller stops waiting ([`run_to_end`]): its guard, or the reply that granted nothing. A try
    /// whose answer was lost tells `unheard`, and gives the grant back itself when no wait is there to.
    async fn attempt(
        &self,
        id: Arc<str>,
        mode: RwMode,
        queue: bool,
        unheard: Arc<Unheard>,
    ) -> Result<std::result::Result<LeaseGuard, RwReply>> {
        let lock = self.clone();
        run_to_end(async move {
            let sent = Instant::now();
            let answer = lock.call(&id, mode, queue).await;
            if unheard.try_must_give_back(&answer) {
                give_back_later(QueuedLock::Rw(lock.shared.clone(), id.clone(), mode));
            }
            Ok(match answer? {
                RwReply::Granted { fence } => Ok(lock.guard(id, mode, fence, sent)),
                other => Err(other),
            })
        })
        .await
    }

    async fn call(&self, id: &str, mode: RwMode, queue: bool) -> Result<RwReply> {
        let shared = &self.shared;
        let call = RwCall::Acquire {
            id,
            mode,
            ttl_us: shared.options.ttl.as_micros() as u64,
            waiter_ttl_us: shared.options.waiter_ttl.as_micros() as u64,
            prefer_writers: shared.options.prefer_writers,
            queue,
        };
        shared.store.rw_lock(&shared.keys, call, None).await
    }

    fn guard(&self, id: Arc<str>, mode: RwMode, fence: u64, sent: Instant) -> LeaseGuard {
        lease_guard(QueuedLock::Rw(self.shared.clone(), id, mode), fence, sent)
    }
}
