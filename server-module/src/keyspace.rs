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
use crate::key_read::ReadKey;
use crate::key_write::WriteKey;

/// The script's `MIN_TTL_MS`: no written key lives less than one second.
const MIN_TTL_MS: u64 = 1000;

/// The stored state of `rule` at `key`. An absent or unreadable state is `None` ("fresh"), as in
/// the script, where `tonumber` of a missing field is nil. For a sliding log this first drops the
/// entries that left the window (a replicated write, in both modes, as the script does).
pub fn read(cx: &Context, key: &[u8], rule: &Rule, now: u64) -> Result<Option<State>, String> {
    // Strings and hashes are read through the key API (no RedisModule_Call); the key is closed again
    // before anything is written.
    let fields = |names: &[&CStr]| -> Result<Vec<Option<u64>>, String> {
        let stored = ReadKey::open(cx, key);
        Ok(stored
            .hash(names)?
            .into_iter()
            .map(|v| v.and_then(parse_u64))
            .collect())
    };
    Ok(match rule.algorithm() {
        Algorithm::Gcra => ReadKey::open(cx, key)
            .string()?
            .and_then(parse_u64)
            .map(|tat| State::Gcra { tat }),
        Algorithm::TokenBucket => match fields(&[c"t", c"l"])?[..] {
            [Some(tokens), Some(last)] => Some(State::TokenBucket { tokens, last }),
            _ => None,
        },
        Algorithm::LeakyBucket => match fields(&[c"v", c"l"])?[..] {
            [Some(level), Some(last)] => Some(State::LeakyBucket { level, last }),
            _ => None,
        },
        Algorithm::FixedWindow => match fields(&[c"w", c"c"])?[..] {
            [Some(window), count] => Some(State::FixedWindow {
                window,
                count: count.unwrap_or(0),
            }),
            _ => None,
        },
        Algorithm::SlidingWindow => match fields(&[c"w", c"c", c"p"])?[..] {
            [Some(window), current, previous] => Some(State::SlidingWindow {
                window,
                current: current.unwrap_or(0),
                previous: previous.unwrap_or(0),
            }),
            _ => None,
        },
        Algorithm::SlidingLog => read_log(cx, key, rule, now)?,
        other => {
            return Err(format!(
                "ERR ratelock module: algorithm {other} is not supported, use the Lua path"
            ))
        }
    })
}

/// Sliding log: drop what left the window, then read every entry's µs (ascending). The set is read
/// through the key API first, so that the ZREMRANGEBYSCORE is sent only when it removes something (one
/// that removes nothing is not propagated either, so replicas and the AOF see the same).
fn read_log(cx: &Context, key: &[u8], rule: &Rule, now: u64) -> Result<Option<State>, String> {
    let period = rule.period().as_micros() as i128;
    let through = now as i128 - period;
    // Redis reads the bound as a double; µs timestamps are well below 2^53, where doubles are exact.
    let last_stale = through as f64;
    let mut entries = VecDeque::new();
    let mut stale = false;
    ReadKey::open(cx, key).zset_all(|_, score| {
        if score <= last_stale {
            // Removed below, never checked: as the script's ZREMRANGEBYSCORE drops it unseen.
            stale = true;
            return Ok(());
        }
        match score {
            s if s >= 0.0 && s.fract() == 0.0 && s < 2f64.powi(53) => entries.push_back(s as u64),
            _ => return Err("ERR ratelock module: a sliding-log entry's score is not a µs timestamp".into()),
        }
        Ok(())
    })?;
    if stale {
        let through = through.to_string();
        cx.call(
            Effect::Replicated,
            "ZREMRANGEBYSCORE",
            &[key, b"-inf", through.as_bytes()],
        )?;
    }
    Ok((!entries.is_empty()).then_some(State::SlidingLog { entries }))
}

/// Stores `update` at `key` and gives it the script's TTL for `ttl_us`. Strings and hashes are written
/// through the key API (propagated as the same SET .. PXAT, HSET and PEXPIREAT); the sliding log's
/// sorted set stays on `RedisModule_Call`.
pub fn write(cx: &Context, key: &[u8], update: Update, ttl_us: u64) -> Result<(), String> {
    let ttl_ms = ttl_us.div_ceil(1000).max(MIN_TTL_MS);
    let expire_at = cx.server_ms() + ttl_ms;
    let hset = |pairs: &[(&CStr, u64)]| -> Result<(), String> {
        let texts: Vec<String> = pairs.iter().map(|(_, v)| v.to_string()).collect();
        let fields: Vec<(&CStr, &[u8])> = pairs
            .iter()
            .zip(&texts)
            .map(|((field, _), text)| (*field, text.as_bytes()))
            .collect();
        let stored = WriteKey::open(cx, key)?;
        stored.hash_set(&fields)?;
        stored.expire_at(expire_at)
    };
    match update {
        Update::Replace(State::Gcra { tat }) => {
            WriteKey::open(cx, key)?.set_string_until(tat.to_string().as_bytes(), expire_at)
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
        Update::Append { at, count, .. } => append_log(cx, key, at, count, expire_at.to_string().as_bytes()),
        Update::Replace(State::SlidingLog { .. }) => {
            Err("ERR ratelock module: a sliding log is only ever appended to".into())
        }
    }
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
