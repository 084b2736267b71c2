//! A semaphore in Redis, in exactly the layout of `semaphore_acquire.lua` and its siblings: a sorted set,
//! member = permit id, score = the µs its lease ends. Read into the core's `Permits` and written back
//! from the permits the core returns.
//!
//! Every write is propagated as that very command (`!`); the expiry is the scripts' relative PEXPIRE,
//! which Redis itself propagates as an absolute PEXPIREAT, so replicas and the AOF never decide anything
//! again.

use std::collections::{HashMap, HashSet};

use ratelock::algorithm::permits::Permits;

use crate::ctx::{Context, Effect};
use crate::key_read::{KeyRead, ReadKey};
use crate::lease_args::{token_bytes, token_text};

/// Every permit stored at `key`, ended ones included (the core reclaims those), lowest lease end
/// first as `ZRANGE key 0 -1 WITHSCORES` lists them, read through the key API.
pub fn read(cx: &Context, key: &[u8]) -> Result<Permits, String> {
    let mut permits = Permits::new();
    ReadKey::open(cx, key).zset_all(|id, score| {
        permits.push((token_text(id), lease_end(score)?));
        Ok(())
    })?;
    Ok(permits)
}

/// A score as a lease end in µs: a whole number in [0, 2^53).
fn lease_end(score: f64) -> Result<u64, String> {
    if score >= 0.0 && score.fract() == 0.0 && score < 2f64.powi(53) {
        Ok(score as u64)
    } else {
        Err("ERR ratelock module: a permit's score is not a µs timestamp".into())
    }
}

/// Stores what changed from `before` to `after` (the permits the core returned for a call at `now`):
/// ZREM of the permits that are gone (reclaimed or released), ZADD of those that are new or moved, and
/// of `renewed` (the permit the call granted or extended, even when its end did not move). After a
/// ZADD, the key lives until its last lease ends: the scripts' very `PEXPIRE ceil((last - now) / 1000)`.
/// (An absolute PEXPIREAT from a clock read made earlier could name a ms that has passed by the time
/// it runs, and Redis would delete the key at once where the script's key lives that ms.)
pub fn write(
    cx: &Context,
    key: &[u8],
    before: &Permits,
    after: &Permits,
    renewed: Option<&str>,
    now: u64,
) -> Result<(), String> {
    // Looked up by id: a scan of `after` per permit of `before` made a semaphore of 20,000 permits take
    // seconds a call (the scripts touch what they need alone).
    let kept: HashSet<&str> = after.iter().map(|(id, _)| id.as_str()).collect();
    let had: HashMap<&str, u64> = before.iter().map(|(id, end)| (id.as_str(), *end)).collect();
    let gone: Vec<Vec<u8>> = before
        .iter()
        .filter(|(id, _)| !kept.contains(id.as_str()))
        .map(|(id, _)| token_bytes(id))
        .collect();
    if !gone.is_empty() {
        let mut args: Vec<&[u8]> = vec![key];
        args.extend(gone.iter().map(Vec::as_slice));
        cx.call(Effect::Replicated, "ZREM", &args)?;
    }
    let written: Vec<(String, Vec<u8>)> = after
        .iter()
        .filter(|(id, end)| had.get(id.as_str()) != Some(end) || Some(id.as_str()) == renewed)
        .map(|(id, end)| (end.to_string(), token_bytes(id)))
        .collect();
    if written.is_empty() {
        return Ok(());
    }
    let mut args: Vec<&[u8]> = vec![key];
    for (score, id) in &written {
        args.extend([score.as_bytes(), id.as_slice()]);
    }
    cx.call(Effect::Replicated, "ZADD", &args)?;
    let last = after.iter().map(|&(_, end)| end).max().unwrap_or(now);
    let ms = last.saturating_sub(now).div_ceil(1000).to_string();
    cx.call(Effect::Replicated, "PEXPIRE", &[key, ms.as_bytes()])?;
    Ok(())
}
