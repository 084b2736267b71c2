//! One memory-store shard's table of rule states, found by a hash made once per call: the user key's
//! hash (which chose the shard too) mixed with the rule's own fixed hash, instead of hashing the
//! whole storage key `<prefix>:{<escaped key>}:<rule id>` a second time.

use hashbrown::HashTable;

use crate::algorithm::State;
use crate::rule::Rule;

/// One rule's state for one user key, with the storage key and hash it was found by.
pub(super) struct Slot {
    key: Box<[u8]>,
    hash: u64,
    pub(super) state: Option<State>,
    pub(super) expires_at: u64,
}

impl Slot {
    /// Its storage key.
    pub(super) fn key(&self) -> &[u8] {
        &self.key
    }
}

/// A storage key and its hash ([`SlotKey::of`]).
#[derive(Clone, Copy)]
pub(super) struct SlotKey<'k> {
    hash: u64,
    bytes: &'k [u8],
}

impl<'k> SlotKey<'k> {
    /// `rule`'s storage key `bytes` (`<prefix>:{<escaped key>}:<storage id>`), for the user key whose
    /// base `<prefix>:{<escaped key>}:` hashed to `base_hash`.
    #[inline]
    pub(super) fn of(base_hash: u64, rule: &Rule, bytes: &'k [u8]) -> Self {
        SlotKey {
            hash: base_hash ^ rule.storage_hash(),
            bytes,
        }
    }

    /// The storage key.
    #[inline]
    pub(super) fn bytes(self) -> &'k [u8] {
        self.bytes
    }

    #[inline]
    fn matches(self) -> impl Fn(&Slot) -> bool + 'k {
        move |slot| slot.hash == self.hash && *slot.key == *self.bytes
    }
}

/// The states of one shard, by storage key.
#[derive(Default)]
pub(super) struct Slots(HashTable<Slot>);

impl Slots {
    #[inline]
    pub(super) fn get(&self, key: SlotKey<'_>) -> Option<&Slot> {
        self.0.find(key.hash, key.matches())
    }

    #[inline]
    pub(super) fn get_mut(&mut self, key: SlotKey<'_>) -> Option<&mut Slot> {
        self.0.find_mut(key.hash, key.matches())
    }

    pub(super) fn contains(&self, key: SlotKey<'_>) -> bool {
        self.get(key).is_some()
    }

    /// Adds a key this table does not hold.
    pub(super) fn insert_new(&mut self, key: SlotKey<'_>, state: Option<State>, expires_at: u64) {
        let slot = Slot {
            key: key.bytes.into(),
            hash: key.hash,
            state,
            expires_at,
        };
        self.0.insert_unique(key.hash, slot, |slot| slot.hash);
    }

    /// Forgets a key; true when it was held.
    pub(super) fn remove(&mut self, key: SlotKey<'_>) -> bool {
        match self.0.find_entry(key.hash, key.matches()) {
            Ok(held) => {
                held.remove();
                true
            }
            Err(_) => false,
        }
    }

    /// Keeps the states `keep` says to keep.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&Slot) -> bool) {
        self.0.retain(|slot| keep(slot));
    }

    /// Forgets the key closest to expiry among the first `sample` (table order: effectively random)
    /// that do not start with `spared`; false when every key does (nothing was forgotten).
    pub(super) fn remove_nearest_expiry(&mut self, sample: usize, spared: &[u8]) -> bool {
        let victim = self
            .0
            .iter()
            .filter(|slot| !slot.key.starts_with(spared))
            .take(sample)
            .min_by_key(|slot| slot.expires_at)
            .map(|slot| (slot.hash, slot.key.clone()));
        let Some((hash, key)) = victim else {
            return false;
        };
        match self.0.find_entry(hash, |slot| slot.key == key) {
            Ok(held) => {
                held.remove();
                true
            }
            Err(_) => false,
        }
    }

    pub(super) fn earliest_expiry(&self) -> Option<u64> {
        self.0.iter().map(|slot| slot.expires_at).min()
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn clear(&mut self) {
        self.0.clear();
    }
}

/// A user key's storage keys, built in one buffer: its base `<prefix>:{<escaped key>}:` (hashed once),
/// then one rule's id after it at a time.
pub(super) struct StorageKeys<'b> {
    buffer: &'b mut Vec<u8>,
    base_len: usize,
    base_hash: u64,
}

impl<'b> StorageKeys<'b> {
    /// The keys under the base `buffer` holds, which hashed to `base_hash`.
    #[inline]
    pub(super) fn new(buffer: &'b mut Vec<u8>, base_hash: u64) -> Self {
        let base_len = buffer.len();
        StorageKeys {
            buffer,
            base_len,
            base_hash,
        }
    }

    /// `<prefix>:{<escaped key>}:`, by which the key's entry and override are kept.
    #[inline]
    pub(super) fn base(&self) -> &[u8] {
        &self.buffer[..self.base_len]
    }

    /// `rule`'s storage key.
    #[inline]
    pub(super) fn of(&mut self, rule: &Rule) -> SlotKey<'_> {
        self.buffer.truncate(self.base_len);
        self.buffer.extend_from_slice(rule.storage_id().as_bytes());
        SlotKey::of(self.base_hash, rule, self.buffer)
    }
}
