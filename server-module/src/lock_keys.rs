//! A lock in Redis, in exactly the layout of `lock_acquire.lua` and its siblings, read into the core's
//! `LockRecord` and written back from the record the core returns:
//! - the lease: a hash {o = owner token, n = holds, f = fencing token}, alive while the key is (its TTL
//!   is the lease's end);
//! - the fencing counter: a string, the last token minted, with no TTL.
//!
//! Every write goes through the key API (`key_write`) and is propagated as the command the scripts send
//! (SET, HSET, DEL), with an absolute expiry (PEXPIREAT) taken from the server's ms clock, so replicas
//! and the AOF never decide anything again.

use ratelock::algorithm::lease::{Lease, LockRecord};

use std::ffi::CStr;

use crate::args::parse_u64;
use crate::ctx::Context;
use crate::digits::Digits;
use crate::key_read::{KeyRead, ReadKey};
use crate::key_write::WriteKey;
use crate::lease_args::{token_bytes, token_text};

/// The keys of one lock: its lease hash, and its fencing counter for the calls that mint or report
/// tokens (acquire, state).
#[derive(Debug, Clone, Copy)]
pub struct LockKeys<'a> {
    /// `<prefix>:{<name>}:lock`.
    pub lease: &'a [u8],
    /// `<prefix>:{<name>}:fence`, when the call has it.
    pub counter: Option<&'a [u8]>,
}

/// Whether a read needs the lease's end. Only the calls that report or move it do (acquire when busy,
/// extend, state); a release leaves the end as it was, so it skips the read, as `lock_release.lua` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseEnd {
    /// Read the lease key's TTL into `expires_at`.
    Read,
    /// Leave it: `expires_at` is `now`, and the call must not change it.
    Skip,
}

/// A lock's keys opened for reading and writing, for a call that may change them: each is looked up
/// once, read and then written through the same handle.
pub struct OpenLock<'cx> {
    lease: WriteKey<'cx>,
    pub(crate) counter: Option<WriteKey<'cx>>,
}

impl<'cx> OpenLock<'cx> {
    /// Opens the lease and, when the call has it, the fencing counter.
    pub fn open(cx: &'cx Context, keys: LockKeys<'_>) -> Result<OpenLock<'cx>, String> {
        if keys.counter == Some(keys.lease) {
            return Err("ERR ratelock module: the lease and the fencing counter must be two keys".into());
        }
        Ok(OpenLock {
            lease: WriteKey::open(cx, keys.lease)?,
            counter: keys
                .counter
                .map(|counter| WriteKey::open(cx, counter))
                .transpose()?,
        })
    }
}

/// The lock as stored, read by name (for a call that only reads it). The lease key exists only while
/// the lease lasts, so a stored lease holds the lock (hand it to `lease::apply_held`); its `expires_at`
/// is `now` plus the key's PTTL in µs, as the scripts report "µs until the lease ends" (or `now` with
/// [`LeaseEnd::Skip`]). An absent or unreadable counter counts as 0, as `tonumber(...) or 0` does.
pub fn read(cx: &Context, keys: LockKeys<'_>, now: u64, end: LeaseEnd) -> Result<LockRecord, String> {
    let lease = read_lease(&ReadKey::open(cx, keys.lease), now, end)?;
    let last_fence = match keys.counter {
        Some(counter) => read_counter(&ReadKey::open(cx, counter))?,
        None => 0,
    };
    Ok(LockRecord { lease, last_fence })
}

/// [`read`] through the keys of an [`OpenLock`].
pub fn read_open(lock: &OpenLock<'_>, now: u64, end: LeaseEnd) -> Result<LockRecord, String> {
    Ok(LockRecord {
        lease: read_lease(&lock.lease, now, end)?,
        last_fence: lock.counter.as_ref().map(read_counter).transpose()?.unwrap_or(0),
    })
}

fn read_lease(stored: &impl KeyRead, now: u64, end: LeaseEnd) -> Result<Option<Lease>, String> {
    Ok(match stored.hash(&[c"o", c"n", c"f"])? {
        [None, ..] => None,
        [Some(owner), holds, fence] => Some(Lease {
            owner: token_text(owner),
            // `tonumber(n) or 1`, as lock_release.lua reads it.
            holds: holds.and_then(parse_u64).unwrap_or(1),
            fence: fence.and_then(parse_u64).ok_or_else(|| {
                "ERR ratelock module: the lock's lease has no fencing token (field f)".to_string()
            })?,
            // `max(PTTL, 0) * 1000`: the µs until the lease key expires.
            expires_at: match end {
                LeaseEnd::Read => now + stored.pttl().max(0) as u64 * 1000,
                LeaseEnd::Skip => now,
            },
        }),
    })
}

/// The counter as a call that neither mints nor reports it reads it: 0 when absent or unreadable (the
/// scripts do not read it then); see [`check_counter`].
fn read_counter(stored: &impl KeyRead) -> Result<u64, String> {
    Ok(stored.string()?.and_then(parse_u64).unwrap_or(0))
}

/// Fails the call when the counter is not a number ratelock writes (the scripts' `stored`), or, for a
/// call `minting` a token, can mint no further one (`mint_fence`).
pub fn check_counter(stored: &impl KeyRead, key: &[u8], minting: bool) -> Result<(), String> {
    match minting {
        true => crate::args::fence_counter(stored.string()?, key).map(drop),
        false => crate::args::stored(stored.string()?, key).map(drop),
    }
}

/// Stores what changed from `before` to `after` (the record the core returned for a call at `now`)
/// through the keys it was read from: the counter when a token was minted; the lease's changed fields
/// (all three for a new grant) and, when its end moved or the call `renewed` it (a granted acquire, a
/// done extend: the scripts' PEXPIRE, which also restarts a key whose last ms has come), its expiry; or
/// the lease's deletion.
///
/// The expiry is the scripts' `PEXPIRE max(ceil(µs left / 1000), 1)`, sent as PEXPIREAT from the server
/// clock (an acquire's lease is at least 1 µs, so its `ceil` is already at least 1 ms).
pub fn write_open(
    lock: &OpenLock<'_>,
    before: &LockRecord,
    after: &LockRecord,
    now: u64,
    renewed: bool,
) -> Result<(), String> {
    if after.last_fence != before.last_fence {
        let counter = lock
            .counter
            .as_ref()
            .ok_or("ERR ratelock module: a fencing token was minted without the counter key")?;
        counter.set_string_forever(Digits::of(after.last_fence).as_bytes())?;
    }
    let stored = &lock.lease;
    match (&before.lease, &after.lease) {
        (None, None) => Ok(()),
        (Some(_), None) => stored.delete(),
        (was, Some(lease)) => {
            write_fields(stored, was.as_ref(), lease)?;
            if renewed || was.as_ref().map(|w| w.expires_at) != Some(lease.expires_at) {
                let ms = lease.expires_at.saturating_sub(now).div_ceil(1000).max(1);
                stored.expire_at(stored.context().server_ms() + ms)?;
            }
            Ok(())
        }
    }
}

/// HSET of the fields of `lease` that differ from `was` (every field when there was no lease).
fn write_fields(stored: &WriteKey<'_>, was: Option<&Lease>, lease: &Lease) -> Result<(), String> {
    let owner = token_bytes(&lease.owner);
    let (holds, fence) = (Digits::of(lease.holds), Digits::of(lease.fence));
    let mut fields: [(&CStr, &[u8]); 3] = [(c"", b""); 3];
    let mut changed = 0;
    for (field, value, differs) in [
        (c"o", owner.as_slice(), was.is_none_or(|w| w.owner != lease.owner)),
        (c"n", holds.as_bytes(), was.is_none_or(|w| w.holds != lease.holds)),
        (c"f", fence.as_bytes(), was.is_none_or(|w| w.fence != lease.fence)),
    ] {
        if differs {
            fields[changed] = (field, value);
            changed += 1;
        }
    }
    if changed > 0 {
        stored.hash_set(&fields[..changed])?;
    }
    Ok(())
}
