//! Redlock: one lock over N independent Redis servers (`redlock://host:port,host:port,...`). Every
//! operation goes to all servers at once, each bounded by the store's timeout. A grant needs a majority
//! and a remaining validity of `ttl − elapsed − drift` (drift = 1% of the ttl + 2 ms); a failed attempt
//! is released everywhere. The fencing token is the largest of the servers' tokens; each server's own
//! token is kept so release and extend show every server the grant it made.
//!
//! It plays one role, [`LockStore`]: a limiter, semaphore, fair or read-write lock needs one Redis, and
//! giving them a Redlock store does not compile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::future::join_all;

use super::connection::node_urls;
use super::lease_calls::LeaseCalls;
use super::RedisStore;
use crate::algorithm::lease::LockState;
use crate::algorithm::lease::{Acquired, Extended, LockCall, LockReply, Released};
use crate::error::{Error, Result};
use crate::key::LockKeys;
use crate::store::options::StoreOptions;
use crate::store::roles::sealed::Sealed;
use crate::store::roles::{LockStore, ReleaseWatch};

/// The URL scheme (servers after it, comma-separated).
pub(crate) const REDLOCK_SCHEME: &str = "redlock://";

/// N independent servers holding one lock by majority. Cheap to clone. It plays one role, the
/// [`LockStore`]: a [`DistributedLock`](crate::DistributedLock) takes it,
///
/// ```
/// # fn doc(redlock: ratelock::store::redlock::RedlockStore) -> ratelock::Result<()> {
/// let lock = ratelock::DistributedLock::new(&redlock, "payouts", Default::default())?;
/// # drop(lock); Ok(()) }
/// ```
///
/// and what needs one server's state does not compile with it: a limiter,
///
/// ```compile_fail,E0308
/// # fn doc(redlock: ratelock::store::redlock::RedlockStore) -> ratelock::Result<()> {
/// let limiter = ratelock::Limiter::with_store(redlock, Default::default())?;
/// # drop(limiter); Ok(()) }
/// ```
///
/// or a semaphore (and so a fair or read-write lock).
///
/// ```compile_fail,E0308
/// # fn doc(redlock: ratelock::store::redlock::RedlockStore) -> ratelock::Result<()> {
/// let pool = ratelock::Semaphore::new(&redlock, "pool", 2, Default::default())?;
/// # drop(pool); Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedlockStore {
    shared: Arc<Shared>,
}

struct Shared {
    /// `None`: the server could not be reached when the store was made (it never counts).
    nodes: Vec<RedisStore>,
    grants: Mutex<Grants>,
}

/// Each server's own fencing token of a live grant (`None` where it did not grant), by (lease key, owner).
type Grants = HashMap<(Vec<u8>, String), Vec<Option<u64>>>;

impl Sealed for RedlockStore {}

/// Every call goes to all servers at once and is answered by the majority (see the functions below).
impl LockStore for RedlockStore {
    fn lock(
        &self,
        keys: &LockKeys,
        call: LockCall<'_>,
    ) -> impl std::future::Future<Output = Result<LockReply>> + Send {
        Box::pin(LeaseCalls::answer(self, keys, call))
    }

    fn ping(&self) -> impl std::future::Future<Output = Result<()>> + Send {
        Box::pin(RedlockStore::ping(self))
    }

    /// Waiters listen for releases on the first server, with their timers behind.
    fn watch_releases(
        &self,
        channel: &[u8],
    ) -> impl std::future::Future<Output = Result<ReleaseWatch>> + Send {
        self.first_node().watch_releases(channel)
    }
}

impl std::fmt::Debug for RedlockStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedlockStore")
            .field("servers", &self.shared.nodes.len())
            .finish()
    }
}

impl RedlockStore {
    /// A store over every server of `url` (`redlock://host:port,host:port,...`). No I/O happens here
    /// (lazy start); [`ping`](Self::ping) checks that a majority answers.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Self> {
        Self::new(url, options)
    }

    /// [`connect`](Self::connect) without the `async`: it does no I/O.
    pub(crate) fn new(url: &str, options: &StoreOptions) -> Result<Self> {
        let urls = server_urls(url);
        if urls.len() < 3 {
            return Err(Error::invalid_argument(
                "url",
                format!("Redlock needs at least 3 servers, got {}", urls.len()),
            ));
        }
        let nodes = urls
            .iter()
            .map(|url| RedisStore::new(url, options))
            .collect::<Result<Vec<_>>>()?;
        Ok(RedlockStore {
            shared: Arc::new(Shared {
                nodes,
                grants: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// Pings every server; an error unless a majority answers (the first failure met says why).
    pub async fn ping(&self) -> Result<()> {
        let answers = join_all(self.shared.nodes.iter().map(RedisStore::ping)).await;
        let reached = answers.iter().filter(|answer| answer.is_ok()).count();
        if reached >= quorum(self.shared.nodes.len()) {
            return Ok(());
        }
        let first = answers.into_iter().find_map(Result::err);
        Err(first.unwrap_or_else(|| {
            Error::StoreUnavailable(format!(
                "Redlock: reached {reached} of {} servers",
                self.shared.nodes.len()
            ))
        }))
    }

    /// The first server (lock waiters listen for releases there, with their timers behind).
    pub(crate) fn first_node(&self) -> &RedisStore {
        &self.shared.nodes[0]
    }

    /// `call` on every server at once; `None` where a server failed or is unreachable.
    async fn each<'a, T, F, Fut>(&'a self, call: F) -> Vec<Option<T>>
    where
        F: Fn(&'a RedisStore) -> Fut,
        Fut: std::future::Future<Output = Result<T>> + 'a,
    {
        join_all(self.shared.nodes.iter().map(|node| {
            let attempt = call(node);
            async move { attempt.await.ok() }
        }))
        .await
    }

    /// `call` with each server's own token, on the servers that granted one.
    async fn each_with<'a, T, F, Fut>(&'a self, fences: &[Option<u64>], call: F) -> Vec<Option<T>>
    where
        F: Fn(&'a RedisStore, u64) -> Fut,
        Fut: std::future::Future<Output = Result<T>> + 'a,
    {
        join_all(self.shared.nodes.iter().zip(fences).map(|(node, fence)| {
            let attempt = fence.map(|fence| call(node, fence));
            async move {
                match attempt {
                    Some(attempt) => attempt.await.ok(),
                    None => None,
                }
            }
        }))
        .await
    }

    async fn release_where_granted(&self, keys: &LockKeys, owner: &str, fences: &[Option<u64>]) {
        let _ = self
            .each_with(fences, |node, fence| node.lock_release(keys, owner, fence))
            .await;
    }

    /// Each server's token of the grant (`fence` on every server when the grant is not known here).
    fn fences_of(&self, keys: &LockKeys, owner: &str, fence: u64) -> Vec<Option<u64>> {
        self.grants()
            .get(&grant_key(keys, owner))
            .cloned()
            .unwrap_or_else(|| vec![Some(fence); self.shared.nodes.len()])
    }

    fn grants(&self) -> std::sync::MutexGuard<'_, Grants> {
        self.shared
            .grants
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn quorum(&self) -> usize {
        quorum(self.shared.nodes.len())
    }

    fn too_few(&self, answered: usize) -> Error {
        Error::StoreUnavailable(format!(
            "Redlock: {answered} of {} servers answered, {} are needed",
            self.shared.nodes.len(),
            self.quorum()
        ))
    }
}

/// Every call goes to all servers at once and is answered by the majority.
impl LeaseCalls for RedlockStore {
    /// Takes the lock on a majority within its validity, or releases what it took.
    async fn lock_acquire(
        &self,
        keys: &LockKeys,
        owner: &str,
        ttl_us: u64,
        reentrant: bool,
    ) -> Result<Acquired> {
        let started = Instant::now();
        let answers = self
            .each(|node| node.lock_acquire(keys, owner, ttl_us, reentrant))
            .await;
        let elapsed_us = started.elapsed().as_micros() as u64;
        let drift_us = ttl_us / 100 + 2_000;
        let (mut fences, mut answered, mut holds, mut busy_us) = (vec![None; answers.len()], 0, 1, 0);
        for (fence, answer) in fences.iter_mut().zip(&answers) {
            match answer {
                Some(Acquired::Granted {
                    fence: granted,
                    holds: now,
                }) => {
                    *fence = Some(*granted);
                    holds = *now;
                    answered += 1;
                }
                Some(Acquired::Busy { remaining_us }) => {
                    busy_us = busy_us.max(*remaining_us);
                    answered += 1;
                }
                None => {}
            }
        }
        let granted = fences.iter().flatten().count();
        let valid = ttl_us.saturating_sub(elapsed_us + drift_us) > 0;
        if granted >= self.quorum() && valid {
            let fence = fences.iter().flatten().copied().max().unwrap_or(0);
            self.grants().insert(grant_key(keys, owner), fences);
            return Ok(Acquired::Granted { fence, holds });
        }
        self.release_where_granted(keys, owner, &fences).await;
        if answered < self.quorum() {
            return Err(self.too_few(answered));
        }
        Ok(Acquired::Busy {
            remaining_us: busy_us.max(1),
        })
    }

    /// Gives back one hold on every server, each with the token it granted.
    async fn lock_release(&self, keys: &LockKeys, owner: &str, fence: u64) -> Result<Released> {
        let fences = self.fences_of(keys, owner, fence);
        let answers = self
            .each_with(&fences, |node, fence| node.lock_release(keys, owner, fence))
            .await;
        let answered = answers.iter().flatten().count();
        if answered < self.quorum() {
            return Err(self.too_few(answered));
        }
        let count = |wanted: fn(&Released) -> bool| answers.iter().flatten().filter(|a| wanted(a)).count();
        let outcome = if count(|a| matches!(a, Released::Released)) >= self.quorum() {
            Released::Released
        } else if let Some(Released::StillHeld { holds }) = answers
            .iter()
            .flatten()
            .find(|a| matches!(a, Released::StillHeld { .. }))
        {
            Released::StillHeld { holds: *holds }
        } else if count(|a| matches!(a, Released::HeldByOther)) >= self.quorum() {
            Released::HeldByOther
        } else {
            Released::NotHeld
        };
        if !matches!(outcome, Released::StillHeld { .. }) {
            self.grants().remove(&grant_key(keys, owner));
        }
        Ok(outcome)
    }

    /// Moves the lease's end on every server; extended when a majority extended it.
    async fn lock_extend(&self, keys: &LockKeys, owner: &str, fence: u64, ttl_us: u64) -> Result<Extended> {
        let fences = self.fences_of(keys, owner, fence);
        let answers = self
            .each_with(&fences, |node, fence| {
                node.lock_extend(keys, owner, fence, ttl_us)
            })
            .await;
        let answered = answers.iter().flatten().count();
        let count = |wanted: Extended| answers.iter().flatten().filter(|a| **a == wanted).count();
        if count(Extended::Extended) >= self.quorum() {
            return Ok(Extended::Extended);
        }
        if answered < self.quorum() {
            return Err(self.too_few(answered));
        }
        Ok(if count(Extended::HeldByOther) > count(Extended::Expired) {
            Extended::HeldByOther
        } else {
            Extended::Expired
        })
    }

    /// The lock as a majority sees it.
    async fn lock_state(&self, keys: &LockKeys) -> Result<LockState> {
        let states: Vec<LockState> = self
            .each(|node| node.lock_state(keys))
            .await
            .into_iter()
            .flatten()
            .collect();
        if states.len() < self.quorum() {
            return Err(self.too_few(states.len()));
        }
        let held: Vec<&LockState> = states.iter().filter(|state| state.held).collect();
        let majority_holds = held.len() >= self.quorum();
        Ok(LockState {
            held: majority_holds,
            remaining_us: if majority_holds {
                held.iter().map(|s| s.remaining_us).min().unwrap_or(0)
            } else {
                0
            },
            holder_fence: if majority_holds {
                held.iter().map(|s| s.holder_fence).max().unwrap_or(0)
            } else {
                0
            },
            last_fence: states.iter().map(|s| s.last_fence).max().unwrap_or(0),
        })
    }

    /// Deletes the lease on every server; `true` if any server had it.
    async fn lock_force_release(&self, keys: &LockKeys) -> Result<bool> {
        let answers = self.each(|node| node.lock_force_release(keys)).await;
        let answered = answers.iter().flatten().count();
        if answered < self.quorum() {
            return Err(self.too_few(answered));
        }
        Ok(answers.into_iter().flatten().any(|held| held))
    }
}

fn grant_key(keys: &LockKeys, owner: &str) -> (Vec<u8>, String) {
    (keys.lease.clone(), owner.to_owned())
}

/// More than half of `servers`.
fn quorum(servers: usize) -> usize {
    servers / 2 + 1
}

/// `redis://host:port` for each server of `redlock://host:port,host:port,...` (credentials kept).
fn server_urls(url: &str) -> Vec<String> {
    node_urls(url.strip_prefix(REDLOCK_SCHEME).unwrap_or(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_majority_is_more_than_half() {
        assert_eq!([quorum(3), quorum(4), quorum(5)], [2, 3, 3]);
    }

    #[test]
    fn server_urls_keep_the_credentials() {
        assert_eq!(
            server_urls("redlock://:pw@a:1,b:2,c:3"),
            ["redis://:pw@a:1", "redis://:pw@b:2", "redis://:pw@c:3"]
        );
    }

    #[test]
    fn an_unknown_grant_uses_the_given_token_everywhere() {
        let shared = Arc::new(Shared {
            nodes: ["redis://a:1/", "redis://b:2/", "redis://c:3/"]
                .into_iter()
                .map(|url| RedisStore::new(url, &StoreOptions::default()).unwrap())
                .collect(),
            grants: Mutex::new(HashMap::new()),
        });
        let store = RedlockStore { shared };
        let keys = LockKeys::new("rl", b"job");
        assert_eq!(store.fences_of(&keys, "me", 7), [Some(7); 3]);
    }
}
