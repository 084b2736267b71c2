//! The local deny cache: after the store denies a key, further hits and peeks on that key, rules and
//! cost are answered from this process's memory until the denial's `retry_after` (or `max_age`) has
//! passed, with no round trip. Never used for an allow. A hook (`before_decision` answers,
//! `on_decision` remembers), attached by `LimiterOptions::with_deny_cache`; the limiter also forgets a
//! key here when it changes the key's entry or resets it.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use foldhash::fast::RandomState;
use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::hook::{Answered, Hook, LimitCall};
use crate::rule::Rules;
use crate::{Decision, Result};

const SHARDS: usize = 16;
/// How many keys a shard looks at to find one to forget when it is full.
const EVICTION_SAMPLE: usize = 8;
/// The most denials kept for one key (each for other rules or another cost): past it, the one ending
/// first is forgotten, so a key called with ever new costs holds neither more memory nor a longer scan.
const DENIALS_PER_KEY: usize = 4;

/// A bounded, process-local memory of denials (see the module docs).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use ratelock::{Limiter, LimiterOptions, Store};
/// let store = Store::new("memory://", &Default::default())?;
/// let limiter = Limiter::with_store(store, LimiterOptions::default().with_deny_cache(10_000))?;
/// let rules = limiter.rules("1/minute")?;
/// assert!(!limiter.hit("k", &rules, 1).await?.cached);
/// let denied = limiter.hit("k", &rules, 1).await?;
/// assert!(!denied.allowed && !denied.cached);
/// let again = limiter.hit("k", &rules, 1).await?;
/// assert!(!again.allowed && again.cached, "answered from memory");
/// assert_eq!(limiter.deny_cache().unwrap().answered(), 1);
/// # Ok::<(), ratelock::Error>(()) });
/// ```
#[derive(Debug)]
pub struct DenyCache {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    keys_per_shard: usize,
    max_age: Option<Duration>,
    answered: AtomicU64,
}

/// One shard: each key's denials (usually one).
type Shard = HashMap<Box<[u8]>, SmallVec<[Remembered; 1]>, RandomState>;

/// One denial: for which rules and cost, what it said, and until when it holds.
#[derive(Debug)]
struct Remembered {
    /// The limiter's key prefix: two limiters sharing the cache (cloned options) keep apart.
    prefix: Box<str>,
    rules: Rules,
    cost: u64,
    decision: Decision,
    /// µs (the call's clock) when the store answered.
    at: u64,
    /// µs (the call's clock) until which it answers.
    until: u64,
}

impl Remembered {
    /// Whether this denial answers `call`: the same prefix, rules and cost.
    fn matches(&self, call: &LimitCall<'_>) -> bool {
        self.cost == call.cost && *self.prefix == *call.prefix && self.rules == *call.rules
    }
}

impl DenyCache {
    /// A cache holding the denials of at most about `capacity` keys (at least one per shard); past
    /// that, the key whose denial ends first among a few is forgotten.
    pub fn new(capacity: usize) -> Self {
        DenyCache {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(HashMap::with_hasher(RandomState::default())))
                .collect(),
            hasher: RandomState::default(),
            keys_per_shard: capacity.div_ceil(SHARDS).max(1),
            max_age: None,
            answered: AtomicU64::new(0),
        }
    }

    /// The same cache answering a denial for at most `max_age` (by default, until its `retry_after`):
    /// a change made in another process (an `unblock`, a `clear`, a `reset`) shows here within it.
    pub fn with_max_age(mut self, max_age: Duration) -> Self {
        self.max_age = Some(max_age);
        self
    }

    /// How many calls this cache has answered (each one a round trip saved).
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }

    /// How many keys it holds a denial for (ended ones included until they are looked at).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|shard| shard.lock().len()).sum()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every denial of `key` (the limiter calls it when it changes the key's entry or resets it).
    pub fn forget(&self, key: &[u8]) {
        self.shard(key).lock().remove(key);
    }

    fn shard(&self, key: &[u8]) -> &Mutex<Shard> {
        &self.shards[(self.hasher.hash_one(key) as usize) % SHARDS]
    }

    /// The remembered denial of this call, aged to `now`, if it still holds.
    fn recall(&self, call: &LimitCall<'_>, now: u64) -> Option<Decision> {
        let mut shard = self.shard(call.key).lock();
        let denials = shard.get_mut(call.key)?;
        denials.retain(|denial| denial.until > now);
        // An explicit `now` may come earlier than the one a denial was remembered at.
        let found = denials
            .iter()
            .find(|denial| denial.matches(call))
            .map(|denial| aged(&denial.decision, now.saturating_sub(denial.at)));
        if denials.is_empty() {
            shard.remove(call.key);
        }
        found
    }

    fn remember(&self, call: &LimitCall<'_>, decision: &Decision, now: u64) {
        let mut hold = decision.retry_after;
        if let Some(max_age) = self.max_age {
            hold = hold.min(max_age);
        }
        if hold.is_zero() {
            return;
        }
        let denial = Remembered {
            prefix: call.prefix.into(),
            rules: call.rules.clone(),
            cost: call.cost,
            decision: decision.clone(),
            at: now,
            until: now.saturating_add(hold.as_micros() as u64),
        };
        let mut shard = self.shard(call.key).lock();
        if let Some(denials) = shard.get_mut(call.key) {
            denials.retain(|kept| kept.until > now && !kept.matches(call));
            if denials.len() >= DENIALS_PER_KEY {
                let soonest = (0..denials.len()).min_by_key(|&at| denials[at].until);
                if let Some(at) = soonest {
                    denials.swap_remove(at);
                }
            }
            denials.push(denial);
            return;
        }
        if shard.len() >= self.keys_per_shard {
            shard.retain(|_, denials| denials.iter().any(|kept| kept.until > now));
        }
        if shard.len() >= self.keys_per_shard {
            let soonest = shard
                .iter()
                .take(EVICTION_SAMPLE)
                .min_by_key(|(_, denials)| denials.iter().map(|kept| kept.until).max())
                .map(|(key, _)| key.clone());
            if let Some(key) = soonest {
                shard.remove(&key);
            }
        }
        shard.insert(call.key.into(), smallvec::smallvec![denial]);
    }
}

/// `decision` as it stands `elapsed` µs after the store gave it: its waits shortened by that much.
fn aged(decision: &Decision, elapsed: u64) -> Decision {
    let elapsed = Duration::from_micros(elapsed);
    let mut answer = decision.clone();
    answer.retry_after = decision.retry_after.saturating_sub(elapsed);
    answer.reset_after = decision.reset_after.saturating_sub(elapsed);
    answer.cached = true;
    answer
}

/// The call's time: its explicit `now`, else this process's clock.
fn now_of(call: &LimitCall<'_>) -> u64 {
    call.now_us.unwrap_or_else(crate::clock::now_us)
}

impl Hook for DenyCache {
    fn before_decision(&self, call: &LimitCall<'_>) -> Option<Decision> {
        // A reservation may book ahead what a hit is denied now: the store answers it.
        if call.max_wait_us.is_some() {
            return None;
        }
        let answer = self.recall(call, now_of(call))?;
        self.answered.fetch_add(1, Ordering::Relaxed);
        Some(answer)
    }

    fn on_decision(&self, call: &LimitCall<'_>, answer: &mut Result<Decision>, how: Answered) {
        let Ok(decision) = answer else { return };
        let from_store = matches!(how, Answered::ByStore { .. });
        // Only a hit's denial: remembered from a peek (or a reservation's), it kept later hits from the
        // store, which then never wrote the ban a rule's `block` asks of a denied hit.
        let a_hit = call.spend && call.max_wait_us.is_none();
        if from_store && a_hit && !decision.allowed && !decision.degraded && !decision.cached {
            self.remember(call, decision, now_of(call));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::DenyCache;
    use crate::{Limiter, LimiterOptions, Store};

    const T: u64 = 1_763_800_000_000_000;

    fn limiter(cache: DenyCache) -> Limiter {
        let store = Store::new("memory://", &Default::default()).unwrap();
        Limiter::with_store(store, LimiterOptions::default().with_deny_cache_of(cache)).unwrap()
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn a_denial_is_answered_from_memory_until_its_retry_after_and_an_allow_never() {
        block_on(async {
            let limiter = limiter(DenyCache::new(100));
            let rules = limiter.rules("1/second").unwrap();
            let first = limiter.hit_at("k", &rules, 1, T).await.unwrap();
            assert!(first.allowed && !first.cached, "an allow is never cached");
            let denied = limiter.hit_at("k", &rules, 1, T + 1).await.unwrap();
            assert!(!denied.allowed && !denied.cached);
            let cached = limiter.peek_at("k", &rules, 1, T + 250_000).await.unwrap();
            assert!(!cached.allowed && cached.cached);
            assert_eq!(
                cached.retry_after,
                denied.retry_after - Duration::from_micros(249_999)
            );
            // Another cost, other rules, another key: the store answers.
            assert!(!limiter.hit_at("k", &rules, 1, T + 2).await.unwrap().allowed);
            let other = limiter.rules("1/second; 10/hour").unwrap();
            assert!(!limiter.hit_at("k", &other, 1, T + 3).await.unwrap().cached);
            assert!(!limiter.hit_at("j", &rules, 1, T + 4).await.unwrap().cached);
            // At its retry_after the cached denial is gone: the store admits.
            let later = limiter.hit_at("k", &rules, 1, T + 1_000_000).await.unwrap();
            assert!(later.allowed && !later.cached);
            assert_eq!(limiter.deny_cache().unwrap().answered(), 2);
        });
    }

    #[test]
    fn only_a_hits_denial_is_kept_for_its_prefix_and_an_earlier_now_is_safe() {
        block_on(async {
            // A peek's denial kept later hits from the store, which then never banned the key.
            let cache = DenyCache::new(100);
            let store = Store::new("memory://", &Default::default()).unwrap();
            let options = LimiterOptions::default().with_deny_cache_of(cache);
            let limiter = Limiter::with_store(store.clone(), options.clone()).unwrap();
            let banning = limiter.rules("2/minute block 1 hour").unwrap();
            for at in 0..2 {
                assert!(limiter.hit_at("b", &banning, 1, T + at).await.unwrap().allowed);
            }
            let peeked = limiter.peek_at("b", &banning, 1, T + 2).await.unwrap();
            assert!(!peeked.allowed && !peeked.cached);
            let hit = limiter.hit_at("b", &banning, 1, T + 3).await.unwrap();
            assert!(!hit.cached, "a peek's denial answered a hit");
            assert_eq!(hit.reason.name(), "ban", "the denied hit banned the key");
            // Another limiter on the same cache (cloned options), with another prefix: its own keys.
            let rules = limiter.rules("1/minute").unwrap();
            limiter.hit_at("k", &rules, 1, T).await.unwrap();
            assert!(!limiter.hit_at("k", &rules, 1, T + 1).await.unwrap().allowed);
            let other = Limiter::with_store(store, options.with_prefix("other")).unwrap();
            let elsewhere = other.hit_at("k", &rules, 1, T + 2).await.unwrap();
            assert!(
                elsewhere.allowed && !elsewhere.cached,
                "another prefix's denial answered"
            );
            // A call at an explicit time before the denial was remembered (out-of-order clocks).
            let earlier = limiter.hit_at("k", &rules, 1, T).await.unwrap();
            assert!(!earlier.allowed);
        });
    }

    #[test]
    fn changing_or_resetting_the_key_here_forgets_its_denials() {
        block_on(async {
            let limiter = limiter(DenyCache::new(100));
            let rules = limiter.rules("5/second").unwrap();
            limiter.block("k", Duration::from_secs(60)).await.unwrap();
            limiter.hit("k", &rules, 1).await.unwrap();
            assert!(limiter.hit("k", &rules, 1).await.unwrap().cached);
            assert!(limiter.unblock("k").await.unwrap());
            let after = limiter.hit("k", &rules, 1).await.unwrap();
            assert!(after.allowed && !after.cached);
            let one = limiter.rules("1/minute").unwrap();
            limiter.hit("r", &one, 1).await.unwrap();
            limiter.hit("r", &one, 1).await.unwrap();
            assert!(limiter.hit("r", &one, 1).await.unwrap().cached);
            limiter.reset("r", &one).await.unwrap();
            assert!(limiter.hit("r", &one, 1).await.unwrap().allowed);
            // A raised limit applies at once: the denial the old limit gave is forgotten (a window
            // counts on under an override: 1 of 5 spent). One explicit time: the window never turns.
            let window = limiter.rules("1/minute using fixed_window").unwrap();
            limiter.hit_at("w", &window, 1, T).await.unwrap();
            limiter.hit_at("w", &window, 1, T).await.unwrap();
            assert!(limiter.hit_at("w", &window, 1, T).await.unwrap().cached);
            let raised = limiter.rules("5/minute using fixed_window").unwrap();
            limiter.set_override("w", &raised, None, Some(T)).await.unwrap();
            let after = limiter.hit_at("w", &window, 1, T).await.unwrap();
            assert!(after.allowed && !after.cached && after.limit == 5, "{after:?}");
            // And so does taking it away.
            for _ in 0..4 {
                limiter.hit_at("w", &window, 1, T).await.unwrap();
            }
            assert!(limiter.hit_at("w", &window, 1, T).await.unwrap().cached);
            assert!(limiter.clear_override("w").await.unwrap());
            assert!(!limiter.hit_at("w", &window, 1, T).await.unwrap().cached);
        });
    }

    #[test]
    fn the_cache_holds_at_most_its_capacity_and_max_age_bounds_a_denial() {
        block_on(async {
            let limiter = limiter(DenyCache::new(32).with_max_age(Duration::from_millis(100)));
            let rules = limiter.rules("1/hour").unwrap();
            for n in 0..1_000 {
                let key = format!("k{n}");
                limiter.hit_at(&key, &rules, 1, T).await.unwrap();
                limiter.hit_at(&key, &rules, 1, T).await.unwrap();
            }
            let cache = limiter.deny_cache().unwrap();
            assert!(cache.len() <= 32, "{} keys held", cache.len());
            assert!(
                limiter
                    .hit_at("k999", &rules, 1, T + 99_999)
                    .await
                    .unwrap()
                    .cached
            );
            let aged = limiter.hit_at("k999", &rules, 1, T + 100_000).await.unwrap();
            assert!(
                !aged.allowed && !aged.cached,
                "past max_age the store answers again"
            );
        });
    }

    #[test]
    fn one_key_keeps_a_few_denials_however_many_costs_it_is_called_with() {
        block_on(async {
            let limiter = limiter(DenyCache::new(16));
            let rules = limiter.rules("2000/hour").unwrap();
            assert!(limiter.hit_at("k", &rules, 2_000, T).await.unwrap().allowed);
            for cost in 1..=2_000 {
                assert!(!limiter.hit_at("k", &rules, cost, T).await.unwrap().allowed);
            }
            let cache = limiter.deny_cache().unwrap();
            let held = cache
                .shard(b"k")
                .lock()
                .get(b"k".as_slice())
                .map_or(0, |kept| kept.len());
            assert!(held <= super::DENIALS_PER_KEY, "{held} denials held for one key");
            // The latest are kept and answer.
            assert!(limiter.hit_at("k", &rules, 2_000, T + 1).await.unwrap().cached);
        });
    }

    #[test]
    fn degraded_and_shadowed_answers_are_not_cached() {
        block_on(async {
            let store = Store::new("memory://", &Default::default()).unwrap();
            let options = LimiterOptions::default().with_shadow(true).with_deny_cache(10);
            let limiter = Limiter::with_store(store, options).unwrap();
            let rules = limiter.rules("1/minute").unwrap();
            limiter.hit("k", &rules, 1).await.unwrap();
            for _ in 0..3 {
                let shadowed = limiter.hit("k", &rules, 1).await.unwrap();
                assert!(shadowed.allowed && shadowed.would_deny && !shadowed.cached);
            }
            assert!(limiter.deny_cache().unwrap().is_empty());
        });
    }
}
