//! RATELOCK.LOCK_ACQUIRE, _RELEASE, _EXTEND, _STATE and _FORCE_RELEASE: `lock_acquire.lua`,
//! `lock_release.lua`, `lock_extend.lua`, `lock_state.lua` and `lock_force_release.lua` as module
//! commands, with their KEYS/ARGV, replies, error texts and stored state. Each reads the lock into the
//! core's `LockRecord`, lets `ratelock::algorithm::lease::apply_held` answer the call, and writes back
//! what the core changed.

use std::ffi::c_int;

use ratelock::algorithm::lease::{apply_held, Acquired, Extended, LockCall, LockRecord, LockReply, Released};

use crate::api::{Ctx, RString};
use crate::args::now_or_clock;
use crate::ctx::{Context, Effect, Value};
use crate::lease_args::{
    at_least_one, extend_length, named_fence, named_owner, token_text, within_lease_bound,
};
use crate::lock_keys::{self, LeaseEnd, LockKeys, OpenLock};
use crate::publish::publish;
use crate::scripted::scripted;

/// RATELOCK.LOCK_ACQUIRE 2 lease counter owner ttl_us reentrant now [tag]
///
/// # Safety
/// Called by Redis with a command's context and arguments.
pub unsafe extern "C" fn lock_acquire(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, |_, _| Some(4), acquire)
}

/// RATELOCK.LOCK_RELEASE 1 lease owner channel fence [tag]
///
/// # Safety
/// Called by Redis with a command's context and arguments.
pub unsafe extern "C" fn lock_release(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, |_, _| Some(3), release)
}

/// RATELOCK.LOCK_EXTEND 1 lease owner ttl_us fence [tag]
///
/// # Safety
/// Called by Redis with a command's context and arguments.
pub unsafe extern "C" fn lock_extend(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, |_, _| Some(3), extend)
}

/// RATELOCK.LOCK_STATE 2 lease counter [tag]
///
/// # Safety
/// Called by Redis with a command's context and arguments.
pub unsafe extern "C" fn lock_state(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, |_, _| Some(0), state)
}

/// RATELOCK.LOCK_FORCE_RELEASE 1 lease channel [tag]
///
/// # Safety
/// Called by Redis with a command's context and arguments.
pub unsafe extern "C" fn lock_force_release(ctx: *mut Ctx, argv: *mut *mut RString, argc: c_int) -> c_int {
    scripted(ctx, argv, argc, |_, _| Some(1), force_release)
}

/// `lock_acquire.lua`: `[1, fence, holds]` granted (or re-entered), `[0, µs left, 0]` busy.
fn acquire(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    let owner = argv.first().copied().filter(|o| !o.is_empty());
    let (Some(owner), Some(ttl_us)) = (owner, at_least_one(argv.get(1).copied())) else {
        return Err("ERR ratelock: lock_acquire needs an owner and a lease of at least 1 µs".into());
    };
    let ttl_us = within_lease_bound(ttl_us, "lock_acquire")?;
    let reentrant = argv.get(2).copied() == Some(b"1".as_slice());
    let now = now_or_clock(argv.get(3).copied())?;
    let owner = token_text(owner);
    let call = LockCall::Acquire {
        owner: &owner,
        ttl_us,
        reentrant,
    };
    match settle(cx, lock_keys_of(keys, true, "lock_acquire")?, now, call, None)? {
        LockReply::Acquired(Acquired::Granted { fence, holds }) => Ok(ints(&[1, fence as i64, holds as i64])),
        LockReply::Acquired(Acquired::Busy { remaining_us }) => Ok(ints(&[0, remaining_us as i64, 0])),
        other => Err(unexpected(other)),
    }
}

/// `lock_release.lua`: `[1, 0]` released (and "released" published), `[2, holds left]`, `[0, 0]` not
/// held, `[-1, 0]` held by another grant.
fn release(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    let owner = named_owner(argv.first().copied());
    let call = LockCall::Release {
        owner: &owner,
        fence: named_fence(argv.get(2).copied()),
    };
    let channel = argv.get(1).copied();
    match settle(
        cx,
        lock_keys_of(keys, false, "lock_release")?,
        now_or_clock(None)?,
        call,
        channel,
    )? {
        LockReply::Released(Released::Released) => Ok(ints(&[1, 0])),
        LockReply::Released(Released::StillHeld { holds }) => Ok(ints(&[2, holds as i64])),
        LockReply::Released(Released::NotHeld) => Ok(ints(&[0, 0])),
        LockReply::Released(Released::HeldByOther) => Ok(ints(&[-1, 0])),
        other => Err(unexpected(other)),
    }
}

/// `lock_extend.lua`: 1 extended, 0 expired, -1 held by another grant. A negative length is a lease of
/// 0 µs, which the 1 ms floor turns into 1 ms, as in the script; a length that is not a number is an
/// error only when the grant would be extended, where the script's arithmetic fails.
fn extend(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    let owner = named_owner(argv.first().copied());
    let ttl_us = extend_length(argv.get(1).copied(), "lock_extend").map(|t| t.max(0) as u64);
    let call = LockCall::Extend {
        owner: &owner,
        fence: named_fence(argv.get(2).copied()),
        ttl_us: ttl_us.clone().unwrap_or(0),
    };
    let decided = decide(
        cx,
        lock_keys_of(keys, false, "lock_extend")?,
        now_or_clock(None)?,
        call,
    )?;
    match decided.reply {
        LockReply::Extended(Extended::Extended) => {
            ttl_us?;
            commit(cx, &decided, None)?;
            Ok(Value::Int(1))
        }
        LockReply::Extended(Extended::Expired) => Ok(Value::Int(0)),
        LockReply::Extended(Extended::HeldByOther) => Ok(Value::Int(-1)),
        other => Err(unexpected(other)),
    }
}

/// `lock_state.lua`: `[held, µs left, holder's fence, last fence minted]`; reads only.
fn state(cx: &Context, keys: &[&[u8]], _argv: &[&[u8]]) -> Result<Value, String> {
    let keys = lock_keys_of(keys, true, "lock_state")?;
    let now = now_or_clock(None)?;
    let mut record = lock_keys::read(cx, keys, now, LeaseEnd::Read)?;
    if let Some(counter) = keys.counter {
        lock_keys::check_counter(&crate::key_read::ReadKey::open(cx, counter), counter, false)?;
    }
    match apply_held(&mut record, now, LockCall::State).0 {
        LockReply::State(s) => Ok(ints(&[
            i64::from(s.held),
            s.remaining_us as i64,
            s.holder_fence as i64,
            s.last_fence as i64,
        ])),
        other => Err(unexpected(other)),
    }
}

/// `lock_force_release.lua`: 1 if a lease was deleted, 0 if the lock was free; "released" is
/// published either way.
/// The lease is deleted whatever it holds, as the script deletes it: the operator's way out must work
/// on a lease that is not one ratelock wrote (it was refused, or left in place, when it lacked a field).
fn force_release(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    let keys = lock_keys_of(keys, false, "lock_force_release")?;
    let channel = argv
        .first()
        .copied()
        .ok_or("ERR ratelock module: no channel to tell of the release")?;
    let deleted = cx.call(Effect::Replicated, "DEL", &[keys.lease])?;
    publish(cx, channel, b"released")?;
    Ok(deleted)
}

/// Reads the lock, has the core answer `call` at `now`, writes back what changed and, when the core
/// says waiters should be woken, publishes "released" on `channel`.
fn settle(
    cx: &Context,
    keys: LockKeys<'_>,
    now: u64,
    call: LockCall<'_>,
    channel: Option<&[u8]>,
) -> Result<LockReply, String> {
    let decided = decide(cx, keys, now, call)?;
    commit(cx, &decided, channel)?;
    Ok(decided.reply)
}

/// A call the core has answered, not yet written.
struct Decided<'cx> {
    lock: OpenLock<'cx>,
    now: u64,
    before: LockRecord,
    after: LockRecord,
    reply: LockReply,
    wake: bool,
}

/// Opens the lock's keys, reads it and has the core answer `call` at `now`; writes nothing yet.
fn decide<'cx>(
    cx: &'cx Context,
    keys: LockKeys<'_>,
    now: u64,
    call: LockCall<'_>,
) -> Result<Decided<'cx>, String> {
    // A release keeps the lease's end and a forced release drops the lease, so neither reads it.
    let end = match call {
        LockCall::Release { .. } | LockCall::ForceRelease => LeaseEnd::Skip,
        _ => LeaseEnd::Read,
    };
    let lock = OpenLock::open(cx, keys)?;
    let before = lock_keys::read_open(&lock, now, end)?;
    let mut after = before.clone();
    let (reply, wake) = apply_held(&mut after, now, call);
    if let (Some(counter), Some(name)) = (lock.counter.as_ref(), keys.counter) {
        if after.last_fence != before.last_fence {
            lock_keys::check_counter(counter, name, true)?;
        }
    }
    Ok(Decided {
        lock,
        now,
        before,
        after,
        reply,
        wake,
    })
}

/// Writes back what the core changed and publishes "released" on `channel` when it says to wake waiters.
fn commit(cx: &Context, decided: &Decided<'_>, channel: Option<&[u8]>) -> Result<(), String> {
    let renewed = matches!(
        decided.reply,
        LockReply::Acquired(Acquired::Granted { .. }) | LockReply::Extended(Extended::Extended)
    );
    lock_keys::write_open(
        &decided.lock,
        &decided.before,
        &decided.after,
        decided.now,
        renewed,
    )?;
    if decided.wake {
        let channel = channel.ok_or("ERR ratelock module: no channel to tell of the release")?;
        publish(cx, channel, b"released")?;
    }
    Ok(())
}

/// The call's KEYS as a lock's: the lease, then the counter when `with_counter` (further keys are
/// ignored, as the scripts ignore them).
fn lock_keys_of<'a>(keys: &[&'a [u8]], with_counter: bool, call: &str) -> Result<LockKeys<'a>, String> {
    match (keys, with_counter) {
        ([lease, counter, ..], true) => Ok(LockKeys {
            lease,
            counter: Some(counter),
        }),
        ([lease, ..], false) => Ok(LockKeys { lease, counter: None }),
        _ => Err(format!(
            "ERR ratelock module: {call} takes {} key(s)",
            if with_counter { 2 } else { 1 }
        )),
    }
}

/// A reply of integers.
fn ints(values: &[i64]) -> Value {
    Value::Array(values.iter().copied().map(Value::Int).collect())
}

fn unexpected(reply: LockReply) -> String {
    format!("ERR ratelock module: unexpected answer {reply:?}")
}
