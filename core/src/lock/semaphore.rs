//! `Semaphore`: N permits per name, each a lease with a TTL that the scripts reclaim by server time when
//! its holder dies; permits renew and report loss like locks. `ConcurrencyLimiter` puts one semaphore
//! per key: at most N requests in flight per key (Stripe's concurrent-requests limiter).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::give_back::{release_in_background, Unheard, WaitEnd};
use super::guard::{Guard, Lease, Sealed};
use super::options::{check_lease, LockOptions};
use super::owner::ProcessOwner;
use super::run_to_end::run_to_end;
use super::wait::{self, Attempt};
use crate::algorithm::lease::{Extended, Released};
use crate::algorithm::permits::{PermitAcquired, SemaphoreCall, SemaphoreReply};
use crate::error::{Error, Result};
use crate::key::{check_key, check_prefix, SemaphoreKeys};
use crate::store::{LockKindStore, Store};

/// A distributed semaphore with `permits` permits. Options are those of locks (`reentrant` is ignored:
/// every acquire takes a new permit).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use ratelock::{Semaphore, Store};
/// let store = Store::connect("memory://", &Default::default()).await?;
/// let pool = Semaphore::new(&store, "db-connections", 2, Default::default())?;
/// let a = pool.try_acquire().await?.expect("1 of 2");
/// let b = pool.try_acquire().await?.expect("2 of 2");
/// assert!(pool.try_acquire().await?.is_none());
/// assert_eq!(pool.in_use().await?, 2);
/// a.release().await?;
/// assert!(pool.try_acquire().await?.is_some());
/// # drop(b);
/// # Ok::<(), ratelock::Error>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct Semaphore {
    shared: Arc<SemaphoreShared>,
}

struct SemaphoreShared {
    store: Store,
    keys: SemaphoreKeys,
    owner: Arc<ProcessOwner>,
    permits: u64,
    options: LockOptions,
    grants: Arc<AtomicU64>,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("permits", &self.shared.permits)
            .finish()
    }
}

impl Semaphore {
    /// A handle on semaphore `name` with `permits` permits.
    /// A name longer than [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES) (64 KiB) is an invalid argument (`name`).
    pub fn new(store: &Store, name: impl AsRef<[u8]>, permits: u64, options: LockOptions) -> Result<Self> {
        check_key("name", name.as_ref())?;
        check_options(permits, &options)?;
        let owner = Arc::new(ProcessOwner::new()?);
        Ok(Self::with_owner(
            store,
            name.as_ref(),
            permits,
            options,
            owner,
            Default::default(),
        ))
    }

    /// A handle whose permit ids are `<owner>:<n>`, `n` drawn from `grants` (shared by a limiter's keys).
    fn with_owner(
        store: &Store,
        name: &[u8],
        permits: u64,
        options: LockOptions,
        owner: Arc<ProcessOwner>,
        grants: Arc<AtomicU64>,
    ) -> Self {
        Semaphore {
            shared: Arc::new(SemaphoreShared {
                store: store.clone(),
                keys: SemaphoreKeys::new(&options.prefix, name),
                owner,
                permits,
                options,
                grants,
            }),
        }
    }

    /// Takes a permit if one is free.
    pub async fn try_acquire(&self) -> Result<Option<PermitGuard>> {
        Ok(match self.attempt(self.next_id(), Unheard::lone()).await? {
            Attempt::Got(guard) => Some(guard),
            Attempt::Busy(_) => None,
        })
    }

    /// Waits up to `timeout` for a permit, woken by releases and capped by the earliest lease's end.
    pub async fn acquire(&self, timeout: Duration) -> Result<PermitGuard> {
        wait::reported(&self.shared.options.hooks, "permit", self.wait(timeout)).await
    }

    /// A wait for one permit id: a try whose answer was lost may have been granted it, and the next
    /// try is granted the same permit again; a wait that ends without it, or is dropped, gives it back.
    async fn wait(&self, timeout: Duration) -> Result<PermitGuard> {
        let shared = &self.shared;
        let id = self.next_id();
        let unheard = Unheard::for_wait();
        let _end = WaitEnd::new(&unheard, || give_back_permit(shared.clone(), id.clone()));
        let granted = wait::until_granted(
            &shared.store,
            &shared.keys.channel,
            &shared.owner.token(),
            timeout,
            || self.attempt(id.clone(), unheard.clone()),
        )
        .await;
        if granted.is_ok() {
            unheard.settled();
        }
        granted
    }

    /// Permits in use now (leases not yet ended).
    pub async fn in_use(&self) -> Result<u64> {
        match self.shared.call(SemaphoreCall::State).await? {
            SemaphoreReply::State { in_use, .. } => Ok(in_use),
            other => Err(super::reply::unexpected(other)),
        }
    }

    /// The number of permits.
    pub fn permits(&self) -> u64 {
        self.shared.permits
    }

    fn next_id(&self) -> String {
        let n = self.shared.grants.fetch_add(1, Ordering::Relaxed);
        format!("{}:{n}", self.shared.owner.token())
    }

    /// One try for permit `id`, run to its end even when the caller stops waiting ([`run_to_end`]). A
    /// try whose answer was lost tells `unheard`, and gives the permit back itself when no wait is
    /// there to.
    async fn attempt(&self, id: String, unheard: Arc<Unheard>) -> Result<Attempt<PermitGuard>> {
        let shared = self.shared.clone();
        run_to_end(async move {
            let sent = Instant::now();
            let call = SemaphoreCall::Acquire {
                id: &id,
                limit: shared.permits,
                ttl_us: shared.options.ttl.as_micros() as u64,
            };
            let answer =
                (shared.call(call).await).and_then(|reply| reply_as!(reply, SemaphoreReply::Acquired));
            if unheard.try_must_give_back(&answer) {
                give_back_permit(shared.clone(), id.clone());
            }
            Ok(match answer? {
                PermitAcquired::Granted { .. } => Attempt::Got(permit_guard(shared.clone(), id, sent)),
                PermitAcquired::Full { next_free_us } => Attempt::Busy(Duration::from_micros(next_free_us)),
            })
        })
        .await
    }
}

impl SemaphoreShared {
    /// One call on this semaphore's keys.
    async fn call(&self, call: SemaphoreCall<'_>) -> Result<SemaphoreReply> {
        self.store.semaphore(&self.keys, call).await
    }

    /// One call answered by whether the permit was still held.
    async fn done(&self, call: SemaphoreCall<'_>) -> Result<bool> {
        reply_as!(self.call(call).await?, SemaphoreReply::Done)
    }
}

/// Gives back, in the background, permit `id` of `shared`'s semaphore (a release answered "not held"
/// when it was never granted).
fn give_back_permit(shared: Arc<SemaphoreShared>, id: String) {
    release_in_background(shared.options.ttl, move || {
        let (shared, id) = (shared.clone(), id.clone());
        async move { shared.done(SemaphoreCall::Release { id: &id }).await.map(drop) }
    });
}

/// One permit of a [`Semaphore`] (see [`PermitGuard`]).
#[derive(Clone)]
pub struct PermitLease {
    shared: Arc<SemaphoreShared>,
    id: String,
}

/// A held permit: [`Guard`] over a [`PermitLease`]. Release it with [`release`](Guard::release);
/// dropping it releases in the background.
pub type PermitGuard = Guard<PermitLease>;

impl std::fmt::Debug for PermitLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitLease").finish_non_exhaustive()
    }
}

fn permit_guard(shared: Arc<SemaphoreShared>, id: String, sent: Instant) -> PermitGuard {
    Guard::start(PermitLease { shared, id }, sent)
}

impl Sealed for PermitLease {}

impl Lease for PermitLease {
    fn options(&self) -> &LockOptions {
        &self.shared.options
    }

    fn what(&self) -> &'static str {
        "permit"
    }

    async fn extend(&self, ttl: Duration) -> Result<Extended> {
        let call = SemaphoreCall::Extend {
            id: &self.id,
            ttl_us: ttl.as_micros() as u64,
        };
        Ok(if self.shared.done(call).await? {
            Extended::Extended
        } else {
            Extended::Expired
        })
    }

    async fn release(&self) -> Result<Released> {
        Ok(
            if self.shared.done(SemaphoreCall::Release { id: &self.id }).await? {
                Released::Released
            } else {
                Released::NotHeld
            },
        )
    }

    fn release_in_memory(&self) {
        #[allow(irrefutable_let_patterns)]
        if let Store::Memory(store) = &self.shared.store {
            let release = SemaphoreCall::Release { id: &self.id };
            store.locks().semaphore(&self.shared.keys, release);
        }
    }
}

/// At most `limit` requests in flight per key: one [`Semaphore`] per key, sharing one store.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use ratelock::{ConcurrencyLimiter, Store};
/// let store = Store::connect("memory://", &Default::default()).await?;
/// let in_flight = ConcurrencyLimiter::new(&store, 1, Default::default())?;
/// let request = in_flight.try_acquire("tenant:acme").await?.expect("first request");
/// assert!(in_flight.try_acquire("tenant:acme").await?.is_none()); // 429 for the second
/// assert!(in_flight.try_acquire("tenant:other").await?.is_some());
/// request.release().await?;
/// # Ok::<(), ratelock::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct ConcurrencyLimiter {
    store: Store,
    limit: u64,
    options: LockOptions,
    owner: Arc<ProcessOwner>,
    grants: Arc<AtomicU64>,
}

impl ConcurrencyLimiter {
    /// At most `limit` in flight per key; `options.ttl` bounds how long a crashed request holds its slot.
    /// A key longer than [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES) (64 KiB) is an invalid argument (`key`).
    pub fn new(store: &Store, limit: u64, options: LockOptions) -> Result<Self> {
        check_options(limit, &options)?;
        Ok(ConcurrencyLimiter {
            store: store.clone(),
            limit,
            options,
            owner: Arc::new(ProcessOwner::new()?),
            grants: Default::default(),
        })
    }

    /// A slot for `key` if one is free.
    pub async fn try_acquire(&self, key: impl AsRef<[u8]>) -> Result<Option<PermitGuard>> {
        self.semaphore(key)?.try_acquire().await
    }

    /// Waits up to `timeout` for a slot for `key`.
    pub async fn acquire(&self, key: impl AsRef<[u8]>, timeout: Duration) -> Result<PermitGuard> {
        self.semaphore(key)?.acquire(timeout).await
    }

    /// Requests in flight for `key`.
    pub async fn in_flight(&self, key: impl AsRef<[u8]>) -> Result<u64> {
        self.semaphore(key)?.in_use().await
    }

    fn semaphore(&self, key: impl AsRef<[u8]>) -> Result<Semaphore> {
        check_key("key", key.as_ref())?;
        Ok(Semaphore::with_owner(
            &self.store,
            key.as_ref(),
            self.limit,
            self.options.clone(),
            self.owner.clone(),
            self.grants.clone(),
        ))
    }
}

fn check_options(permits: u64, options: &LockOptions) -> Result<()> {
    check_prefix(&options.prefix)?;
    if permits == 0 {
        return Err(Error::invalid_argument(
            "permits",
            "a semaphore needs at least 1 permit",
        ));
    }
    check_lease(options.ttl)
}
