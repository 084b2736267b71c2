//! The embedded store: the sans-IO algorithms over a sharded in-process map with expiry, reclaiming
//! expired keys as it grows, and an optional bound with an explicit policy ([`WhenFull`]). All rules of
//! one user key live in one shard, so a multi-rule hit takes one lock.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use foldhash::fast::RandomState;
use parking_lot::Mutex;

use super::memory_slots::{SlotKey, Slots, StorageKeys};
use super::options::WhenFull;
use super::roles::{EntryChange, LimitRequest, OverrideChange};
use crate::algorithm::overrides::{self, Overrides};
use crate::algorithm::refund::refund;
use crate::algorithm::reserve;
use crate::algorithm::standing::{ban_after, banned, Entry, Verdict};
use crate::algorithm::{decide, outcomes, spends, Outcomes, State, Step};
use crate::clock::process_now_us;
use crate::error::{Error, Result};
use crate::key::write_base;
use crate::rule::{Rule, Rules};

const SHARDS: usize = 64;
const EVICTION_SAMPLE: usize = 16;
/// A shard is swept of expired keys once it has doubled since its last sweep (amortized O(1) per key).
const SWEEP_FLOOR: usize = 64;

/// In-process state with expiry; cheap to clone (shared).
///
/// Keys use the same layout as Redis, with the same results. Expired keys are reclaimed as the store
/// grows (a shard is swept once it doubles), so memory follows the live keys. A store made with
/// [`MemoryStore::bounded`] holds at most that many keys and, once full of live ones, does what its
/// [`WhenFull`] says: refuse (an outage the failure policy answers) or evict (counted by
/// [`evictions`](Self::evictions)). [`MemoryStore::unbounded`] never forgets a live limit.
///
/// ```
/// use ratelock::store::{LimitRequest, MemoryStore};
/// let store = MemoryStore::unbounded();
/// let rules = "1/second".parse()?;
/// let request = LimitRequest { prefix: "rl", key: b"k", rules: &rules, cost: 1, now_us: Some(0), spend: true, max_wait_us: None };
/// assert!(store.check(&request)?.outcomes[0].allowed);
/// assert!(!store.check(&request)?.outcomes[0].allowed);
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
    /// Keys per shard at most (`None`: no bound).
    max_keys_per_shard: Option<usize>,
    when_full: WhenFull,
    evictions: AtomicU64,
}

/// The steps of one request's rules (four inline).
type StepList = smallvec::SmallVec<[Step; 4]>;

struct Shard {
    /// Each rule's state, by storage key.
    map: Slots,
    /// Each key's ban or list entry, by `<prefix>:{<escaped key>}:` (none, and never looked into,
    /// until one is put).
    standing: Option<Box<Entries>>,
    /// Each key's override and when it ends (`u64::MAX`: never), by `<prefix>:{<escaped key>}:` (none,
    /// and never looked into, until one is set).
    overrides: Option<Box<HeldOverrides>>,
    /// The shard's size right after its last sweep.
    swept_len: usize,
    /// No held key expires before this (kept as keys are written; exact after a sweep): a full shard
    /// sweeps once the clock passes it, so it never refuses or evicts while an expired key is held.
    earliest_expiry: u64,
}

/// Keys' overrides and when each ends, by `<prefix>:{<escaped key>}:`.
type HeldOverrides = HashMap<Box<[u8]>, (Arc<Overrides>, u64), RandomState>;

/// Keys' ban or list entries, by `<prefix>:{<escaped key>}:`.
type Entries = HashMap<Box<[u8]>, Entry, RandomState>;

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
    /// A store with no bound but memory: expired keys are reclaimed, live limits are never forgotten.
    pub fn unbounded() -> Self {
        Self::with_bound(None, WhenFull::Refuse)
    }

    /// A store holding at most about `max_keys` keys (spread over its shards, at least one each); once
    /// full of live keys, a new key does what `when_full` says.
    pub fn bounded(max_keys: usize, when_full: WhenFull) -> Self {
        Self::with_bound(Some(max_keys), when_full)
    }

    /// The store `options` describe (`max_keys`, `when_full`).
    pub fn for_options(options: &super::StoreOptions) -> Self {
        Self::with_bound(options.max_keys, options.when_full)
    }

    fn with_bound(max_keys: Option<usize>, when_full: WhenFull) -> Self {
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard {
                    map: Slots::default(),
                    standing: None,
                    overrides: None,
                    swept_len: 0,
                    earliest_expiry: u64::MAX,
                })
            })
            .collect();
        MemoryStore {
            inner: Arc::new(Inner {
                #[cfg(feature = "runtime")]
                locks: Default::default(),
                shards,
                hasher: RandomState::default(),
                max_keys_per_shard: max_keys.map(|max| max.div_ceil(SHARDS).max(1)),
                when_full,
                evictions: AtomicU64::new(0),
            }),
        }
    }

    /// How many live keys a bounded store with [`WhenFull::Evict`] has forgotten to make room.
    pub fn evictions(&self) -> u64 {
        self.inner.evictions.load(Ordering::Relaxed)
    }

    #[cfg(feature = "runtime")]
    pub(crate) fn locks(&self) -> &super::memory_locks::MemoryLocks {
        &self.inner.locks
    }

    /// Forgets every limiter key (locks are kept).
    ///
    /// ```
    /// use ratelock::store::{LimitRequest, MemoryStore};
    /// let store = MemoryStore::unbounded();
    /// let rules: ratelock::Rules = "1/minute".parse()?;
    /// let request = LimitRequest { prefix: "rl", key: b"k", rules: &rules, cost: 1, now_us: Some(0), spend: true, max_wait_us: None };
    /// store.check(&request)?;
    /// store.clear();
    /// assert!(store.is_empty());
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn clear(&self) {
        for shard in self.inner.shards.iter() {
            let mut shard = shard.lock();
            shard.map.clear();
            shard.standing = None;
            shard.overrides = None;
            shard.swept_len = 0;
            shard.earliest_expiry = u64::MAX;
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

    /// Checks the key's ban or list entry, then every rule of the request, under one shard lock;
    /// spends only if all allow, and bans the key when a blocking rule denies a hit.
    pub fn check(&self, request: &LimitRequest<'_>) -> Result<Verdict> {
        crate::clock::check_now(request.now_us)?;
        KEY_BUFFER.with(|buffer| {
            let mut key = buffer.borrow_mut();
            key.clear();
            write_base(&mut key, request.prefix, request.key);
            self.check_with_base(&mut key, request)
        })
    }

    fn check_with_base(&self, base: &mut Vec<u8>, request: &LimitRequest<'_>) -> Result<Verdict> {
        let now = request.now_us.unwrap_or_else(process_now_us);
        let base_hash = self.base_hash(base);
        let mut shard = self.shard_at(base_hash).lock();
        self.check_locked(&mut shard, &mut StorageKeys::new(base, base_hash), request, now)
    }

    /// Gives back `request.cost` units of every rule of the request (see
    /// [`refund`]), then answers as a peek of that cost, under one
    /// shard lock. Each key keeps its expiry.
    pub fn refund(&self, request: &LimitRequest<'_>) -> Result<Verdict> {
        for rule in request.rules.iter() {
            crate::algorithm::check_cost(rule, request.cost)?;
        }
        let now = request.now_us.unwrap_or_else(process_now_us);
        let mut buffer = Vec::new();
        write_base(&mut buffer, request.prefix, request.key);
        let base_hash = self.base_hash(&buffer);
        let mut keys = StorageKeys::new(&mut buffer, base_hash);
        let mut shard = self.shard_at(base_hash).lock();
        let applied = shard.applied(keys.base(), request.rules, request.cost, now)?;
        for rule in applied.as_ref().unwrap_or(request.rules).iter() {
            if let Some(slot) = shard
                .map
                .get_mut(keys.of(rule))
                .filter(|slot| slot.expires_at > now)
            {
                if let Some(update) = refund(rule, slot.state.as_ref(), now, request.cost) {
                    update.apply(&mut slot.state);
                }
            }
        }
        let peek = LimitRequest {
            spend: false,
            ..*request
        };
        self.check_locked(&mut shard, &mut keys, &peek, now)
    }

    /// [`check`](Self::check) with the key's shard locked.
    #[inline(always)]
    fn check_locked(
        &self,
        shard: &mut Shard,
        keys: &mut StorageKeys<'_>,
        request: &LimitRequest<'_>,
        now: u64,
    ) -> Result<Verdict> {
        if let Some(max_wait) = request.max_wait_us {
            reserve::check_request(request.rules, max_wait)?;
        }
        if shard.overrides.is_some() {
            if let Some(applied) = shard.applied(keys.base(), request.rules, request.cost, now)? {
                let request = LimitRequest {
                    rules: &applied,
                    ..*request
                };
                return self.check_policed(shard, keys, &request, now);
            }
        }
        self.check_policed(shard, keys, request, now)
    }

    /// [`check_locked`](Self::check_locked) once the rules are the ones in force: the key's entry,
    /// then the rules, then a ban when a blocking rule denied a hit.
    #[inline(always)]
    fn check_policed(
        &self,
        shard: &mut Shard,
        keys: &mut StorageKeys<'_>,
        request: &LimitRequest<'_>,
        now: u64,
    ) -> Result<Verdict> {
        let rules = request.rules.as_slice();
        if let Some(entries) = &shard.standing {
            // Misuse is an error before any entry answers, as on every store.
            for rule in rules {
                crate::algorithm::check_cost(rule, request.cost)?;
            }
            if let Some(verdict) = entries.get(keys.base()).and_then(|e| e.answer(rules, now)) {
                return Ok(verdict);
            }
        }
        let outcomes = self.check_rules(shard, keys, request, now)?;
        // A ban only ever follows a denied hit (never a reservation): one test on the way, the rest out
        // of line.
        if request.spend && !outcomes.iter().all(|o| o.allowed) && request.max_wait_us.is_none() {
            return Ok(ban_if_blocking(shard, keys.base(), rules, outcomes, now));
        }
        Ok(Verdict::from(outcomes))
    }

    /// Changes the key's ban or list entry; true when it put or removed one.
    pub fn stand(&self, change: &EntryChange<'_>) -> bool {
        let (call, now) = (change.call, change.now_us.unwrap_or_else(process_now_us));
        let mut base = Vec::new();
        write_base(&mut base, change.prefix, change.key);
        let mut shard = self.shard_for(&base).lock();
        let mut entry = shard
            .standing
            .as_ref()
            .and_then(|entries| entries.get(base.as_slice()).copied());
        let changed = call.apply(&mut entry, now);
        match entry {
            Some(entry) => shard.entries().insert(base.into(), entry),
            None => shard.entries().remove(base.as_slice()),
        };
        changed
    }

    /// Every rule of the request, under the shard's lock; spends only if all allow.
    #[inline(always)]
    fn check_rules(
        &self,
        shard: &mut Shard,
        keys: &mut StorageKeys<'_>,
        request: &LimitRequest<'_>,
        now: u64,
    ) -> Result<Outcomes> {
        let inner = &*self.inner;
        let rules = request.rules.as_slice();
        if let ([rule], None) = (rules, request.max_wait_us) {
            return shard.check_one(keys.of(rule), rule, request, now, inner);
        }

        let mut steps = shard.decide_all(keys, rules, now, now, request.cost)?;
        if let Some(max_wait) = request.max_wait_us.filter(|_| request.spend) {
            let wait = reserve::wait_of(&steps);
            if reserve::books_ahead(wait, max_wait) {
                let booked: StepList = shard
                    .decide_all(keys, rules, now, now + wait, request.cost)?
                    .into_iter()
                    .map(|step| reserve::booked(step, wait))
                    .collect();
                if booked.iter().all(|step| step.outcome.allowed) {
                    steps = booked;
                }
            }
        }
        let outcomes = outcomes(rules, &steps);
        if request.spend && spends(rules, &steps) {
            // Room for every new key first, so a refusal leaves none of the rules spent (a shadow rule
            // that denies writes nothing).
            let new_keys = rules
                .iter()
                .zip(&steps)
                .filter(|(rule, step)| step.update.is_some() && !shard.map.contains(keys.of(rule)))
                .count();
            let room = Room {
                new_keys,
                request_keys: rules.len(),
                own: keys.base(),
            };
            shard.make_room(room, now, inner)?;
            for (rule, step) in rules.iter().zip(steps) {
                shard.store(keys.of(rule), step, now);
            }
        }
        Ok(outcomes)
    }

    /// Forgets every given rule of `key`.
    pub fn reset(&self, prefix: &str, key: &[u8], rules: &Rules) {
        let mut buffer = Vec::new();
        write_base(&mut buffer, prefix, key);
        let base_hash = self.base_hash(&buffer);
        let mut keys = StorageKeys::new(&mut buffer, base_hash);
        let mut shard = self.shard_at(base_hash).lock();
        // An overridden token bucket counts in a bucket of its own: it goes too (an override that has
        // ended included: no clock is read).
        let applied = shard.applied(keys.base(), rules, 1, 0).ok().flatten();
        for rule in rules
            .iter()
            .chain(applied.iter().flat_map(|applied| applied.iter()))
        {
            shard.map.remove(keys.of(rule));
        }
    }

    /// Sets or clears the key's override, at the change's `now_us` (else the process clock); true when
    /// one was set or cleared.
    pub fn set_override(&self, change: &OverrideChange<'_>) -> bool {
        let (overrides, for_us) = (change.overrides, change.for_us);
        let now = change.now_us.unwrap_or_else(process_now_us);
        let mut base = Vec::new();
        write_base(&mut base, change.prefix, change.key);
        let mut shard = self.shard_for(&base).lock();
        match overrides {
            Some(overrides) => {
                let until = for_us.map_or(u64::MAX, |span| now.saturating_add(span));
                shard
                    .overrides
                    .get_or_insert_with(Default::default)
                    .insert(base.into(), (Arc::new(overrides.clone()), until));
                true
            }
            None => shard
                .overrides
                .as_mut()
                .and_then(|held| held.remove(base.as_slice()))
                .is_some_and(|(_, until)| until > now),
        }
    }

    /// The hash of a user key's `<prefix>:{<escaped key>}:`: it chooses the key's shard (like a
    /// cluster hash slot) and, with each rule's own hash, finds the rule's state there.
    #[inline]
    fn base_hash(&self, base: &[u8]) -> u64 {
        self.inner.hasher.hash_one(base)
    }

    /// The shard of the user key whose base hashed to `base_hash`. Its bits 32 and up choose: the
    /// table inside uses the low bits and the top seven, which must still differ among its keys.
    #[inline]
    fn shard_at(&self, base_hash: u64) -> &Mutex<Shard> {
        &self.inner.shards[((base_hash >> 32) as usize) % SHARDS]
    }

    /// The shard of a user key, from its `<prefix>:{<escaped key>}:`.
    fn shard_for(&self, base: &[u8]) -> &Mutex<Shard> {
        self.shard_at(self.base_hash(base))
    }
}

/// A denied hit's answer: the ban its blocking rules start (put in the shard at the key's `base`), or
/// the denial as it is.
fn ban_if_blocking(shard: &mut Shard, base: &[u8], rules: &[Rule], outcomes: Outcomes, now: u64) -> Verdict {
    let Some(block_us) = ban_after(rules, &outcomes) else {
        return Verdict::from(outcomes);
    };
    let entry = Entry {
        standing: crate::algorithm::standing::Standing::Banned,
        until_us: now + block_us,
    };
    shard.entries().insert(base.into(), entry);
    banned(rules, block_us)
}

impl Shard {
    /// One rule: decide and update with a single map lookup.
    #[inline(always)]
    fn check_one(
        &mut self,
        key: SlotKey<'_>,
        rule: &Rule,
        request: &LimitRequest<'_>,
        now: u64,
        inner: &Inner,
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
                    self.earliest_expiry = self.earliest_expiry.min(slot.expires_at);
                }
            }
            return Ok(smallvec::smallvec![step.outcome]);
        }
        let step = decide(rule, None, now, request.cost)?;
        let outcome = step.outcome;
        if request.spend && step.update.is_some() {
            let room = Room {
                new_keys: 1,
                request_keys: 1,
                own: key.bytes(),
            };
            self.make_room(room, now, inner)?;
            self.store(key, step, now);
        }
        Ok(smallvec::smallvec![outcome])
    }

    /// Every rule of a request decided at `at` from its state live at `now`.
    fn decide_all(
        &self,
        keys: &mut StorageKeys<'_>,
        rules: &[Rule],
        now: u64,
        at: u64,
        cost: u64,
    ) -> Result<StepList> {
        let mut steps = StepList::with_capacity(rules.len());
        for rule in rules {
            steps.push(decide(rule, self.live_state(keys.of(rule), now), at, cost)?);
        }
        Ok(steps)
    }

    /// `rules` under the override `base` (the key's `<prefix>:{<escaped key>}:`) has at `now`, with
    /// `cost` checked against each replaced rule; `None` when it has none, or none that replaces them.
    fn applied(&self, base: &[u8], rules: &Rules, cost: u64, now: u64) -> Result<Option<Rules>> {
        let Some((overrides, _)) = self
            .overrides
            .as_ref()
            .and_then(|held| held.get(base))
            .filter(|(_, until)| *until > now)
        else {
            return Ok(None);
        };
        overrides::applied_rules(overrides, rules, cost)
    }

    fn live_state(&self, key: SlotKey<'_>, now: u64) -> Option<&State> {
        self.map
            .get(key)
            .filter(|slot| slot.expires_at > now)
            .and_then(|slot| slot.state.as_ref())
    }

    fn store(&mut self, key: SlotKey<'_>, step: Step, now: u64) {
        let Some(update) = step.update else { return };
        let expires_at = now + step.ttl_us;
        self.earliest_expiry = self.earliest_expiry.min(expires_at);
        if let Some(slot) = self.map.get_mut(key) {
            if slot.expires_at <= now {
                slot.state = None;
            }
            update.apply(&mut slot.state);
            slot.expires_at = expires_at;
            return;
        }
        let mut state = None;
        update.apply(&mut state);
        self.map.insert_new(key, state, expires_at);
    }

    /// The shard's entries, made on the first one (a shard without any costs a check one test).
    fn entries(&mut self) -> &mut Entries {
        self.standing
            .get_or_insert_with(|| Box::new(HashMap::with_hasher(RandomState::default())))
    }

    /// Makes room for `room.new_keys` keys about to be added: sweeps expired keys once the shard has
    /// doubled since its last sweep (or, when full, once an expiry is due); then, past the bound,
    /// refuses or evicts as `inner.when_full` says. The request's own keys are neither swept nor evicted
    /// (it is about to write them), so the keys counted as new stay the ones added. A request needing
    /// more keys than a shard holds is refused as a configuration error naming `max_keys`.
    fn make_room(&mut self, room: Room<'_>, now: u64, inner: &Inner) -> Result<()> {
        if room.new_keys == 0 {
            return Ok(());
        }
        if let Some(max) = inner.max_keys_per_shard.filter(|max| room.request_keys > *max) {
            return Err(too_small_a_bound(room.request_keys, max));
        }
        let full = |shard: &Self| {
            inner
                .max_keys_per_shard
                .is_some_and(|max| shard.map.len() + room.new_keys > max)
        };
        let grown = self.map.len() >= (2 * self.swept_len).max(SWEEP_FLOOR);
        if grown || (full(self) && (now >= self.earliest_expiry || self.map.len() > self.swept_len)) {
            self.sweep(now, room.own);
        }
        while full(self) {
            match inner.when_full {
                WhenFull::Refuse => {
                    return Err(Error::StoreUnavailable(format!(
                    "the memory store is full ({} live keys in this shard, none expired): raise max_keys, \
                         or choose when_full=evict",
                    self.map.len()
                )))
                }
                WhenFull::Evict => {
                    // Always one to take while full (the request's own keys alone fit, checked above);
                    // should none be found, the request is refused rather than the loop kept going.
                    if !self.map.remove_nearest_expiry(EVICTION_SAMPLE, room.own) {
                        let max = inner.max_keys_per_shard.unwrap_or(0);
                        return Err(too_small_a_bound(room.request_keys, max));
                    }
                    inner.evictions.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }

    /// Drops every expired key, entry and override (but the keys starting with `own`, a request's base
    /// or storage key, which it is about to write), and notes the earliest expiry among the keys kept.
    fn sweep(&mut self, now: u64, own: &[u8]) {
        self.map
            .retain(|slot| slot.expires_at > now || slot.key().starts_with(own));
        if let Some(entries) = &mut self.standing {
            entries.retain(|_, entry| entry.until_us > now);
        }
        if let Some(overrides) = &mut self.overrides {
            overrides.retain(|_, (_, until)| *until > now);
        }
        self.swept_len = self.map.len();
        self.earliest_expiry = self.map.earliest_expiry().unwrap_or(u64::MAX);
    }
}

/// What one request needs of its shard's room ([`Shard::make_room`]).
struct Room<'k> {
    /// Keys it adds.
    new_keys: usize,
    /// Keys it holds once written (its rules').
    request_keys: usize,
    /// The prefix its own keys start with (its user key's base), which making room leaves alone.
    own: &'k [u8],
}

/// The error of a request whose rules need more keys than a shard of the bounded store holds.
fn too_small_a_bound(request_keys: usize, per_shard: usize) -> Error {
    let name = super::MEMORY_OPTION_NAMES[0];
    Error::configuration(
        name,
        format!(
            "a request of {request_keys} rules keeps its {request_keys} keys in one of the memory \
             store's {SHARDS} shards, and {name} leaves each shard room for {per_shard}: raise \
             {name} to at least {}",
            request_keys * SHARDS,
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_drops_the_overrides_that_ended() {
        let store = MemoryStore::unbounded();
        let overrides = Overrides::new("1000/minute".parse().unwrap());
        for i in 0..100u32 {
            let key = format!("user:{i}");
            let change = OverrideChange {
                prefix: "rl",
                key: key.as_bytes(),
                overrides: Some(&overrides),
                for_us: Some(1_000_000),
                now_us: Some(0),
            };
            assert!(store.set_override(&change));
        }
        let held = |store: &MemoryStore| -> usize {
            store
                .inner
                .shards
                .iter()
                .map(|shard| shard.lock().overrides.as_ref().map_or(0, |held| held.len()))
                .sum()
        };
        assert_eq!(held(&store), 100);
        for shard in store.inner.shards.iter() {
            shard.lock().sweep(2_000_000, b"rl:{nobody}:");
        }
        assert_eq!(
            held(&store),
            0,
            "overrides that ended are reclaimed with the expired keys"
        );
    }
}
