//! The embedded store: the sans-IO algorithms over a sharded in-process map with expiry and a size
//! bound. All rules of one user key live in one shard, so a multi-rule hit takes one lock.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::fast::RandomState;
use parking_lot::Mutex;

use super::roles::LimitRequest;
use crate::algorithm::{decide, outcomes, Outcomes, State, Step};
use crate::clock::process_now_us;
use crate::error::Result;
use crate::key::write_base;
use crate::rule::{Rule, Rules};

const SHARDS: usize = 64;
const EVICTION_SAMPLE: usize = 16;

/// In-process state with expiry and a bound on the number of keys; cheap to clone (shared).
///
/// Keys use the same layout as Redis. When the bound is reached, expired keys are dropped first,
/// then the sampled key closest to expiry (forgetting a key can only make a limiter more lenient).
///
/// ```
/// use ratelock::store::{LimitRequest, MemoryStore};
/// let store = MemoryStore::new(10_000);
/// let rules = "1/second".parse()?;
/// let request = LimitRequest { prefix: "rl", key: b"k", rules: &rules, cost: 1, now_us: Some(0), spend: true };
/// assert!(store.check(&request)?[0].allowed);
/// assert!(!store.check(&request)?[0].allowed);
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

struct Inner {
    #[cfg(feature = "runtime")]
    locks: super::memory_locks::MemoryLocks,
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    max_keys_per_shard: usize,
}

struct Shard {
    map: HashMap<Box<[u8]>, Slot, RandomState>,
}

struct Slot {
    state: Option<State>,
    expires_at: u64,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").field("keys", &self.len()).finish()
    }
}

thread_local! {
    /// Reused for building storage keys, so a warm call allocates nothing.
    static KEY_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl MemoryStore {
    /// A store that keeps at most about `max_keys` keys (at least one per shard).
    pub fn new(max_keys: usize) -> Self {
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    map: HashMap::with_hasher(RandomState::default()),
                })
            })
            .collect();
        MemoryStore {
            inner: Arc::new(Inner {
                #[cfg(feature = "runtime")]
                locks: Default::default(),
                shards,
                hasher: RandomState::default(),
                max_keys_per_shard: max_keys.div_ceil(SHARDS).max(1),
            }),
        }
    }

    #[cfg(feature = "runtime")]
    pub(crate) fn locks(&self) -> &super::memory_locks::MemoryLocks {
        &self.inner.locks
    }

    /// Forgets every limiter key (locks are kept).
    ///
    /// ```
    /// use ratelock::store::{LimitRequest, MemoryStore};
    /// let store = MemoryStore::new(100);
    /// let rules: ratelock::Rules = "1/minute".parse()?;
    /// let request = LimitRequest { prefix: "rl", key: b"k", rules: &rules, cost: 1, now_us: Some(0), spend: true };
    /// store.check(&request)?;
    /// store.clear();
    /// assert!(store.is_empty());
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn clear(&self) {
        for shard in self.inner.shards.iter() {
            shard.lock().map.clear();
        }
    }

    /// Number of limiter keys held (expired ones included until they are swept).
    pub fn len(&self) -> usize {
        self.inner.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks every rule of the request under one shard lock; spends only if all allow.
    pub fn check(&self, request: &LimitRequest<'_>) -> Result<Outcomes> {
        KEY_BUFFER.with(|buffer| {
            let mut key = buffer.borrow_mut();
            key.clear();
            write_base(&mut key, request.prefix, request.key);
            self.check_with_base(&mut key, request)
        })
    }

    fn check_with_base(&self, key: &mut Vec<u8>, request: &LimitRequest<'_>) -> Result<Outcomes> {
        let base_len = key.len();
        let now = request.now_us.unwrap_or_else(process_now_us);
        let max_keys = self.inner.max_keys_per_shard;
        let mut shard = self.shard_for(key).lock();
        let rules = request.rules.as_slice();

        if let [rule] = rules {
            key.extend_from_slice(rule.id().as_bytes());
            return shard.check_one(key, rule, request, now, max_keys);
        }

        let mut steps = smallvec::SmallVec::<[Step; 4]>::with_capacity(rules.len());
        for rule in rules {
            key.truncate(base_len);
            key.extend_from_slice(rule.id().as_bytes());
            steps.push(decide(rule, shard.live_state(key, now), now, request.cost)?);
        }
        let outcomes = outcomes(&steps);
        if request.spend && outcomes.iter().all(|o| o.allowed) {
            for (rule, step) in rules.iter().zip(steps) {
                key.truncate(base_len);
                key.extend_from_slice(rule.id().as_bytes());
                shard.store(key, step, now, max_keys);
            }
        }
        Ok(outcomes)
    }

    /// Forgets every given rule of `key`.
    pub fn reset(&self, prefix: &str, key: &[u8], rules: &Rules) {
        let mut buffer = Vec::new();
        write_base(&mut buffer, prefix, key);
        let base_len = buffer.len();
        let mut shard = self.shard_for(&buffer).lock();
        for rule in rules.iter() {
            buffer.truncate(base_len);
            buffer.extend_from_slice(rule.id().as_bytes());
            shard.map.remove(buffer.as_slice());
        }
    }

    /// The shard of a user key, chosen from `<prefix>:{<escaped key>}:` like a cluster hash slot.
    fn shard_for(&self, base: &[u8]) -> &Mutex<Shard> {
        let hash = self.inner.hasher.hash_one(base);
        &self.inner.shards[(hash as usize) % SHARDS]
    }
}

impl Shard {
    /// One rule: decide and update with a single map lookup.
    fn check_one(
        &mut self,
        key: &[u8],
        rule: &Rule,
        request: &LimitRequest<'_>,
        now: u64,
        max_keys: usize,
    ) -> Result<Outcomes> {
        if let Some(slot) = self.map.get_mut(key) {
            let live = slot.expires_at > now;
            let step = decide(rule, slot.state.as_ref().filter(|_| live), now, request.cost)?;
            if request.spend {
                if let Some(update) = step.update {
                    if !live {
                        slot.state = None;
                    }
                    update.apply(&mut slot.state);
                    slot.expires_at = now + step.ttl_us;
                }
            }
            return Ok(smallvec::smallvec![step.outcome]);
        }
        let step = decide(rule, None, now, request.cost)?;
        let outcome = step.outcome;
        if request.spend {
            self.store(key, step, now, max_keys);
        }
        Ok(smallvec::smallvec![outcome])
    }

    fn live_state(&self, key: &[u8], now: u64) -> Option<&State> {
        self.map
            .get(key)
            .filter(|slot| slot.expires_at > now)
            .and_then(|slot| slot.state.as_ref())
    }

    fn store(&mut self, key: &[u8], step: Step, now: u64, max_keys: usize) {
        let Some(update) = step.update else { return };
        let expires_at = now + step.ttl_us;
        if let Some(slot) = self.map.get_mut(key) {
            if slot.expires_at <= now {
                slot.state = None;
            }
            update.apply(&mut slot.state);
            slot.expires_at = expires_at;
            return;
        }
        if self.map.len() >= max_keys {
            self.make_room(now);
        }
        let mut state = None;
        update.apply(&mut state);
        self.map.insert(key.into(), Slot { state, expires_at });
    }

    /// Frees one place in O(1): among a sample of keys (hash order, so effectively random), drops the
    /// expired ones, or else the one closest to expiry.
    fn make_room(&mut self, now: u64) {
        let expired: Vec<Box<[u8]>> = self
            .map
            .iter()
            .take(EVICTION_SAMPLE)
            .filter(|(_, slot)| slot.expires_at <= now)
            .map(|(key, _)| key.clone())
            .collect();
        if !expired.is_empty() {
            for key in expired {
                self.map.remove(&key);
            }
            return;
        }
        let victim = self
            .map
            .iter()
            .take(EVICTION_SAMPLE)
            .min_by_key(|(_, slot)| slot.expires_at)
            .map(|(key, _)| key.clone());
        if let Some(key) = victim {
            self.map.remove(&key);
        }
    }
}
