//! A rule's state in Redis, in exactly `limit.lua`'s layout, read into the core's `State` and written
//! back from its `Update`:
//! - gcra: a string, the TAT in µs;
//! - token bucket: hash {t = scaled tokens, l = last refill µs};
//! - leaky bucket: hash {v = level as µs of drain, l = last update µs};
//! - fixed window: hash {w = window index, c = count};
//! - sliding window: hash {w = window index, c = its count, p = previous window's count};
//! - sliding log: sorted set, score = µs of an admitted unit, member "<µs>:<n>".
//!
//! Numbers are decimal integers. Every write sets an absolute expiry (PXAT / PEXPIREAT) of
//! `max(ceil(ttl µs / 1000), 1000)` ms from the server clock, the script's `px` with its 1 s floor, and
//! is propagated as the command the script would send with that absolute time (SET .. PXAT,
//! PEXPIREAT), so replicas and the AOF see absolute times.

use std::collections::VecDeque;
use std::ffi::CStr;

use ratelock::algorithm::{State, Update};
use ratelock::{Algorithm, Rule};

use crate::args::parse_u64;
use crate::ctx::{Context, Effect};
use crate::digits::Digits;
use crate::key_read::{KeyRead, ReadKey};
use crate::key_write::WriteKey;

/// The script's `MIN_TTL_MS`: no written key lives less than one second.
const MIN_TTL_MS: u64 = 1000;

/// A rule's state as read, with the stored bytes of each hash field (`None` when absent), so that a
/// write can leave alone the fields whose bytes stay the same.
pub struct Stored<'k> {
    /// The state the core decides from; `None` is "fresh".
    pub state: Option<State>,
    fields: [Option<&'k [u8]>; 3],
}

/// The stored state of `rule` at `key`, read through a key opened for reading. An absent or unreadable
/// state is `None` ("fresh"), as in the script, where `tonumber` of a missing field is nil. For a
/// sliding log this first drops the entries that left the window (a replicated write, in both modes,
/// as the script does).
pub fn read(cx: &Context, key: &[u8], rule: &Rule, now: u64) -> Result<Option<State>, String> {
    if rule.algorithm() == Algorithm::SlidingLog {
        return read_log(cx, key, rule, now);
    }
    Ok(read_open(&ReadKey::open(cx, key), rule)?.state)
}

/// [`read`] of any algorithm but the sliding log, through a key already open (for reading, or for
/// reading and writing when the call may then write it: one lookup for both).
pub fn read_open<'k>(stored: &'k impl KeyRead, rule: &Rule) -> Result<Stored<'k>, String> {
    let number = |v: Option<&[u8]>| v.and_then(parse_u64);
    let hash3 = |names: &[&CStr; 3]| stored.hash(names);
    let hash2 = |names: &[&CStr; 2]| stored.hash(names).map(|[a, b]| [a, b, None]);
    let (state, fields) = match rule.algorithm() {
        Algorithm::Gcra => {
            let tat = number(stored.string()?);
            (tat.map(|tat| State::Gcra { tat }), [None; 3])
        }
        Algorithm::TokenBucket => {
            let fields = hash2(&[c"t", c"l"])?;
            let state = match (number(fields[0]), number(fields[1])) {
                (Some(tokens), Some(last)) => Some(State::TokenBucket { tokens, last }),
                _ => None,
            };
            (state, fields)
        }
        Algorithm::LeakyBucket => {
            let fields = hash2(&[c"v", c"l"])?;
            let state = match (number(fields[0]), number(fields[1])) {
                (Some(level), Some(last)) => Some(State::LeakyBucket { level, last }),
                _ => None,
            };
            (state, fields)
        }
        Algorithm::FixedWindow => {
            let fields = hash2(&[c"w", c"c"])?;
            let state = number(fields[0]).map(|window| State::FixedWindow {
                window,
                count: number(fields[1]).unwrap_or(0),
            });
            (state, fields)
        }
        Algorithm::SlidingWindow => {
            let fields = hash3(&[c"w", c"c", c"p"])?;
            let state = number(fields[0]).map(|window| State::SlidingWindow {
                window,
                current: number(fields[1]).unwrap_or(0),
                previous: number(fields[2]).unwrap_or(0),
            });
            (state, fields)
        }
        Algorithm::SlidingLog => {
            return Err("ERR ratelock module: a sliding log is read with its window trimmed".into())
        }
        other => {
            return Err(format!(
                "ERR ratelock module: algorithm {other} is not supported, use the Lua path"
            ))
        }
    };
    Ok(Stored { state, fields })
}

/// [`read_open`] for a hit, through a key open for reading and writing: any algorithm, the sliding log
/// included (its stale entries removed through the same key).
pub fn read_for_hit<'k>(stored: &'k WriteKey<'_>, rule: &Rule, now: u64) -> Result<Stored<'k>, String> {
    if rule.algorithm() != Algorithm::SlidingLog {
        return read_open(stored, rule);
    }
    let mut stale = Vec::new();
    let entries = log_entries(stored, rule, now, |member| stale.push(member.to_vec()))?;
    if !stale.is_empty() {
        let through = (now as i128 - rule.period().as_micros() as i128).to_string();
        stored.zset_remove_through(&stale, through.as_bytes())?;
    }
    Ok(Stored {
        state: entries,
        fields: [None; 3],
    })
}

/// A sliding log's entries still in the window at `now` (µs, ascending), handing each stale member to
/// `stale` (never checked: the script's ZREMRANGEBYSCORE drops it unseen).
fn log_entries(
    stored: &impl KeyRead,
    rule: &Rule,
    now: u64,
    mut stale: impl FnMut(&[u8]),
) -> Result<Option<State>, String> {
    // Redis reads the bound as a double; µs timestamps are well below 2^53, where doubles are exact.
    let last_stale = (now as i128 - rule.period().as_micros() as i128) as f64;
    let mut entries = VecDeque::new();
    stored.zset_all(|member, score| {
        if score <= last_stale {
            stale(member);
            return Ok(());
        }
        match score {
            s if s >= 0.0 && s.fract() == 0.0 && s < 2f64.powi(53) => entries.push_back(s as u64),
            _ => return Err("ERR ratelock module: a sliding-log entry's score is not a µs timestamp".into()),
        }
        Ok(())
    })?;
    Ok((!entries.is_empty()).then_some(State::SlidingLog { entries }))
}

/// Sliding log: drop what left the window, then read every entry's µs (ascending). The set is read
/// through the key API first, so that the ZREMRANGEBYSCORE is sent only when it removes something (one
/// that removes nothing is not propagated either, so replicas and the AOF see the same).
fn read_log(cx: &Context, key: &[u8], rule: &Rule, now: u64) -> Result<Option<State>, String> {
    let mut stale = false;
    let entries = log_entries(&ReadKey::open(cx, key), rule, now, |_| stale = true)?;
    if stale {
        let through = (now as i128 - rule.period().as_micros() as i128).to_string();
        cx.call(
            Effect::Replicated,
            "ZREMRANGEBYSCORE",
            &[key, b"-inf", through.as_bytes()],
        )?;
    }
    Ok(entries)
}

/// Stores `update` at `key` and gives it the script's TTL for `ttl_us`. Strings and hashes are written
/// through the key API (propagated as the same SET .. PXAT, HSET and PEXPIREAT); the sliding log's
/// sorted set stays on `RedisModule_Call`.
pub fn write(cx: &Context, key: &[u8], update: Update, ttl_us: u64) -> Result<(), String> {
    if let Update::Append { at, count, .. } = update {
        // The stale entries (`drop_through`) were already removed when the log was read.
        let expire_at = Digits::of(expire_at(cx, ttl_us));
        return append_log(cx, key, at, count, expire_at.as_bytes());
    }
    write_open(&WriteKey::open(cx, key)?, None, update, ttl_us)
}

/// [`write`] of any algorithm but the sliding log, through the key the state was read from (`read`,
/// the fields [`read_open`] found, or `None` to write every field). A hash field whose bytes stay the
/// same is not written again; the key's TTL always is, as the script's PEXPIRE after its HSET.
pub fn write_open(
    stored: &WriteKey<'_>,
    read: Option<&Stored<'_>>,
    update: Update,
    ttl_us: u64,
) -> Result<(), String> {
    let expire_at = expire_at(stored.context(), ttl_us);
    let hset = |pairs: &[(&CStr, u64)]| -> Result<(), String> {
        let digits: [Digits; 3] = std::array::from_fn(|i| Digits::of(pairs.get(i).map_or(0, |p| p.1)));
        let mut fields: [(&CStr, &[u8]); 3] = [(c"", b""); 3];
        let mut changed = 0;
        for (i, (field, _)) in pairs.iter().enumerate() {
            let value = digits[i].as_bytes();
            if read.is_some_and(|r| r.fields[i] == Some(value)) {
                continue;
            }
            fields[changed] = (*field, value);
            changed += 1;
        }
        if changed > 0 {
            stored.hash_set(&fields[..changed])?;
        }
        stored.expire_at(expire_at)
    };
    match update {
        Update::Replace(State::Gcra { tat }) => {
            stored.set_string_until(Digits::of(tat).as_bytes(), expire_at)
        }
        Update::Replace(State::TokenBucket { tokens, last }) => hset(&[(c"t", tokens), (c"l", last)]),
        Update::Replace(State::LeakyBucket { level, last }) => hset(&[(c"v", level), (c"l", last)]),
        Update::Replace(State::FixedWindow { window, count }) => hset(&[(c"w", window), (c"c", count)]),
        Update::Replace(State::SlidingWindow {
            window,
            current,
            previous,
        }) => hset(&[(c"w", window), (c"c", current), (c"p", previous)]),
        // The stale entries (`drop_through`) were already removed when the log was read.
        Update::Append { at, count, .. } => {
            // `ZCOUNT key at at`: the members already at this µs, numbered on from.
            let mut taken = 0u64;
            stored.zset_scored(at as f64, at as f64, |_, _| {
                taken += 1;
                Ok(())
            })?;
            let members: Vec<Vec<u8>> = (taken..taken + count)
                .map(|n| format!("{at}:{n}").into_bytes())
                .collect();
            stored.zset_add(at as f64, Digits::of(at).as_bytes(), &members)?;
            stored.expire_at(expire_at)
        }
        Update::Replace(State::SlidingLog { .. }) => {
            Err("ERR ratelock module: a sliding log is only ever appended to".into())
        }
    }
}

/// The absolute expiry (ms since the epoch, server clock) of a key written now to last `ttl_us`: the
/// script's `max(ceil(ttl / 1000), MIN_TTL_MS)` ms from now.
fn expire_at(cx: &Context, ttl_us: u64) -> u64 {
    cx.server_ms() + ttl_us.div_ceil(1000).max(MIN_TTL_MS)
}

/// Sliding log: `count` members "<at>:<n>" scored `at`, numbered on from those already at `at`.
fn append_log(cx: &Context, key: &[u8], at: u64, count: u64, expire_at: &[u8]) -> Result<(), String> {
    let stamp = at.to_string();
    // `ZCOUNT key at at`, through the key API.
    let mut taken = 0u64;
    ReadKey::open(cx, key).zset_scored(at as f64, at as f64, |_, _| {
        taken += 1;
        Ok(())
    })?;
    let members: Vec<String> = (taken..taken + count).map(|n| format!("{stamp}:{n}")).collect();
    let mut args: Vec<&[u8]> = vec![key];
    for member in &members {
        args.push(stamp.as_bytes());
        args.push(member.as_bytes());
    }
    cx.call(Effect::Replicated, "ZADD", &args)?;
    cx.call(Effect::Replicated, "PEXPIREAT", &[key, expire_at])?;
    Ok(())
}
