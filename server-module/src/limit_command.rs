//! RATELOCK.LIMIT: `limit.lua` as a module command. Same KEYS/ARGV (`numkeys key... mode now cost
//! [alg limit period burst]...`), same reply (5 integers per rule), same stored state; the decisions
//! are the core's (`ratelock::algorithm::decide` and `outcomes`), not a second copy of them.

use std::time::{SystemTime, UNIX_EPOCH};

use ratelock::algorithm::{decide, outcomes, Step};

use crate::args;
use crate::ctx::{Context, Value};
use crate::keyspace;

/// The ARGV count of `limit.lua`'s contract: `mode now cost`, then 4 per key.
pub fn contract_args(keys: usize, _argv: &[&[u8]]) -> Option<usize> {
    Some(3 + 4 * keys)
}

/// Serves one call: the flat reply integers, or an error text (`ERR ...`).
pub fn run(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    let head = args::head(keys.len(), argv)?;
    let now = head.now.unwrap_or_else(clock_us);
    // Rule by rule, as the script goes: check its arguments, read its state, decide.
    let mut steps: Vec<Step> = Vec::with_capacity(keys.len());
    for (i, key) in keys.iter().enumerate() {
        let rule = args::rule(argv, i + 1, head.cost)?;
        let state = keyspace::read(cx, key, &rule, now)?;
        let step =
            decide(&rule, state.as_ref(), now, head.cost).map_err(|e| format!("ERR ratelock module: {e}"))?;
        steps.push(step);
    }
    let answers = outcomes(&steps);
    if head.hit && answers.iter().all(|o| o.allowed) {
        for (key, step) in keys.iter().zip(steps) {
            if let Some(update) = step.update {
                keyspace::write(cx, key, update, step.ttl_us)?;
            }
        }
    }
    Ok(Value::Array(
        answers
            .iter()
            .flat_map(|o| {
                [
                    i64::from(o.allowed),
                    o.limit as i64,
                    o.remaining as i64,
                    o.reset_after_us as i64,
                    o.retry_after_us as i64,
                ]
            })
            .map(Value::Int)
            .collect(),
    ))
}

/// The in-process clock in µs since the Unix epoch (the script reads TIME; Redis 7.0 gives modules
/// no µs clock, and both are the same system clock).
pub fn clock_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}
