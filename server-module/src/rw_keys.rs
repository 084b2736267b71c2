//! A read-write lock's four keys in `rw_lock.lua`'s layout, read into the core's `RwState` and brought
//! back in line with it after a call:
//! - KEYS[1] readers sorted set, member = "<token>:<grant id>", score = lease end µs, expiring at the
//!   last reader's end (set when a reader is granted or extended);
//! - KEYS[2] writer hash {i, f, e}, expiring at the lease end;
//! - KEYS[3] waiting writers sorted set, member = grant id, score = µs at which the mark lapses,
//!   expiring at the last mark's end (set when a writer marks itself waiting);
//! - KEYS[4] fencing counter, a plain string with no expiry.

use ratelock::algorithm::rwlock::RwState;

use crate::ctx::Context;
use crate::lease_fields::{
    delete, expire_at, read_counter, read_hold, read_scored, sync_scored, write_counter, write_hold, Hold,
};

/// The keys of one read-write lock, in the script's KEYS order.
pub struct RwKeys<'a> {
    /// KEYS[1]: the readers sorted set.
    pub readers: &'a [u8],
    /// KEYS[2]: the writer hash.
    pub writer: &'a [u8],
    /// KEYS[3]: the waiting writers sorted set.
    pub waiting: &'a [u8],
    /// KEYS[4]: the fencing counter.
    pub counter: &'a [u8],
}

/// What the script writes after a call beyond what comparing the state before and after shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rewrites {
    /// A write grant or a writer's extension: the writer hash and its expiry are written.
    pub writer: bool,
    /// A grant: the counter is written.
    pub counter: bool,
    /// A read grant or a reader's extension: the readers expire at the last reader's end.
    pub readers_expiry: bool,
    /// A writer marked waiting: the marks expire at the last mark's end.
    pub waiting_expiry: bool,
}

/// The lock as stored.
pub fn read(cx: &Context, keys: &RwKeys) -> Result<RwState, String> {
    let readers = read_scored(cx, keys.readers)?
        .into_iter()
        .map(|(member, ends)| reader_hold(&member, ends))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RwState {
        readers,
        writer: read_hold(cx, keys.writer)?,
        waiting_writers: read_scored(cx, keys.waiting)?,
        last_fence: read_counter(cx, keys.counter)?,
    })
}

/// Brings the keys from `before` (as read) to `after` (as the core left it) the way the script's
/// writes leave them, at `now` (µs): ended, released or lapsed entries leave their sets, new or moved
/// ones are scored, a writer that is gone is deleted; plus what `rewrites` names.
pub fn write(
    cx: &Context,
    keys: &RwKeys,
    now: u64,
    before: &RwState,
    after: &RwState,
    rewrites: Rewrites,
) -> Result<(), String> {
    let writer_rewritten = rewrites.writer && after.writer.is_some();
    if !writer_rewritten && after.writer.is_some() && after.writer != before.writer {
        return Err("ERR ratelock module: the rw lock's writer changed without a grant or extension".into());
    }
    sync_scored(cx, keys.readers, &reader_members(before), &reader_members(after))?;
    if rewrites.readers_expiry {
        if let Some(last) = after.readers.iter().map(|&(_, _, ends)| ends).max() {
            expire_at(cx, keys.readers, last, now)?;
        }
    }
    sync_scored(cx, keys.waiting, &before.waiting_writers, &after.waiting_writers)?;
    if rewrites.waiting_expiry {
        if let Some(last) = after.waiting_writers.iter().map(|&(_, ends)| ends).max() {
            expire_at(cx, keys.waiting, last, now)?;
        }
    }
    match (&before.writer, &after.writer) {
        (_, Some(hold)) if writer_rewritten => write_hold(cx, keys.writer, hold, now)?,
        (Some(_), None) => delete(cx, keys.writer)?,
        _ => {}
    }
    if rewrites.counter {
        write_counter(cx, keys.counter, after.last_fence)?;
    }
    Ok(())
}

/// A reader's member in the readers set: "<token>:<grant id>".
fn reader_member(id: &str, fence: u64) -> String {
    format!("{fence}:{id}")
}

/// The readers of `state` as (member, lease end).
fn reader_members(state: &RwState) -> Vec<(String, u64)> {
    state
        .readers
        .iter()
        .map(|(id, fence, ends)| (reader_member(id, *fence), *ends))
        .collect()
}

/// A read hold from its member and score; a member the script would not have written is refused.
fn reader_hold(member: &str, ends: u64) -> Result<Hold, String> {
    let parsed = member
        .split_once(':')
        .and_then(|(token, id)| Some((id.to_string(), token.parse::<u64>().ok()?, ends)));
    match parsed {
        Some((id, fence, ends)) if reader_member(&id, fence) == member => Ok((id, fence, ends)),
        _ => Err(format!(
            "ERR ratelock module: a reader {member:?} is not \"<token>:<grant id>\", which the script never writes"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_member_is_token_colon_id() {
        assert_eq!(reader_member("a:b", 7), "7:a:b");
        assert_eq!(reader_hold("7:a:b", 9), Ok(("a:b".to_string(), 7, 9)));
        assert!(reader_hold("07:a", 9).is_err());
        assert!(reader_hold("x:a", 9).is_err());
        assert!(reader_hold("7", 9).is_err());
    }
}
