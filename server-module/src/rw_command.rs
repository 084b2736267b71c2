//! RATELOCK.RW_LOCK: `rw_lock.lua` as a module command. Same KEYS (readers, writer, waiting, counter)
//! and ARGV (`op now id mode fence ttl_us mark_ttl_us prefer_writers mark channel`), same replies and
//! error texts, same stored state and "released" PUBLISH; the decision is the core's
//! `ratelock::algorithm::rwlock::apply`.
//!
//! Flow: read the keys into an `RwState`, apply the call, write the difference back in the script's
//! layout (`rw_keys`), tell the channel when the lock may have become available, reply. As in the
//! script, ended leases and lapsed marks are cleared before an argument error is answered.

use ratelock::algorithm::rwlock::{apply, RwCall, RwMode, RwReply, RwState};

use crate::args::now_or_clock;
use crate::ctx::{Context, Value};
use crate::publish::publish;
use crate::queued_lock_args::{expect_shape, grant_id, named_id, number};
use crate::rw_keys::{self, Rewrites, RwKeys};

/// The script's KEYS count.
const KEYS: usize = 4;
/// The script's ARGV count (the client's call tag not counted).
const ARGS: usize = 10;

/// The script's error for an acquire without a grant id, a mode or a lease.
const ACQUIRE_ERROR: &str = "ERR ratelock: rw_lock acquire needs a grant id, mode r or w and a lease >= 1 µs";

/// The ARGV count of `rw_lock.lua`'s contract, the same for every operation; `None` when the KEYS are
/// not the script's four.
pub fn contract_args(keys: usize, _argv: &[&[u8]]) -> Option<usize> {
    (keys == KEYS).then_some(ARGS)
}

/// Serves one call: the script's reply, or an error text.
pub fn run(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    expect_shape("RATELOCK.RW_LOCK", keys.len(), argv.len(), KEYS, ARGS)?;
    // Only an acquire grows the data: the rest runs on a full server too.
    if argv[0] == b"acquire" {
        cx.refuse_when_full()?;
    }
    let keys = RwKeys {
        readers: keys[0],
        writer: keys[1],
        waiting: keys[2],
        counter: keys[3],
    };
    let now = now_or_clock(Some(argv[1]))?;
    let before = rw_keys::read(cx, &keys)?;
    let parsed = match parse(argv) {
        Ok(parsed) => parsed,
        Err(message) => return clear_then_fail(cx, &keys, now, &before, message),
    };
    let mut after = before.clone();
    let (reply, wake) = apply(&mut after, now, parsed.call);
    let minted = after.last_fence != before.last_fence;
    if minted || matches!(parsed.call, RwCall::State) {
        crate::lease_fields::check_counter(cx, keys.counter, minted)?;
    }
    if parsed.lacks_mark_length && matches!(reply, RwReply::Busy { .. }) {
        let message =
            "ERR ratelock module: rw_lock acquire needs a mark length in µs to mark a writer waiting";
        return clear_then_fail(cx, &keys, now, &before, message.into());
    }
    rw_keys::write(cx, &keys, now, &before, &after, rewrites(parsed.call, reply))?;
    if wake {
        publish(cx, argv[9], b"released")?;
    }
    Ok(reply_value(reply))
}

/// A call read from ARGV.
struct Parsed<'a> {
    /// The core's call (a lacking mark length stood in by 0).
    call: RwCall<'a>,
    /// A writer's acquire that would mark it waiting when refused, without a mark length (ARGV[7]):
    /// the script fails (a Lua error) only when the writer is refused and marks itself.
    lacks_mark_length: bool,
}

/// Reads the operation and its arguments as the script does, with its error texts.
fn parse<'a>(argv: &[&'a [u8]]) -> Result<Parsed<'a>, String> {
    let (op, id, mode) = (argv[0], argv[2], argv[3]);
    // Past acquire the script takes any mode but "r" for a write hold.
    let held_mode = if mode == b"r" { RwMode::Read } else { RwMode::Write };
    let fence = number(argv[4]).unwrap_or(0);
    let call = match op {
        b"acquire" => {
            let ttl_us = number(argv[5]).filter(|&ttl| ttl >= 1).ok_or(ACQUIRE_ERROR)?;
            let ttl_us = crate::lease_args::within_lease_bound(ttl_us, "rw_lock acquire")?;
            let mode = match mode {
                b"r" => RwMode::Read,
                b"w" => RwMode::Write,
                _ => return Err(ACQUIRE_ERROR.into()),
            };
            if id.is_empty() {
                return Err(ACQUIRE_ERROR.into());
            }
            let (mark, prefer_writers, queue) = (number(argv[6]), argv[7] == b"1", argv[8] == b"1");
            let call = RwCall::Acquire {
                id: grant_id(id)?,
                mode,
                ttl_us,
                waiter_ttl_us: mark.unwrap_or(0),
                prefer_writers,
                queue,
            };
            let lacks_mark_length = mode == RwMode::Write && prefer_writers && queue && mark.is_none();
            return Ok(Parsed {
                call,
                lacks_mark_length,
            });
        }
        b"release" => RwCall::Release {
            id: named_id(id),
            mode: held_mode,
            fence,
        },
        b"extend" => RwCall::Extend {
            id: named_id(id),
            mode: held_mode,
            fence,
            // The script adds it to `now` before anything else, so a missing one always fails.
            ttl_us: number(argv[5])
                .ok_or("ERR ratelock module: rw_lock extend needs a lease length in µs")?,
        },
        b"withdraw" => RwCall::Withdraw { id: named_id(id) },
        b"state" => RwCall::State,
        _ => {
            return Err(format!(
                "ERR ratelock: rw_lock has no operation {}",
                String::from_utf8_lossy(op)
            ))
        }
    };
    Ok(Parsed {
        call,
        lacks_mark_length: false,
    })
}

/// Answers an error after clearing what ended or lapsed, as the script does before it reaches the error.
fn clear_then_fail(
    cx: &Context,
    keys: &RwKeys,
    now: u64,
    before: &RwState,
    message: String,
) -> Result<Value, String> {
    let mut cleared = before.clone();
    apply(&mut cleared, now, RwCall::State);
    rw_keys::write(cx, keys, now, before, &cleared, Rewrites::default())?;
    Err(message)
}

/// What the script writes for this outcome beyond the state's difference.
fn rewrites(call: RwCall<'_>, reply: RwReply) -> Rewrites {
    let granted = matches!(reply, RwReply::Granted { .. });
    let extended = matches!(call, RwCall::Extend { .. }) && reply == RwReply::Done(true);
    let (reading, writing) = match call {
        RwCall::Acquire { mode, .. } | RwCall::Release { mode, .. } | RwCall::Extend { mode, .. } => {
            (mode == RwMode::Read, mode == RwMode::Write)
        }
        RwCall::Withdraw { .. } | RwCall::State => (false, false),
    };
    let marked = matches!(
        call,
        RwCall::Acquire {
            mode: RwMode::Write,
            prefer_writers: true,
            queue: true,
            ..
        }
    ) && matches!(reply, RwReply::Busy { .. });
    Rewrites {
        writer: writing && (granted || extended),
        counter: granted,
        readers_expiry: reading && (granted || extended),
        waiting_expiry: marked,
    }
}

/// The script's reply table for `reply`.
fn reply_value(reply: RwReply) -> Value {
    let figures: Vec<u64> = match reply {
        RwReply::Granted { fence } => vec![1, fence],
        RwReply::Busy { retry_us } => vec![0, retry_us],
        RwReply::Done(done) => vec![u64::from(done), 0],
        RwReply::State {
            readers,
            writer_fence,
            writer_remaining_us,
            waiting_writers,
            last_fence,
        } => vec![
            readers,
            writer_fence,
            writer_remaining_us,
            waiting_writers,
            last_fence,
        ],
    };
    Value::Array(figures.into_iter().map(|n| Value::Int(n as i64)).collect())
}
