//! RATELOCK.FAIR_LOCK: `fair_lock.lua` as a module command. Same KEYS (holder, queue, places, counter)
//! and ARGV (`op now id fence ttl_us place_ttl_us wake_prefix`), same replies and error texts, same
//! stored state and wake-up PUBLISH; the decision is the core's `ratelock::algorithm::fair::apply`.
//!
//! Flow: read the keys into a `FairState`, apply the call, write the difference back in the script's
//! layout (`fair_keys`), wake the new head of the queue, reply. As in the script, the lapsed places and
//! an ended lease are cleared before an argument error is answered.

use ratelock::algorithm::fair::{apply, FairCall, FairReply};

use crate::args::now_or_clock;
use crate::ctx::{Context, Value};
use crate::fair_keys::{self, FairKeys, Rewrites, Stored};
use crate::publish::publish;
use crate::queued_lock_args::{expect_shape, grant_id, named_id, number};

/// The script's KEYS count.
const KEYS: usize = 4;
/// The script's ARGV count (the client's call tag not counted).
const ARGS: usize = 7;

/// The script's error for an acquire or try without a grant id or a lease.
const ACQUIRE_ERROR: &str = "ERR ratelock: fair_lock acquire needs a grant id and a lease of at least 1 µs";

/// The ARGV count of `fair_lock.lua`'s contract, the same for every operation; `None` when the KEYS
/// are not the script's four.
pub fn contract_args(keys: usize, _argv: &[&[u8]]) -> Option<usize> {
    (keys == KEYS).then_some(ARGS)
}

/// Serves one call: the script's reply, or an error text.
pub fn run(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    expect_shape("RATELOCK.FAIR_LOCK", keys.len(), argv.len(), KEYS, ARGS)?;
    // Only an acquire grows the data: the rest runs on a full server too.
    if matches!(argv[0], b"acquire" | b"try") {
        cx.refuse_when_full()?;
    }
    let keys = FairKeys {
        holder: keys[0],
        queue: keys[1],
        places: keys[2],
        counter: keys[3],
    };
    let now = now_or_clock(Some(argv[1]))?;
    let before = fair_keys::read(cx, &keys)?;
    let parsed = match parse(argv) {
        Ok(parsed) => parsed,
        Err(message) => return clear_then_fail(cx, &keys, now, &before, message),
    };
    let mut after = before.state.clone();
    let (reply, wake) = apply(&mut after, now, parsed.call);
    let minted = after.last_fence != before.state.last_fence;
    if minted || matches!(parsed.call, FairCall::State) {
        crate::lease_fields::check_counter(cx, keys.counter, minted)?;
    }
    if let Some(lacking) = parsed.lacking.filter(|lacking| lacking.mattered(reply)) {
        return clear_then_fail(cx, &keys, now, &before, lacking.message().into());
    }
    fair_keys::write(cx, &keys, now, &before, &after, rewrites(parsed.call, reply))?;
    if let Some(head) = wake {
        publish(cx, &[argv[6], head.as_bytes()].concat(), b"released")?;
    }
    Ok(reply_value(reply))
}

/// A call read from ARGV, with the number it lacks, if any, that only some outcomes use.
struct Parsed<'a> {
    /// The core's call (a lacking number stood in by 0).
    call: FairCall<'a>,
    /// The number the call lacks.
    lacking: Option<Lacking>,
}

/// A number the script reads only on some paths and fails on (a Lua error) when it is nil.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lacking {
    /// ARGV[6], used when an acquire queues.
    PlaceLength,
    /// ARGV[5], used when an extend finds the grant.
    LeaseLength,
}

impl Lacking {
    /// Whether the outcome used the number (where the script would have failed).
    fn mattered(self, reply: FairReply) -> bool {
        match self {
            Lacking::PlaceLength => matches!(reply, FairReply::Busy { .. }),
            Lacking::LeaseLength => reply == FairReply::Done(true),
        }
    }

    fn message(self) -> &'static str {
        match self {
            Lacking::PlaceLength => "ERR ratelock module: fair_lock acquire needs a place length in µs",
            Lacking::LeaseLength => "ERR ratelock module: fair_lock extend needs a lease length in µs",
        }
    }
}

/// Reads the operation and its arguments as the script does, with its error texts.
fn parse<'a>(argv: &[&'a [u8]]) -> Result<Parsed<'a>, String> {
    let (op, id, fence) = (argv[0], argv[2], number(argv[3]).unwrap_or(0));
    let call = match op {
        b"acquire" | b"try" => {
            let ttl_us = number(argv[4]).filter(|&ttl| ttl >= 1).ok_or(ACQUIRE_ERROR)?;
            let ttl_us = crate::lease_args::within_lease_bound(ttl_us, "fair_lock acquire")?;
            if id.is_empty() {
                return Err(ACQUIRE_ERROR.into());
            }
            let queue = op == b"acquire";
            let place = number(argv[5]);
            let call = FairCall::Acquire {
                id: grant_id(id)?,
                ttl_us,
                waiter_ttl_us: place.unwrap_or(0),
                queue,
            };
            let lacking = (queue && place.is_none()).then_some(Lacking::PlaceLength);
            return Ok(Parsed { call, lacking });
        }
        b"release" => FairCall::Release {
            id: named_id(id),
            fence,
        },
        b"extend" => {
            let ttl = number(argv[4]);
            let call = FairCall::Extend {
                id: named_id(id),
                fence,
                ttl_us: ttl.unwrap_or(0),
            };
            let lacking = ttl.is_none().then_some(Lacking::LeaseLength);
            return Ok(Parsed { call, lacking });
        }
        b"withdraw" => FairCall::Withdraw { id: named_id(id) },
        b"state" => FairCall::State,
        _ => {
            return Err(format!(
                "ERR ratelock: fair_lock has no operation {}",
                String::from_utf8_lossy(op)
            ))
        }
    };
    Ok(Parsed { call, lacking: None })
}

/// Answers an error after clearing what lapsed, as the script does before it reaches the error.
fn clear_then_fail(
    cx: &Context,
    keys: &FairKeys,
    now: u64,
    before: &Stored,
    message: String,
) -> Result<Value, String> {
    let mut cleared = before.state.clone();
    apply(&mut cleared, now, FairCall::State);
    fair_keys::write(cx, keys, now, before, &cleared, Rewrites::default())?;
    Err(message)
}

/// What the script writes for this outcome beyond the state's difference.
fn rewrites(call: FairCall<'_>, reply: FairReply) -> Rewrites {
    let granted = matches!(reply, FairReply::Granted { .. });
    let extended = matches!(call, FairCall::Extend { .. }) && reply == FairReply::Done(true);
    let queued =
        matches!(call, FairCall::Acquire { queue: true, .. }) && matches!(reply, FairReply::Busy { .. });
    Rewrites {
        holder: granted || extended,
        counter: granted,
        queue_expiry: queued,
    }
}

/// The script's reply table for `reply`.
fn reply_value(reply: FairReply) -> Value {
    let figures: Vec<u64> = match reply {
        FairReply::Granted { fence } => vec![1, fence, 0],
        FairReply::Busy { retry_us, position } => vec![0, retry_us, position],
        FairReply::Done(done) => vec![u64::from(done), 0, 0],
        FairReply::State {
            remaining_us,
            holder_fence,
            last_fence,
            waiting,
        } => vec![remaining_us, holder_fence, last_fence, waiting],
    };
    Value::Array(figures.into_iter().map(|n| Value::Int(n as i64)).collect())
}
