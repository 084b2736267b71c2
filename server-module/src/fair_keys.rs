//! A fair lock's four keys in `fair_lock.lua`'s layout, read into the core's `FairState` and brought
//! back in line with it after a call:
//! - KEYS[1] holder hash {i, f, e}, expiring at the lease end;
//! - KEYS[2] queue list, grant ids in arrival order;
//! - KEYS[3] places sorted set, member = grant id, score = µs at which the place lapses (the queue and
//!   its places expire together, at the last place's end, set when a waiter queues or renews);
//! - KEYS[4] fencing counter, a plain string with no expiry.

use std::collections::{HashMap, HashSet};

use ratelock::algorithm::fair::FairState;

use crate::ctx::{Context, Effect, Value};
use crate::lease_fields::{
    self, delete, expire_all_at, read_counter, read_hold, read_scored, write_counter, write_hold,
};

/// The keys of one fair lock, in the script's KEYS order.
pub struct FairKeys<'a> {
    /// KEYS[1]: the holder hash.
    pub holder: &'a [u8],
    /// KEYS[2]: the queue list.
    pub queue: &'a [u8],
    /// KEYS[3]: the places sorted set.
    pub places: &'a [u8],
    /// KEYS[4]: the fencing counter.
    pub counter: &'a [u8],
}

/// What the script writes after a call beyond what comparing the state before and after shows: the
/// holder rewritten with a new lease end (even an equal one: its expiry is set anew), the counter, and
/// the queue's expiry (set only when a waiter queues or renews its place).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rewrites {
    /// A grant or an extension: the holder hash and its expiry are written.
    pub holder: bool,
    /// A grant: the counter is written.
    pub counter: bool,
    /// A queued refusal: the queue and places expire at the last place's end.
    pub queue_expiry: bool,
}

/// The lock as stored: the core's state, and the places of ids no longer queued.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The lock in the core's terms.
    pub state: FairState,
    /// Places whose id is not in the queue, left when the queue's key expired a moment before the
    /// places' key (the two expire at the same ms, but Redis may reach one of them first); they only
    /// wait to be removed.
    pub stray_places: Vec<String>,
}

/// The lock as stored. A queued id whose place is gone (the places' key expired a moment before the
/// queue's) has lapsed: it is read with a place that ended at 0, so the core drops it.
pub fn read(cx: &Context, keys: &FairKeys) -> Result<Stored, String> {
    let holder = read_hold(cx, keys.holder)?;
    let listed = match cx.call(Effect::Read, "LRANGE", &[keys.queue, b"0", b"-1"])? {
        Value::Array(items) => items,
        other => return Err(format!("ERR ratelock module: unexpected LRANGE reply {other:?}")),
    };
    let places = read_scored(cx, keys.places)?;
    // Each place found by id (a scan per queued id was quadratic: 20,000 waiters took seconds).
    let by_id: HashMap<&str, u64> = places
        .iter()
        .map(|(member, ends)| (member.as_str(), *ends))
        .collect();
    let mut taken: HashSet<String> = HashSet::with_capacity(listed.len());
    let mut queue = Vec::with_capacity(listed.len());
    for item in listed {
        let Value::Bytes(id) = item else {
            return Err(format!("ERR ratelock module: unexpected LRANGE item {item:?}"));
        };
        let id = String::from_utf8(id).map_err(|_| "ERR ratelock module: a stored grant id is not UTF-8")?;
        // A place answers for one queued id (a repeated id finds it taken).
        let ends = match by_id.get(id.as_str()) {
            Some(&ends) if !taken.contains(&id) => ends,
            _ => 0,
        };
        taken.insert(id.clone());
        queue.push((id, ends));
    }
    let state = FairState {
        holder,
        queue,
        last_fence: read_counter(cx, keys.counter)?,
    };
    Ok(Stored {
        state,
        stray_places: places
            .into_iter()
            .filter(|(member, _)| !taken.contains(member))
            .map(|(member, _)| member)
            .collect(),
    })
}

/// Brings the keys from `before` (as read) to `after` (as the core left it) the way the script's
/// writes leave them, at `now` (µs): lapsed, granted or withdrawn waiters leave the queue and places, a
/// new waiter joins the back of the queue, renewed places are rescored, a holder that is gone is
/// deleted; plus what `rewrites` names.
pub fn write(
    cx: &Context,
    keys: &FairKeys,
    now: u64,
    stored: &Stored,
    after: &FairState,
    rewrites: Rewrites,
) -> Result<(), String> {
    let before = &stored.state;
    // The core keeps arrival order: those who stay keep theirs, those who join go to the back (a
    // waiter whose place lapsed and who asks again rejoins there). So the longest start of `after`
    // that follows `before`'s order stayed, and the rest joined.
    let mut from = 0;
    let stayed = after
        .queue
        .iter()
        .take_while(
            |(id, _)| match before.queue[from..].iter().position(|(was, _)| was == id) {
                Some(at) => {
                    from += at + 1;
                    true
                }
                None => false,
            },
        )
        .count();
    let (kept, joined) = after.queue.split_at(stayed);
    let staying: HashSet<&str> = kept.iter().map(|(id, _)| id.as_str()).collect();
    let left: Vec<&str> = before
        .queue
        .iter()
        .map(|(id, _)| id.as_str())
        .filter(|id| !staying.contains(id))
        .collect();
    let holder_rewritten = rewrites.holder && after.holder.is_some();
    if !holder_rewritten && after.holder.is_some() && after.holder != before.holder {
        return Err(
            "ERR ratelock module: the fair lock's holder changed without a grant or extension".into(),
        );
    }
    for id in &left {
        cx.call(Effect::Replicated, "LREM", &[keys.queue, b"0", id.as_bytes()])?;
    }
    if !joined.is_empty() {
        let mut args = vec![keys.queue];
        args.extend(joined.iter().map(|(id, _)| id.as_bytes()));
        cx.call(Effect::Replicated, "RPUSH", &args)?;
    }
    if !stored.stray_places.is_empty() {
        let mut args = vec![keys.places];
        args.extend(stored.stray_places.iter().map(String::as_bytes));
        cx.call(Effect::Replicated, "ZREM", &args)?;
    }
    lease_fields::sync_scored(cx, keys.places, &before.queue, &after.queue)?;
    if rewrites.queue_expiry {
        if let Some(last) = after.queue.iter().map(|&(_, ends)| ends).max() {
            // One expiry time for both, so that the queue never outlives its places or the reverse.
            expire_all_at(cx, &[keys.queue, keys.places], last, now)?;
        }
    }
    match (&before.holder, &after.holder) {
        (_, Some(hold)) if rewrites.holder => write_hold(cx, keys.holder, hold, now)?,
        (Some(_), None) => delete(cx, keys.holder)?,
        _ => {}
    }
    if rewrites.counter {
        write_counter(cx, keys.counter, after.last_fence)?;
    }
    Ok(())
}
