//! A fair lock's four keys in `fair_lock.lua`'s layout, read into the core's `FairState` and brought
//! back in line with it after a call:
//! - KEYS[1] holder hash {i, f, e}, expiring at the lease end;
//! - KEYS[2] queue list, grant ids in arrival order;
//! - KEYS[3] places sorted set, member = grant id, score = µs at which the place lapses (the queue and
//!   its places expire together, at the last place's end, set when a waiter queues or renews);
//! - KEYS[4] fencing counter, a plain string with no expiry.

use ratelock::algorithm::fair::FairState;

use crate::ctx::{Context, Effect, Value};
use crate::lease_fields::{
    self, delete, expire_at, read_counter, read_hold, read_scored, write_counter, write_hold,
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

/// The lock as stored. The queue and its places must agree (each queued id has one place), as the
/// script always leaves them.
pub fn read(cx: &Context, keys: &FairKeys) -> Result<FairState, String> {
    let holder = read_hold(cx, keys.holder)?;
    let listed = match cx.call(Effect::Read, "LRANGE", &[keys.queue, b"0", b"-1"])? {
        Value::Array(items) => items,
        other => return Err(format!("ERR ratelock module: unexpected LRANGE reply {other:?}")),
    };
    let places = read_scored(cx, keys.places)?;
    let disagree = || "ERR ratelock module: the fair lock's queue and places disagree".to_string();
    if listed.len() != places.len() {
        return Err(disagree());
    }
    let queue = listed
        .iter()
        .map(|item| match item {
            Value::Bytes(id) => places
                .iter()
                .find(|(member, _)| member.as_bytes() == id.as_slice())
                .cloned()
                .ok_or_else(disagree),
            _ => Err(disagree()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let last_fence = read_counter(cx, keys.counter)?;
    Ok(FairState {
        holder,
        queue,
        last_fence,
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
    before: &FairState,
    after: &FairState,
    rewrites: Rewrites,
) -> Result<(), String> {
    let queued = |state: &FairState, id: &str| state.queue.iter().any(|(waiter, _)| waiter == id);
    let left: Vec<&str> = before
        .queue
        .iter()
        .map(|(id, _)| id.as_str())
        .filter(|id| !queued(after, id))
        .collect();
    let joined: Vec<&[u8]> = after
        .queue
        .iter()
        .map(|(id, _)| id.as_str())
        .filter(|id| !queued(before, id))
        .map(str::as_bytes)
        .collect();
    // The core keeps arrival order: those who stay, then those who joined, at the back.
    let kept_order = before
        .queue
        .iter()
        .map(|(id, _)| id.as_bytes())
        .filter(|id| !left.iter().any(|gone| gone.as_bytes() == *id))
        .chain(joined.iter().copied());
    if !kept_order.eq(after.queue.iter().map(|(id, _)| id.as_bytes())) {
        return Err("ERR ratelock module: the fair lock's queue moved out of arrival order".into());
    }
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
        args.extend(joined);
        cx.call(Effect::Replicated, "RPUSH", &args)?;
    }
    lease_fields::sync_scored(cx, keys.places, &before.queue, &after.queue)?;
    if rewrites.queue_expiry {
        if let Some(last) = after.queue.iter().map(|&(_, ends)| ends).max() {
            expire_at(cx, keys.queue, last, now)?;
            expire_at(cx, keys.places, last, now)?;
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
