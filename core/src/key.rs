//! Storage key layout, shared by every store and language: `<prefix>:{<escaped user key>}:<rule id>`.
//! The braces are the Redis Cluster hash tag, so all rules of one user key live in one slot.

use crate::error::{Error, Result};
use crate::rule::Rule;

/// Writes the escaped form of a user key: `%` → `%25`, `{` → `%7B`, `}` → `%7D`, and the empty key
/// → `%` (an empty hash tag would make Redis hash the whole key). The mapping is injective, so two
/// different user keys can never share storage, and no user key can close the hash tag early.
///
/// ```
/// let mut out = Vec::new();
/// ratelock::key::escape_into(&mut out, b"a}b{c%");
/// assert_eq!(out, b"a%7Db%7Bc%25");
/// ```
#[inline]
pub fn escape_into(out: &mut Vec<u8>, key: &[u8]) {
    if key.is_empty() || needs_escape(key) {
        escape_each_byte(out, key);
    } else {
        out.extend_from_slice(key);
    }
}

/// [`escape_into`] for the keys that need it (or are empty), out of the common path.
#[cold]
fn escape_each_byte(out: &mut Vec<u8>, key: &[u8]) {
    if key.is_empty() {
        out.push(b'%');
    }
    for &byte in key {
        match byte {
            b'%' => out.extend_from_slice(b"%25"),
            b'{' => out.extend_from_slice(b"%7B"),
            b'}' => out.extend_from_slice(b"%7D"),
            other => out.push(other),
        }
    }
}

/// True when `key` holds a byte [`escape_into`] rewrites (`%`, `{` or `}`). Eight bytes at a time: a
/// user key is scanned on every call of every store, and a byte at a time cost a memory-store hit more
/// than a tenth of its instructions.
#[inline]
fn needs_escape(key: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // Whether any byte of `word` is zero (exact as a yes/no: a borrow only runs on past a zero byte).
    let has_zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS != 0;
    let has_special = |word: u64| {
        has_zero(word ^ (ONES * u64::from(b'%')))
            || has_zero(word ^ (ONES * u64::from(b'{')))
            || has_zero(word ^ (ONES * u64::from(b'}')))
    };
    let word_at = |at: usize| u64::from_ne_bytes(key[at..at + 8].try_into().expect("eight bytes"));
    if key.len() < 8 {
        // Zero padding: a zero byte is none of the three.
        let mut padded = [0u8; 8];
        padded[..key.len()].copy_from_slice(key);
        return has_special(u64::from_ne_bytes(padded));
    }
    // Whole words, then the last eight bytes (overlapping the words already read).
    (0..key.len() / 8).any(|word| has_special(word_at(word * 8))) || has_special(word_at(key.len() - 8))
}

/// Writes `<prefix>:{<escaped key>}:` — the part shared by all rules of one key.
pub fn write_base(out: &mut Vec<u8>, prefix: &str, key: &[u8]) {
    out.reserve(prefix.len() + key.len() + 4);
    out.extend_from_slice(prefix.as_bytes());
    out.extend_from_slice(b":{");
    escape_into(out, key);
    out.extend_from_slice(b"}:");
}

/// The full storage key of one rule for one user key.
///
/// ```
/// let rule: ratelock::Rule = "10/second".parse()?;
/// let key = ratelock::key::storage_key("rl", b"user:42", &rule);
/// assert_eq!(key, b"rl:{user:42}:g10/1000");
/// # Ok::<(), ratelock::Error>(())
/// ```
pub fn storage_key(prefix: &str, key: &[u8], rule: &Rule) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefix.len() + key.len() + rule.id().len() + 8);
    write_base(&mut out, prefix, key);
    out.extend_from_slice(rule.id().as_bytes());
    out
}

/// The storage keys and release channel of one lock, all under the hash tag of its name.
///
/// ```
/// let keys = ratelock::key::LockKeys::new("rl", b"orders:42");
/// assert_eq!(keys.lease, b"rl:{orders:42}:lock");
/// assert_eq!(keys.fence, b"rl:{orders:42}:fence");
/// assert_eq!(keys.channel, b"rl:{orders:42}:released");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockKeys {
    /// The lease (owner, holds, fencing token), with a TTL.
    pub lease: Vec<u8>,
    /// The fencing counter; the one key without a TTL, so tokens keep rising.
    pub fence: Vec<u8>,
    /// The pub/sub channel told of every release.
    pub channel: Vec<u8>,
}

impl LockKeys {
    /// The keys of lock `name` under `prefix`.
    pub fn new(prefix: &str, name: &[u8]) -> Self {
        let with = base_with(prefix, name);
        LockKeys {
            lease: with(b"lock"),
            fence: with(b"fence"),
            channel: with(b"released"),
        }
    }
}

/// The storage key and release channel of one semaphore, under the hash tag of its name.
///
/// ```
/// let keys = ratelock::key::SemaphoreKeys::new("rl", b"pool");
/// assert_eq!(keys.permits, b"rl:{pool}:permits");
/// assert_eq!(keys.channel, b"rl:{pool}:released");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemaphoreKeys {
    /// The permits: a sorted set of permit ids scored by lease end, with a TTL.
    pub permits: Vec<u8>,
    /// The pub/sub channel told of every release.
    pub channel: Vec<u8>,
}

impl SemaphoreKeys {
    /// The keys of semaphore `name` under `prefix`.
    pub fn new(prefix: &str, name: &[u8]) -> Self {
        let with = base_with(prefix, name);
        SemaphoreKeys {
            permits: with(b"permits"),
            channel: with(b"released"),
        }
    }
}

/// The keys of one fair lock, under the hash tag of its name.
///
/// ```
/// let keys = ratelock::key::FairLockKeys::new("rl", b"jobs");
/// assert_eq!(keys.holder, b"rl:{jobs}:fair");
/// assert_eq!(keys.queue, b"rl:{jobs}:fair-queue");
/// assert_eq!(keys.wake_prefix, b"rl:{jobs}:wake:");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FairLockKeys {
    /// The holder (grant id, fencing token, lease end), with a TTL.
    pub holder: Vec<u8>,
    /// Waiting grant ids in arrival order.
    pub queue: Vec<u8>,
    /// When each waiter's place lapses.
    pub places: Vec<u8>,
    /// The fencing counter (shared with a `DistributedLock` of the same name: tokens only rise).
    pub fence: Vec<u8>,
    /// Each waiter is woken on this prefix followed by its grant id.
    pub wake_prefix: Vec<u8>,
}

impl FairLockKeys {
    /// The keys of fair lock `name` under `prefix`.
    pub fn new(prefix: &str, name: &[u8]) -> Self {
        let with = base_with(prefix, name);
        FairLockKeys {
            holder: with(b"fair"),
            queue: with(b"fair-queue"),
            places: with(b"fair-places"),
            fence: with(b"fence"),
            wake_prefix: with(b"wake:"),
        }
    }

    /// The channel that wakes waiter `id`.
    pub fn wake_channel(&self, id: &str) -> Vec<u8> {
        [self.wake_prefix.as_slice(), id.as_bytes()].concat()
    }
}

/// The keys of one read-write lock, under the hash tag of its name.
///
/// ```
/// let keys = ratelock::key::RwLockKeys::new("rl", b"config");
/// assert_eq!(keys.readers, b"rl:{config}:rw-readers");
/// assert_eq!(keys.writer, b"rl:{config}:rw-writer");
/// assert_eq!(keys.channel, b"rl:{config}:released");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RwLockKeys {
    /// Read holds, scored by lease end.
    pub readers: Vec<u8>,
    /// The write hold (grant id, fencing token, lease end), with a TTL.
    pub writer: Vec<u8>,
    /// Writers waiting (writer preference), scored by when their mark lapses.
    pub waiting: Vec<u8>,
    /// The fencing counter.
    pub fence: Vec<u8>,
    /// Told whenever the lock may have become available.
    pub channel: Vec<u8>,
}

impl RwLockKeys {
    /// The keys of read-write lock `name` under `prefix`.
    pub fn new(prefix: &str, name: &[u8]) -> Self {
        let with = base_with(prefix, name);
        RwLockKeys {
            readers: with(b"rw-readers"),
            writer: with(b"rw-writer"),
            waiting: with(b"rw-waiting"),
            fence: with(b"fence"),
            channel: with(b"released"),
        }
    }
}

/// `<prefix>:{<escaped name>}:` followed by a suffix, for the keys of one lock.
fn base_with(prefix: &str, name: &[u8]) -> impl Fn(&[u8]) -> Vec<u8> {
    let mut base = Vec::with_capacity(prefix.len() + name.len() + 8);
    write_base(&mut base, prefix, name);
    move |suffix| [base.as_slice(), suffix].concat()
}

/// The longest user key or lock name accepted, in bytes: 64 KiB. Redis would take more, but every call
/// sends the key several times (once per rule), so a huge key makes each call slow enough to outlast its
/// timeout; real keys (ids, addresses, routes) are far shorter.
pub const MAX_KEY_BYTES: usize = 64 * 1024;

/// Checks a user key or lock name (`argument` names it in the error): at most [`MAX_KEY_BYTES`].
///
/// ```
/// use ratelock::key::{check_key, MAX_KEY_BYTES};
/// assert!(check_key("key", &vec![b'k'; MAX_KEY_BYTES]).is_ok());
/// let err = check_key("name", &vec![b'k'; MAX_KEY_BYTES + 1]).unwrap_err();
/// assert!(err.is_invalid_argument() && err.to_string().contains("`name`"));
/// ```
#[inline]
pub fn check_key(argument: &'static str, key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(key_too_long(argument, key.len()));
    }
    Ok(())
}

/// [`check_key`]'s error, out of the hot path.
#[cold]
#[inline(never)]
fn key_too_long(argument: &'static str, len: usize) -> Error {
    Error::invalid_argument(
        argument,
        format!("{len} bytes is longer than the limit of {MAX_KEY_BYTES} bytes (64 KiB)"),
    )
}

/// Checks a key prefix: it may not contain braces (they would move the hash tag).
pub fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.contains(['{', '}']) {
        return Err(Error::invalid_argument("prefix", "must not contain '{' or '}'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::needs_escape;

    /// The byte-at-a-time answer the word-at-a-time scan must give.
    fn scanned(key: &[u8]) -> bool {
        key.iter().any(|b| matches!(b, b'%' | b'{' | b'}'))
    }

    #[test]
    fn every_special_byte_is_found_at_every_position_of_every_length() {
        for len in 0..=40 {
            // Bytes next to the special ones (and 0x80 and 0xFF, which set the high bit) never count.
            let plain: Vec<u8> = (0..len)
                .map(|i| [b'a', b'$', b'&', b'z', b'|', b'~', 0x80, 0xFF][i % 8])
                .collect();
            assert!(!needs_escape(&plain), "{plain:?}");
            for at in 0..len {
                for special in [b'%', b'{', b'}'] {
                    let mut key = plain.clone();
                    key[at] = special;
                    assert!(needs_escape(&key), "len {len}, {special} at {at}");
                }
            }
        }
    }

    #[test]
    fn agrees_with_a_byte_scan_on_every_byte_pair() {
        for first in 0..=255u8 {
            for second in [0u8, b'%', b'{', b'}', b'a', 0x7C, 0xA5] {
                for len in [2usize, 9, 17] {
                    let mut key = vec![b'k'; len];
                    key[0] = first;
                    key[len - 1] = second;
                    assert_eq!(needs_escape(&key), scanned(&key), "{key:?}");
                }
            }
        }
    }
}
