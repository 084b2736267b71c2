//! RATELOCK.LIMIT: `limit.lua` as a module command. Same KEYS/ARGV (`numkeys key... mode now cost
//! [alg limit period burst]...`), same reply (5 integers per rule), same stored state; the decisions
//! are the core's (`ratelock::algorithm::decide` and `outcomes`), not a second copy of them.

use ratelock::algorithm::{decide, outcomes};
use ratelock::Rule;

use crate::args;
use crate::ctx::{Context, Value};
use crate::key_write::WriteKey;
use crate::keyspace;

/// The ARGV count of `limit.lua`'s contract: `mode now cost`, then 4 per key.
pub fn contract_args(keys: usize, _argv: &[&[u8]]) -> Option<usize> {
    Some(3 + 4 * keys)
}

/// Serves one call: the flat reply integers, or an error text (`ERR ...`).
pub fn run(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    let head = args::head(keys.len(), argv)?;
    let now = head.now.unwrap_or_else(args::clock_us);
    // Every rule is parsed first; an error is raised where the script raises it, at its key.
    let rules: Vec<Result<Rule, String>> = (1..=keys.len()).map(|i| args::rule(argv, i, head.cost)).collect();
    // Each key is opened once, for reading and writing; a key named twice shares its handle.
    let mut opened: Vec<WriteKey> = Vec::with_capacity(keys.len());
    let mut handle: Vec<usize> = Vec::with_capacity(keys.len());
    for (i, key) in keys.iter().enumerate() {
        match keys[..i].iter().position(|earlier| earlier == key) {
            Some(first) => handle.push(handle[first]),
            None => {
                handle.push(opened.len());
                opened.push(WriteKey::open(cx, key)?);
            }
        }
    }
    // Rule by rule, as the script goes: read its state, decide.
    let mut reads = Vec::with_capacity(keys.len());
    let mut steps = Vec::with_capacity(keys.len());
    for ((rule, &at), key) in rules.iter().zip(&handle).zip(keys) {
        let rule = rule.as_ref().map_err(Clone::clone)?;
        let read = keyspace::read(&opened[at], key, rule, now)?;
        steps.push(
            decide(rule, read.state.as_ref(), now, head.cost)
                .map_err(|e| format!("ERR ratelock module: {e}"))?,
        );
        reads.push(read);
    }
    let answers = outcomes(&steps);
    if head.hit && answers.iter().all(|o| o.allowed) {
        // A key named twice may change under its later reads: its every field is written.
        let shared = opened.len() < keys.len();
        for ((read, step), &at) in reads.iter().zip(steps).zip(&handle) {
            if let Some(update) = step.update {
                keyspace::write(&opened[at], (!shared).then_some(read), update, step.ttl_us)?;
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
