//! RATELOCK.SEMAPHORE_ACQUIRE, _RELEASE, _EXTEND and _STATE: `semaphore_acquire.lua`,
//! `semaphore_release.lua`, `semaphore_extend.lua` and `semaphore_state.lua` as module commands, with
//! their KEYS/ARGV, replies, error texts and stored state. Each reads the permits into the core's
//! `Permits`, lets `ratelock::algorithm::permits::apply` answer the call (expired permits reclaimed
//! first), and writes back what the core changed.

use std::ffi::c_int;

use ratelock::algorithm::permits::{apply, PermitAcquired, SemaphoreCall, SemaphoreReply};

use crate::api::{Ctx, RString};
use crate::args::now_or_clock;
use crate::ctx::{Context, Value};
use crate::lease_args::{at_least_one, extend_length, token_text, within_lease_bound};
use crate::permit_keys;
use crate::publish::publish;
use crate::scripted::scripted;

/// RATELOCK.SEMAPHORE_ACQUIRE 1 permits id limit ttl_us now [tag]
///
/// # Safety
/// Called by Redis with a command's context and arguments.
pub unsafe extern "C" fn semaphore_acquire(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, |_, _| Some(4), acquire)
}

/// RATELOCK.SEMAPHORE_RELEASE 1 permits id channel now [tag]
///
/// # Safety
/// Called by Redis with a command's context and arguments.
pub unsafe extern "C" fn semaphore_release(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, |_, _| Some(3), release)
}

/// RATELOCK.SEMAPHORE_EXTEND 1 permits id ttl_us now [tag]
///
/// # Safety
/// Called by Redis with a command's context and arguments.
pub unsafe extern "C" fn semaphore_extend(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, |_, _| Some(3), extend)
}

/// RATELOCK.SEMAPHORE_STATE 1 permits now [tag]
///
/// # Safety
/// Called by Redis with a command's context and arguments.
pub unsafe extern "C" fn semaphore_state(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, |_, _| Some(1), state)
}

/// `semaphore_acquire.lua`: `[1, permits in use]` granted (or renewed), `[0, µs until the earliest
/// lease ends]` when all are taken.
fn acquire(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    let id = argv.first().copied().filter(|id| !id.is_empty());
    let limit = at_least_one(argv.get(1).copied());
    let ttl_us = at_least_one(argv.get(2).copied());
    let (Some(id), Some(limit), Some(ttl_us)) = (id, limit, ttl_us) else {
        return Err("ERR ratelock: semaphore_acquire needs an id, N >= 1 and a lease >= 1 µs".into());
    };
    let ttl_us = within_lease_bound(ttl_us, "semaphore_acquire")?;
    let now = now_or_clock(argv.get(3).copied())?;
    let id = token_text(id);
    let call = SemaphoreCall::Acquire {
        id: &id,
        limit,
        ttl_us,
    };
    match settle(cx, permits_key(keys, "semaphore_acquire")?, now, call, None)? {
        SemaphoreReply::Acquired(PermitAcquired::Granted { in_use }) => Ok(ints(&[1, in_use as i64])),
        SemaphoreReply::Acquired(PermitAcquired::Full { next_free_us }) => {
            Ok(ints(&[0, next_free_us as i64]))
        }
        other => Err(unexpected(other)),
    }
}

/// `semaphore_release.lua`: 1 released ("released" published), 0 the permit was not held.
fn release(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    let id = token_text(permit_id(argv, "semaphore_release")?);
    let now = now_or_clock(argv.get(2).copied())?;
    let call = SemaphoreCall::Release { id: &id };
    let key = permits_key(keys, "semaphore_release")?;
    match settle(cx, key, now, call, argv.get(1).copied())? {
        SemaphoreReply::Done(released) => Ok(Value::Int(i64::from(released))),
        other => Err(unexpected(other)),
    }
}

/// `semaphore_extend.lua`: 1 extended, 0 the permit is gone. The script takes any number as the new
/// length; the module takes an integer >= 0 (a negative one would put the lease's end in the past).
fn extend(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    let id = token_text(permit_id(argv, "semaphore_extend")?);
    let ttl_us = u64::try_from(extend_length(argv.get(1).copied(), "semaphore_extend")?)
        .map_err(|_| "ERR ratelock module: semaphore_extend needs a lease length >= 0 µs".to_string())?;
    let now = now_or_clock(argv.get(2).copied())?;
    let call = SemaphoreCall::Extend { id: &id, ttl_us };
    match settle(cx, permits_key(keys, "semaphore_extend")?, now, call, None)? {
        SemaphoreReply::Done(extended) => Ok(Value::Int(i64::from(extended))),
        other => Err(unexpected(other)),
    }
}

/// `semaphore_state.lua`: `[permits in use, µs until the earliest lease ends (0 when none)]`; reads
/// only (the core reclaims ended permits from a copy).
fn state(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    let key = permits_key(keys, "semaphore_state")?;
    let now = now_or_clock(argv.first().copied())?;
    let mut permits = permit_keys::read(cx, key)?;
    match apply(&mut permits, now, SemaphoreCall::State).0 {
        SemaphoreReply::State { in_use, next_free_us } => Ok(ints(&[in_use as i64, next_free_us as i64])),
        other => Err(unexpected(other)),
    }
}

/// Reads the permits, has the core answer `call` at `now`, writes back what changed (the permit the
/// call granted or extended among it) and, when the core says waiters should be woken, publishes
/// "released" on `channel`.
fn settle(
    cx: &Context,
    key: &[u8],
    now: u64,
    call: SemaphoreCall<'_>,
    channel: Option<&[u8]>,
) -> Result<SemaphoreReply, String> {
    let before = permit_keys::read(cx, key)?;
    let mut after = before.clone();
    let (reply, wake) = apply(&mut after, now, call);
    let renewed = match (call, reply) {
        (SemaphoreCall::Acquire { id, .. }, SemaphoreReply::Acquired(PermitAcquired::Granted { .. }))
        | (SemaphoreCall::Extend { id, .. }, SemaphoreReply::Done(true)) => Some(id),
        _ => None,
    };
    permit_keys::write(cx, key, &before, &after, renewed, now)?;
    if wake {
        let channel = channel.ok_or("ERR ratelock module: no channel to tell of the release")?;
        publish(cx, channel, b"released")?;
    }
    Ok(reply)
}

/// The permits key: KEYS[1] (further keys are ignored, as the scripts ignore them).
fn permits_key<'a>(keys: &[&'a [u8]], call: &str) -> Result<&'a [u8], String> {
    keys.first()
        .copied()
        .ok_or_else(|| format!("ERR ratelock module: {call} takes 1 key"))
}

/// ARGV[1], the permit id.
fn permit_id<'a>(argv: &[&'a [u8]], call: &str) -> Result<&'a [u8], String> {
    argv.first()
        .copied()
        .ok_or_else(|| format!("ERR ratelock module: {call} needs a permit id"))
}

/// A reply of integers.
fn ints(values: &[i64]) -> Value {
    Value::Array(values.iter().copied().map(Value::Int).collect())
}

fn unexpected(reply: SemaphoreReply) -> String {
    format!("ERR ratelock module: unexpected answer {reply:?}")
}
