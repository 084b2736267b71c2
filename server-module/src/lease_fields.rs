//! The Redis encodings `fair_lock.lua` and `rw_lock.lua` share, read and written in the scripts' own
//! layout: a hold as a hash {i = grant id, f = fencing token, e = lease end µs}, sorted sets scored by
//! the µs at which an entry lapses, the fencing counter as a plain string, and expiry set from a lease
//! end. Every write is propagated as itself (`!`); expiry is the scripts' relative PEXPIRE, which
//! Redis propagates as an absolute PEXPIREAT, so replicas and the AOF never decide anything again.

use std::collections::{HashMap, HashSet};

use crate::ctx::{Context, Effect};
use crate::key_read::{KeyRead, ReadKey};
use crate::queued_lock_args::number;

/// A hold as the core keeps it: (grant id, fencing token, µs at which the lease ends).
pub type Hold = (String, u64, u64);

/// The hold stored in hash `key`, or `None` when it has no grant id (field `i`), as the scripts'
/// `HMGET key i f e` reads it. A grant id with no readable token or end is refused: the scripts never
/// write one.
pub fn read_hold(cx: &Context, key: &[u8]) -> Result<Option<Hold>, String> {
    // Through the key API, closed again before anything is written.
    let stored = ReadKey::open(cx, key);
    let fields = stored.hash(&[c"i", c"f", c"e"])?;
    let id = match fields[0] {
        Some(id) => text(id)?,
        None => return Ok(None),
    };
    match (fields[1].and_then(number), fields[2].and_then(number)) {
        (Some(fence), Some(ends)) => Ok(Some((id, fence, ends))),
        _ => Err(corrupt(key, "a hold without a fencing token and a lease end")),
    }
}

/// Stores `hold` in hash `key` (fields i, f, e) and makes the key expire when the lease ends.
pub fn write_hold(cx: &Context, key: &[u8], hold: &Hold, now: u64) -> Result<(), String> {
    let (id, fence, ends) = hold;
    let (fence_text, ends_text) = (fence.to_string(), ends.to_string());
    cx.call(
        Effect::Replicated,
        "HSET",
        &[
            key,
            b"i",
            id.as_bytes(),
            b"f",
            fence_text.as_bytes(),
            b"e",
            ends_text.as_bytes(),
        ],
    )?;
    expire_at(cx, key, *ends, now)
}

/// Deletes `key`.
pub fn delete(cx: &Context, key: &[u8]) -> Result<(), String> {
    cx.call(Effect::Replicated, "DEL", &[key]).map(drop)
}

/// The members of sorted set `key` with their scores (µs), lowest score first.
pub fn read_scored(cx: &Context, key: &[u8]) -> Result<Vec<(String, u64)>, String> {
    // `ZRANGE key 0 -1 WITHSCORES`, through the key API.
    let mut scored = Vec::new();
    ReadKey::open(cx, key).zset_all(|member, score| match score_us(score) {
        Some(score) => {
            scored.push((text(member)?, score));
            Ok(())
        }
        None => Err(corrupt(key, "a score that is not a µs timestamp")),
    })?;
    Ok(scored)
}

/// Brings sorted set `key` from `before` to `after` (member, score): removes the members `after` has
/// not, adds those it has new and rescores those whose score moved. Leaves the key's expiry alone.
pub fn sync_scored(
    cx: &Context,
    key: &[u8],
    before: &[(String, u64)],
    after: &[(String, u64)],
) -> Result<(), String> {
    // Looked up by member, not scanned per member (quadratic on a large set).
    let kept: HashSet<&str> = after.iter().map(|(member, _)| member.as_str()).collect();
    let had: HashMap<&str, u64> = before
        .iter()
        .map(|(member, score)| (member.as_str(), *score))
        .collect();
    let gone: Vec<&[u8]> = before
        .iter()
        .filter(|(member, _)| !kept.contains(member.as_str()))
        .map(|(member, _)| member.as_bytes())
        .collect();
    if !gone.is_empty() {
        let mut args = vec![key];
        args.extend(gone);
        cx.call(Effect::Replicated, "ZREM", &args)?;
    }
    let moved: Vec<(String, &str)> = after
        .iter()
        .filter(|(member, score)| had.get(member.as_str()) != Some(score))
        .map(|(member, score)| (score.to_string(), member.as_str()))
        .collect();
    if !moved.is_empty() {
        let mut args = vec![key];
        for (score, member) in &moved {
            args.push(score.as_bytes());
            args.push(member.as_bytes());
        }
        cx.call(Effect::Replicated, "ZADD", &args)?;
    }
    Ok(())
}

/// The fencing counter at `key`: the last token minted, 0 when absent or unreadable (what a call that
/// neither mints nor reports the counter makes of it, as the scripts never read it then). A call that
/// does either checks it with [`check_counter`] first.
pub fn read_counter(cx: &Context, key: &[u8]) -> Result<u64, String> {
    Ok(ReadKey::open(cx, key)
        .string()?
        .and_then(crate::args::parse_u64)
        .unwrap_or(0))
}

/// Fails the call when the counter at `key` is not a number ratelock writes (the scripts' `stored`),
/// or, for a call `minting` a token, can mint no further one (`mint_fence`). A call that reports the
/// counter still answers at 2^53 - 1, the last token a grant can mint.
pub fn check_counter(cx: &Context, key: &[u8], minting: bool) -> Result<(), String> {
    let counter = ReadKey::open(cx, key);
    let raw = counter.string()?;
    match minting {
        true => crate::args::fence_counter(raw, key).map(drop),
        false => crate::args::stored(raw, key).map(drop),
    }
}

/// Stores the last token minted at `key` (a plain SET: the one key with no expiry).
pub fn write_counter(cx: &Context, key: &[u8], last: u64) -> Result<(), String> {
    let last = last.to_string();
    cx.call(Effect::Replicated, "SET", &[key, last.as_bytes()])
        .map(drop)
}

/// Makes `key` expire when something that ends at `ends` (µs) does, as the scripts'
/// `PEXPIRE key ceil((ends - now) / 1000)`, the very command (an absolute time from an earlier clock
/// read could have passed by the time it runs). An end that leaves no whole ms (at or before `now`)
/// deletes the key at once, as the script's `PEXPIRE key 0` does.
pub fn expire_at(cx: &Context, key: &[u8], ends: u64, now: u64) -> Result<(), String> {
    expire_all_at(cx, &[key], ends, now)
}

/// [`expire_at`] for keys that expire together, in the scripts' order.
pub fn expire_all_at(cx: &Context, keys: &[&[u8]], ends: u64, now: u64) -> Result<(), String> {
    let ms = ceil_ms(ends as i128 - now as i128);
    if ms <= 0 {
        return keys.iter().try_for_each(|key| delete(cx, key));
    }
    let ms = ms.to_string();
    for key in keys {
        cx.call(Effect::Replicated, "PEXPIRE", &[key, ms.as_bytes()])?;
    }
    Ok(())
}

/// `math.ceil(us / 1000)` for a whole number of µs.
fn ceil_ms(us: i128) -> i128 {
    if us > 0 {
        (us + 999) / 1000
    } else {
        us / 1000
    }
}

/// A sorted-set score (a double) as whole µs.
fn score_us(score: f64) -> Option<u64> {
    (score >= 0.0 && score.fract() == 0.0 && score <= (1u64 << 53) as f64).then_some(score as u64)
}

/// Stored bytes as text (grant ids are UTF-8; see `queued_lock_args::grant_id`).
fn text(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| "ERR ratelock module: a stored grant id is not UTF-8".to_string())
}

fn corrupt(key: &[u8], what: &str) -> String {
    format!(
        "ERR ratelock module: {} holds {what}, which the scripts never write",
        String::from_utf8_lossy(key)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_round_up_as_the_scripts_ceil_does() {
        assert_eq!(ceil_ms(1), 1);
        assert_eq!(ceil_ms(1000), 1);
        assert_eq!(ceil_ms(1001), 2);
        assert_eq!(ceil_ms(0), 0);
        assert_eq!(ceil_ms(-1500), -1);
    }

    #[test]
    fn scores_are_whole_microseconds() {
        assert_eq!(score_us(1_700_000_000_000_001.0), Some(1_700_000_000_000_001));
        assert_eq!(score_us(1.5e3), Some(1500));
        assert_eq!(score_us(2.5), None);
        assert_eq!(score_us(-1.0), None);
    }
}
