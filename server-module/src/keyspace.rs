//! A rule's state in Redis, in exactly `limit.lua`'s layout, read into the core's `State` and written
//! back from its `Update`:
//! - gcra: a string, the TAT in µs;
//! - token bucket: hash {t = scaled tokens, l = last refill µs} (under an override, the fields
//!   t:<override rule id> and l:<override rule id>: [`TokenFields`]);
//! - leaky bucket: hash {v = level as µs of drain, l = last update µs};
//! - fixed window: hash {w = window index, c = count};
//! - sliding window: hash {w = window index, c = its count, p = previous window's count};
//! - sliding log: sorted set, score = µs of an admitted unit, member "<µs>:<n>", n in five digits
//!   (`limit.lua`'s layout: a refund's ZPOPMAX then takes a µs's latest unit).
//!
//! Numbers are decimal integers. Every write sets an absolute expiry (PXAT / PEXPIREAT) of
//! `max(ceil(ttl µs / 1000), 1000)` ms from the server clock, the script's `px` with its 1 s floor, and
//! is propagated as the command the script would send with that absolute time (SET .. PXAT,
//! PEXPIREAT), so replicas and the AOF see absolute times.

use std::collections::VecDeque;
use std::ffi::{CStr, CString};

use ratelock::algorithm::{State, Update};
use ratelock::{Algorithm, Rule};

use crate::ctx::Context;
use crate::digits::Digits;
use crate::key_read::KeyRead;
use crate::key_write::WriteKey;

/// The hash fields a token bucket's state is in: `t` and `l`, or an override's own
/// (`ratelock::algorithm::overrides::token_fields`).
pub struct TokenFields {
    tokens: CString,
    last: CString,
}

impl TokenFields {
    /// The fields of `base` under its override `applied`; `None` when they are `t` and `l`.
    pub fn of(base: &Rule, applied: &Rule) -> Option<TokenFields> {
        let (tokens, last) = ratelock::algorithm::overrides::token_fields(base, applied)?;
        Some(TokenFields {
            tokens: CString::new(tokens).ok()?,
            last: CString::new(last).ok()?,
        })
    }

    fn names(fields: Option<&TokenFields>) -> [&CStr; 2] {
        fields.map_or([c"t", c"l"], |f| [f.tokens.as_c_str(), f.last.as_c_str()])
    }
}

/// The script's `MIN_TTL_MS`: no written key lives less than one second.
const MIN_TTL_MS: u64 = 1000;

/// A rule's state as read, with the stored bytes of each hash field (`None` when absent), so that a
/// write can leave alone the fields whose bytes stay the same.
pub struct Stored<'k> {
    /// The state the core decides from; `None` is "fresh".
    pub state: Option<State>,
    fields: [Option<&'k [u8]>; 3],
}

/// The stored state of `rule`, read through its key, opened once for reading and writing (the call
/// then writes through the same handle). An absent or unreadable state is `None` ("fresh"), as in the
/// script, where `tonumber` of a missing field is nil. A sliding log first loses the entries that left
/// the window (removed through the key and propagated as ZREMRANGEBYSCORE, peek or hit, as the script
/// does; only when there are some, as a ZREMRANGEBYSCORE that removes nothing is not propagated).
pub fn read<'k>(
    stored: &'k WriteKey<'_>,
    key: &[u8],
    rule: &Rule,
    now: u64,
    token_fields: Option<&TokenFields>,
) -> Result<Stored<'k>, String> {
    // Every number read fails the call when it is not one ratelock writes (`stored` in prelude.lua).
    let number = |raw: Option<&[u8]>| crate::args::stored(raw, key);
    let hash3 = |names: &[&CStr; 3]| stored.hash(names);
    let hash2 = |names: &[&CStr; 2]| stored.hash(names).map(|[a, b]| [a, b, None]);
    // The two-field states: both fields, or fresh.
    let both = |names: &[&CStr; 2], state: fn(u64, u64) -> State| -> Result<_, String> {
        let fields = hash2(names)?;
        Ok((
            number(fields[0])?
                .zip(number(fields[1])?)
                .map(|(a, b)| state(a, b)),
            fields,
        ))
    };
    let (state, fields) = match rule.algorithm() {
        Algorithm::Gcra => {
            let tat = number(stored.string()?)?;
            (tat.map(|tat| State::Gcra { tat }), [None; 3])
        }
        Algorithm::TokenBucket => both(&TokenFields::names(token_fields), |tokens, last| {
            State::TokenBucket { tokens, last }
        })?,
        Algorithm::LeakyBucket => both(&[c"v", c"l"], |level, last| State::LeakyBucket { level, last })?,
        Algorithm::FixedWindow => {
            let fields = hash2(&[c"w", c"c"])?;
            let count = number(fields[1])?.unwrap_or(0);
            let state = number(fields[0])?.map(|window| State::FixedWindow { window, count });
            (state, fields)
        }
        Algorithm::SlidingWindow => {
            let fields = hash3(&[c"w", c"c", c"p"])?;
            let (current, previous) = (number(fields[1])?.unwrap_or(0), number(fields[2])?.unwrap_or(0));
            let state = number(fields[0])?.map(|window| State::SlidingWindow {
                window,
                current,
                previous,
            });
            (state, fields)
        }
        Algorithm::SlidingLog => (read_log(stored, rule, now)?, [None; 3]),
        other => {
            return Err(format!(
                "ERR ratelock module: algorithm {other} is not supported, use the Lua path"
            ))
        }
    };
    Ok(Stored { state, fields })
}

/// A sliding log's entries still in the window at `now`, the stale ones removed first.
fn read_log(stored: &WriteKey<'_>, rule: &Rule, now: u64) -> Result<Option<State>, String> {
    let mut stale = Vec::new();
    let entries = log_entries(stored, rule, now, |member| stale.push(member.to_vec()))?;
    if !stale.is_empty() {
        let through = (now as i128 - rule.period().as_micros() as i128).to_string();
        stored.zset_remove_through(&stale, through.as_bytes())?;
    }
    Ok(entries)
}

/// A sliding log's entries still in the window at `now` (µs, ascending), handing each stale member to
/// `stale` (never checked: the script's ZREMRANGEBYSCORE drops it unseen).
fn log_entries(
    stored: &WriteKey<'_>,
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
            _ => {
                return Err(format!(
                    "ERR ratelock: unexpected state: a sliding-log score {score}"
                ))
            }
        }
        Ok(())
    })?;
    Ok((!entries.is_empty()).then_some(State::SlidingLog { entries }))
}

/// Stores `update` through the key the state was read from and gives it the script's TTL for `ttl_us`
/// (propagated as the same SET .. PXAT, HSET, ZADD and PEXPIREAT). `read` is what [`read`] found, or
/// `None` to write every field: a hash field whose bytes stay the same is not written again; the key's
/// TTL is, as the script's PEXPIRE after its HSET, but for a window written within the window it
/// already holds (see [`in_held_window`]).
pub fn write(
    stored: &WriteKey<'_>,
    read: Option<&Stored<'_>>,
    update: Update,
    ttl_us: u64,
    token_fields: Option<&TokenFields>,
) -> Result<(), String> {
    let [t, l] = TokenFields::names(token_fields);
    let expire_at = expire_at(stored.context(), ttl_us);
    if let Some((pairs, count)) = hash_fields(&update, [t, l]) {
        // Asked before the write: the fields read point into the hash the write changes.
        let held_window = in_held_window(&update, read);
        let token_bucket = matches!(update, Update::Replace(State::TokenBucket { .. }));
        hash_set_changed(stored, read, &pairs[..count])?;
        if held_window {
            return Ok(());
        }
        if token_bucket {
            // The hash may hold an override's bucket beside the rule's own: the key lives until both
            // are full again (limit.lua's keep_for).
            return stored.expire_at_least(expire_at);
        }
        return stored.expire_at(expire_at);
    }
    match update {
        Update::Replace(State::Gcra { tat }) => {
            stored.set_string_until(Digits::of(tat).as_bytes(), expire_at)
        }
        // The stale entries (`drop_through`) were already removed when the log was read.
        Update::Append { at, count, .. } => {
            // `ZCOUNT key at at`: the members already at this µs, numbered on from.
            let mut taken = 0u64;
            stored.zset_scored(at as f64, at as f64, |_, _| {
                taken += 1;
                Ok(())
            })?;
            let members: Vec<Vec<u8>> = (taken..taken + count)
                .map(|n| format!("{at}:{n:05}").into_bytes())
                .collect();
            stored.zset_add(at as f64, Digits::of(at).as_bytes(), &members)?;
            stored.expire_at(expire_at)
        }
        Update::Replace(_) | Update::Pop { .. } => {
            Err("ERR ratelock module: a sliding log is only ever appended to by a hit".into())
        }
    }
}

/// Whether `update` writes a fixed or sliding window's key within the window it already holds. Then
/// the expiry the window's first hit set stands, as in limit.lua: it is where the window (the next
/// window, for a sliding one) ends, a point that does not move, or a second after that first hit.
fn in_held_window(update: &Update, read: Option<&Stored<'_>>) -> bool {
    let window = match update {
        Update::Replace(State::FixedWindow { window, .. } | State::SlidingWindow { window, .. }) => *window,
        _ => return false,
    };
    read.is_some_and(|read| read.fields[0] == Some(Digits::of(window).as_bytes()))
}

/// The hash fields (at most three, and how many) an update of a state kept in a hash writes, as
/// limit.lua names them; `[t, l]` are the token bucket's (its own or an override's). `None` for the
/// states kept otherwise (GCRA's string, the sliding log's sorted set).
fn hash_fields<'n>(update: &Update, [t, l]: [&'n CStr; 2]) -> Option<([(&'n CStr, u64); 3], usize)> {
    let Update::Replace(state) = update else {
        return None;
    };
    Some(match *state {
        State::TokenBucket { tokens, last } => ([(t, tokens), (l, last), (c"", 0)], 2),
        State::LeakyBucket { level, last } => ([(c"v", level), (c"l", last), (c"", 0)], 2),
        State::FixedWindow { window, count } => ([(c"w", window), (c"c", count), (c"", 0)], 2),
        State::SlidingWindow {
            window,
            current,
            previous,
        } => ([(c"w", window), (c"c", current), (c"p", previous)], 3),
        State::Gcra { .. } | State::SlidingLog { .. } => return None,
    })
}

/// Stores a refund's `update` through the key the state was read from, keeping the key's TTL (the
/// script's `SET .. KEEPTTL`, `HSET` and `ZPOPMAX`). `read` is what [`read`] found: a hash field whose
/// bytes stay the same is not written again.
pub fn write_refund(
    stored: &WriteKey<'_>,
    read: &Stored<'_>,
    update: Update,
    token_fields: Option<&TokenFields>,
) -> Result<(), String> {
    if let Some((pairs, count)) = hash_fields(&update, TokenFields::names(token_fields)) {
        return hash_set_changed(stored, Some(read), &pairs[..count]);
    }
    match update {
        Update::Replace(State::Gcra { tat }) => stored.set_string_keeping_ttl(Digits::of(tat).as_bytes()),
        // The stale entries were removed when the log was read: the `count` highest-scored members go,
        // ties taken from the greatest member, as ZPOPMAX takes them.
        Update::Pop { count, .. } => {
            let mut members: Vec<(f64, Vec<u8>)> = Vec::new();
            stored.zset_all(|member, score| {
                members.push((score, member.to_vec()));
                Ok(())
            })?;
            members.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
            let popped: Vec<Vec<u8>> = members.into_iter().take(count as usize).map(|(_, m)| m).collect();
            stored.zset_pop_max(&popped)
        }
        other => Err(format!("ERR ratelock module: a refund cannot store {other:?}")),
    }
}

/// `HSET` of the `pairs` whose bytes differ from what `read` found (all of them without `read`);
/// nothing when none does.
fn hash_set_changed(
    stored: &WriteKey<'_>,
    read: Option<&Stored<'_>>,
    pairs: &[(&CStr, u64)],
) -> Result<(), String> {
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
    if changed == 0 {
        return Ok(());
    }
    stored.hash_set(&fields[..changed])
}

/// Writes a key's ban or list entry (`SET key text PXAT ms`, as `limit.lua`'s `SET .. PX` is
/// propagated), kept `span_us` from now (with the 1 s floor every write has).
pub fn write_entry(
    stored: &WriteKey<'_>,
    entry: &ratelock::algorithm::standing::Entry,
    span_us: u64,
) -> Result<(), String> {
    stored.set_string_until(entry.to_text().as_bytes(), expire_at(stored.context(), span_us))
}

/// The absolute expiry (ms since the epoch, server clock) of a key written now to last `ttl_us`: the
/// script's `max(ceil(ttl / 1000), MIN_TTL_MS)` ms from now.
fn expire_at(cx: &Context, ttl_us: u64) -> u64 {
    cx.server_ms() + ttl_us.div_ceil(1000).max(MIN_TTL_MS)
}
