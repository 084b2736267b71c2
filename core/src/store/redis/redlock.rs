//! Redlock: one lock over N independent Redis servers (`redlock://host:port,host:port,...`). Every
//! operation goes to all servers at once, each bounded by the store's timeout. A grant needs a majority
//! and a remaining validity of `ttl − elapsed − drift` (drift = 1% of the ttl + 2 ms); a failed attempt
//! is released everywhere (a server that cannot be reached for that is asked again in the background
//! until the lease would have run out). A server whose answer to an acquire never came is asked what it
//! holds, and a grant to the owner there that is not its part of a live grant is released
//! (`redlock_unheard.rs`); a last release a server did not get is sent again. The fencing token is the largest of the servers' tokens; each
//! server's own token is kept so release and extend show every server the grant it made. A call
//! without a majority fails with the first refusal no retry mends (configuration, protocol) when a
//! server gave one, else as an outage naming what each server said.
//!
//! It plays one role, [`LockStore`]: a limiter, semaphore, fair or read-write lock needs one Redis, and
//! giving them a Redlock store does not compile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use futures_util::FutureExt;

use super::lease_calls::LeaseCalls;
use super::multi_host_urls::node_urls;
use super::redlock_unheard::{give_back_unheard, GrantKey, Tries};
use super::redlock_watch::RedlockWatch;
use super::RedisStore;
use crate::algorithm::lease::LockState;
use crate::algorithm::lease::{Acquired, Extended, LockCall, LockReply, Released};
use crate::error::{Error, Result};
use crate::key::LockKeys;
use crate::store::options::StoreOptions;
use crate::store::roles::sealed::Sealed;
use crate::store::roles::{LockStore, ReleaseWatch, WatchSource};

/// What the servers' clocks may have taken of a lease of `ttl` (1% of it, plus 2 ms): a grant is valid
/// only if the majority answered before `ttl` less this, and a guard counts its lease as ending that
/// much before `ttl` from its request, as Redlock's validity time is.
pub(crate) fn clock_drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

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
    tries: Arc<Tries>,
}

/// Each live grant, by (lease key, owner).
type Grants = HashMap<GrantKey, Grant>;

/// A live grant: each server's own fencing token (`None` where it did not grant), and its lease length.
struct Grant {
    fences: Vec<Option<u64>>,
    ttl_us: u64,
}

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

    /// Waiters listen for releases on every server (a release is published where it was granted),
    /// with their timers behind; a server whose channel cannot be had is left out, unless none can.
    fn watch_releases(
        &self,
        channel: &[u8],
    ) -> impl std::future::Future<Output = Result<ReleaseWatch>> + Send {
        Box::pin(async move {
            let mut watches = Vec::new();
            let mut first_failure = None;
            for watch in join_all(self.shared.nodes.iter().map(|node| node.watch_releases(channel))).await {
                match watch {
                    Ok(watch) => watches.push(watch),
                    Err(failure) => {
                        first_failure.get_or_insert(failure);
                    }
                }
            }
            match first_failure {
                Some(failure) if watches.is_empty() => Err(failure),
                _ => Ok(ReleaseWatch {
                    source: WatchSource::Redlock(RedlockWatch::over(watches)),
                }),
            }
        })
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
        // `server_code` (the one query parameter a Redlock URL takes) applies to every server.
        let (url, server_code) = super::server_code::take_from_url(url)?;
        let options = &options
            .clone()
            .with_server_code(server_code.unwrap_or(options.server_code));
        let urls = server_urls(&url);
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
                tries: Arc::default(),
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

    /// `call` on every server at once.
    async fn each<'a, T, F, Fut>(&'a self, call: F) -> Answers<T>
    where
        F: Fn(&'a RedisStore) -> Fut,
        Fut: std::future::Future<Output = Result<T>> + 'a,
    {
        Answers::of(
            join_all(
                self.shared
                    .nodes
                    .iter()
                    .map(|node| call(node).map(|result| result.map(Some))),
            )
            .await,
        )
    }

    /// `call` with each server's own token, on the servers that granted one.
    async fn each_with<'a, T, F, Fut>(&'a self, fences: &[Option<u64>], call: F) -> Answers<T>
    where
        F: Fn(&'a RedisStore, u64) -> Fut,
        Fut: std::future::Future<Output = Result<T>> + 'a,
    {
        Answers::of(
            join_all(self.shared.nodes.iter().zip(fences).map(|(node, fence)| {
                let attempt = fence.map(|fence| call(node, fence));
                async move {
                    match attempt {
                        Some(attempt) => attempt.await.map(Some),
                        None => Ok(None),
                    }
                }
            }))
            .await,
        )
    }

    /// Gives back the grants of a failed attempt. A server that cannot be reached is asked again in
    /// the background until the lease (`ttl_us` from now) would have run out anyway, but for a
    /// `reentrant` lock (a release that failed may have run, and sent again it would take another hold
    /// of the same owner); a refusal no retry mends is returned.
    async fn release_where_granted(
        &self,
        keys: &LockKeys,
        owner: &str,
        fences: &[Option<u64>],
        ttl_us: u64,
        reentrant: bool,
    ) -> Result<()> {
        let releases = join_all(
            self.shared
                .nodes
                .iter()
                .zip(fences)
                .map(|(node, fence)| async move {
                    match fence {
                        Some(fence) => node.lock_release(keys, owner, *fence).await.map(|_| ()),
                        None => Ok(()),
                    }
                }),
        )
        .await;
        let until = tokio::time::Instant::now() + std::time::Duration::from_micros(ttl_us);
        let mut refused = None;
        for ((node, fence), release) in self.shared.nodes.iter().zip(fences).zip(releases) {
            match (release, fence) {
                (Err(failure), Some(_)) if failure.is_store_failure() && reentrant => {}
                (Err(failure), Some(fence)) if failure.is_store_failure() => {
                    release_later(node.clone(), keys.clone(), owner.to_owned(), *fence, until);
                }
                (Err(failure), _) => {
                    refused.get_or_insert(failure);
                }
                _ => {}
            }
        }
        refused.map_or(Ok(()), Err)
    }

    /// Each server's token of the grant whose token is `fence` (`fence` on every server when that
    /// grant is not the one recorded here).
    fn fences_of(&self, keys: &LockKeys, owner: &str, fence: u64) -> Vec<Option<u64>> {
        self.grants()
            .get(&grant_key(keys, owner))
            .filter(|grant| grant.fences.iter().flatten().max() == Some(&fence))
            .map(|grant| grant.fences.clone())
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

    /// The error of a call that `answers` could not decide: the first refusal no retry mends, else an
    /// outage that says what each failing server said.
    fn too_few<T>(&self, answers: &Answers<T>) -> Error {
        if let Some(refused) = answers
            .failures
            .iter()
            .find(|failure| !failure.is_store_failure())
        {
            return refused.clone();
        }
        let said: Vec<String> = answers.failures.iter().map(ToString::to_string).collect();
        // With a majority answering, the servers in an outage could still have tipped it.
        let open = if answers.answered() >= self.quorum() {
            " but too few agree without the ones in an outage"
        } else {
            ""
        };
        Error::StoreUnavailable(format!(
            "Redlock: {} of {} servers answered{open}, {} are needed ({})",
            answers.answered(),
            self.shared.nodes.len(),
            self.quorum(),
            said.join("; ")
        ))
    }
}

/// What every server answered to one call: each one's answer (`None` where it failed, or was not asked
/// because it made no grant), and the failures.
struct Answers<T> {
    answers: Vec<Option<T>>,
    failures: Vec<Error>,
    /// The servers whose call failed after it may have run there (`Error::may_have_run`).
    unheard: Vec<usize>,
    /// The servers that failed with an outage (a store failure, whether or not the call ran there):
    /// what they would have answered is open.
    outages: Vec<usize>,
}

impl<T> Answers<T> {
    fn of(results: Vec<Result<Option<T>>>) -> Self {
        let (mut failures, mut unheard, mut outages) = (Vec::new(), Vec::new(), Vec::new());
        let answers = results
            .into_iter()
            .enumerate()
            .map(|(at, result)| {
                result.unwrap_or_else(|failure| {
                    if failure.may_have_run() {
                        unheard.push(at);
                    }
                    if failure.is_store_failure() {
                        outages.push(at);
                    }
                    failures.push(failure);
                    None
                })
            })
            .collect();
        Answers {
            answers,
            failures,
            unheard,
            outages,
        }
    }

    /// How many servers answered.
    fn answered(&self) -> usize {
        self.answers.iter().flatten().count()
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.answers.iter().flatten()
    }
}

/// Asks `node` again to give back the grant `fence` of `owner` while it cannot be reached, until `until`
/// (after which the lease has run out there anyway), in a task nobody awaits.
fn release_later(node: RedisStore, keys: LockKeys, owner: String, fence: u64, until: tokio::time::Instant) {
    crate::store::outage_retry::in_background_while_outage(until, move || {
        let (node, keys, owner) = (node.clone(), keys.clone(), owner.clone());
        async move { node.lock_release(&keys, &owner, fence).await }
    });
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
        let _in_flight = self.shared.tries.begin(grant_key(keys, owner));
        let started = Instant::now();
        let answers = self
            .each(|node| node.lock_acquire(keys, owner, ttl_us, reentrant))
            .await;
        let elapsed_us = started.elapsed().as_micros() as u64;
        let drift_us = clock_drift(Duration::from_micros(ttl_us)).as_micros() as u64;
        let (mut fences, mut holds, mut busy_us) = (vec![None; answers.answers.len()], 1, 0);
        for (fence, answer) in fences.iter_mut().zip(&answers.answers) {
            match answer {
                Some(Acquired::Granted {
                    fence: granted,
                    holds: now,
                }) => {
                    *fence = Some(*granted);
                    holds = *now;
                }
                Some(Acquired::Busy { remaining_us }) => {
                    busy_us = busy_us.max(*remaining_us);
                }
                None => {}
            }
        }
        let granted = fences.iter().flatten().count();
        let valid = ttl_us.saturating_sub(elapsed_us + drift_us) > 0;
        let won = granted >= self.quorum() && valid;
        if won {
            let mut grants = self.grants();
            let key = grant_key(keys, owner);
            // A re-entry is the same grant: a server that did not answer it keeps its token from the
            // first entry, so every guard of the grant names one fencing token (the largest).
            if let (true, Some(entered)) = (holds > 1, grants.get(&key)) {
                for (fence, before) in fences.iter_mut().zip(&entered.fences) {
                    *fence = fence.or(*before);
                }
            }
            let grant = Grant {
                fences: fences.clone(),
                ttl_us,
            };
            grants.insert(key, grant);
        }
        // A server that did not answer may have granted all the same (after the grant above is
        // recorded, so its own parts are known).
        let until = tokio::time::Instant::now() + Duration::from_micros(ttl_us);
        for &at in &answers.unheard {
            let shared = self.shared.clone();
            let key = grant_key(keys, owner);
            let held_here = move || {
                let grants = shared
                    .grants
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                grants.get(&key).and_then(|grant| grant.fences[at])
            };
            let node = self.shared.nodes[at].clone();
            let tries = self.shared.tries.clone();
            give_back_unheard(node, tries, keys.clone(), owner.to_owned(), until, held_here);
        }
        if won {
            let fence = fences.iter().flatten().copied().max().unwrap_or(0);
            return Ok(Acquired::Granted { fence, holds });
        }
        self.release_where_granted(keys, owner, &fences, ttl_us, reentrant)
            .await?;
        if answers.answered() < self.quorum() {
            return Err(self.too_few(&answers));
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
        if answers.answered() < self.quorum() {
            return Err(self.too_few(&answers));
        }
        let count = |wanted: fn(&Released) -> bool| answers.iter().filter(|a| wanted(a)).count();
        let outcome = if count(|a| matches!(a, Released::Released)) >= self.quorum() {
            Released::Released
        } else if let Some(Released::StillHeld { holds }) =
            answers.iter().find(|a| matches!(a, Released::StillHeld { .. }))
        {
            Released::StillHeld { holds: *holds }
        } else if count(|a| matches!(a, Released::HeldByOther)) >= self.quorum() {
            Released::HeldByOther
        } else {
            Released::NotHeld
        };
        if !matches!(outcome, Released::StillHeld { .. }) {
            // Only this grant's record goes: a hold found lost may be an older grant of the same owner,
            // whose newer grant still needs each server's own token.
            let grant = {
                let mut grants = self.grants();
                let key = grant_key(keys, owner);
                let ours = grants
                    .get(&key)
                    .is_some_and(|grant| grant.fences.iter().flatten().max() == Some(&fence));
                if ours {
                    grants.remove(&key)
                } else {
                    None
                }
            };
            // The last hold is given back (or found lost, which a server in an outage may not know):
            // a server that could not be told (whether the call ran there or was never sent, its
            // breaker open) is asked again in the background (its fence alone, so a later grant there
            // is never touched).
            if let Some(grant) = grant {
                let until = tokio::time::Instant::now() + Duration::from_micros(grant.ttl_us);
                for &at in &answers.outages {
                    if let Some(fence) = fences[at] {
                        let node = self.shared.nodes[at].clone();
                        release_later(node, keys.clone(), owner.to_owned(), fence, until);
                    }
                }
            }
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
        let count = |wanted: Extended| answers.iter().filter(|a| **a == wanted).count();
        if count(Extended::Extended) >= self.quorum() {
            return Ok(Extended::Extended);
        }
        // Servers in an outage may have extended: while they could still make a majority with those
        // that did, the renewal's outcome is open (an outage, retried), not a loss.
        if answers.answered() < self.quorum()
            || count(Extended::Extended) + answers.outages.len() >= self.quorum()
        {
            return Err(self.too_few(&answers));
        }
        Ok(if count(Extended::HeldByOther) > count(Extended::Expired) {
            Extended::HeldByOther
        } else {
            Extended::Expired
        })
    }

    /// The lock as a majority sees it.
    async fn lock_state(&self, keys: &LockKeys) -> Result<LockState> {
        let answers = self.each(|node| node.lock_state(keys)).await;
        if answers.answered() < self.quorum() {
            return Err(self.too_few(&answers));
        }
        let states: Vec<&LockState> = answers.iter().collect();
        let held: Vec<&LockState> = states.iter().copied().filter(|state| state.held).collect();
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
        if answers.answered() < self.quorum() {
            return Err(self.too_few(&answers));
        }
        let any_held = answers.iter().any(|held| *held);
        Ok(any_held)
    }
}

fn grant_key(keys: &LockKeys, owner: &str) -> GrantKey {
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
    fn a_redlock_url_takes_server_code_alone() {
        let options = StoreOptions::default();
        assert!(RedlockStore::new("redlock://a:1,b:2,c:3?server_code=scripts", &options).is_ok());
        let error = RedlockStore::new("redlock://a:1,b:2,c:3?protocol=resp3", &options).unwrap_err();
        assert!(
            error.is_invalid_argument() && error.to_string().contains("`protocol`"),
            "{error}"
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
            tries: Arc::default(),
        });
        let store = RedlockStore { shared };
        let keys = LockKeys::new("rl", b"job");
        assert_eq!(store.fences_of(&keys, "me", 7), [Some(7); 3]);
    }
}
