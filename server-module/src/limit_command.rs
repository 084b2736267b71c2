//! RATELOCK.LIMIT: `limit.lua` as a module command. Same KEYS/ARGV (`numkeys key... mode now cost
//! [alg limit period burst]...`), same reply (5 integers per rule), same stored state; the decisions
//! are the core's (`ratelock::algorithm::decide` and `outcomes`), not a second copy of them.

use std::time::{SystemTime, UNIX_EPOCH};

use ratelock::algorithm::{decide, outcomes, Outcome, State, Step};
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
    let now = head.now.unwrap_or_else(clock_us);
    // Every rule is parsed first; an error is raised where the script raises it, at its key.
    let rules: Vec<Result<Rule, String>> = (1..=keys.len()).map(|i| args::rule(argv, i, head.cost)).collect();
    let answers = if head.hit && opens_once(keys, &rules) {
        hit_through_open_keys(cx, keys, &rules, now, head.cost)?
    } else {
        by_name(cx, keys, &rules, now, head.hit, head.cost)?
    };
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

/// Whether a hit can hold every key open for writing from its read to its write: no key twice (two
/// handles on one value), every rule built.
fn opens_once(keys: &[&[u8]], rules: &[Result<Rule, String>]) -> bool {
    let distinct = keys.len() <= 16 && keys.iter().enumerate().all(|(i, key)| !keys[..i].contains(key));
    distinct && rules.iter().all(Result::is_ok)
}

/// A hit whose keys are each opened once, for reading and writing: read, decide every rule, then write
/// every rule's update through the same handles when all allow.
fn hit_through_open_keys(
    cx: &Context,
    keys: &[&[u8]],
    rules: &[Result<Rule, String>],
    now: u64,
    cost: u64,
) -> Result<Vec<Outcome>, String> {
    let opened = keys
        .iter()
        .map(|key| WriteKey::open(cx, key))
        .collect::<Result<Vec<_>, String>>()?;
    let mut reads = Vec::with_capacity(keys.len());
    let mut steps = Vec::with_capacity(keys.len());
    for (stored, rule) in opened.iter().zip(rules) {
        let rule = rule.as_ref().map_err(Clone::clone)?;
        let read = keyspace::read_for_hit(stored, rule, now)?;
        steps.push(decided(rule, read.state.as_ref(), now, cost)?);
        reads.push(read);
    }
    let answers = outcomes(&steps);
    if answers.iter().all(|o| o.allowed) {
        for ((stored, read), step) in opened.iter().zip(&reads).zip(steps) {
            if let Some(update) = step.update {
                keyspace::write_open(stored, Some(read), update, step.ttl_us)?;
            }
        }
    }
    Ok(answers.into_vec())
}

/// Rule by rule, as the script goes: check its arguments, read its state, decide; then, for a hit all
/// rules allow, write each update, every key opened by name.
fn by_name(
    cx: &Context,
    keys: &[&[u8]],
    rules: &[Result<Rule, String>],
    now: u64,
    hit: bool,
    cost: u64,
) -> Result<Vec<Outcome>, String> {
    let mut steps: Vec<Step> = Vec::with_capacity(keys.len());
    for (key, rule) in keys.iter().zip(rules) {
        let rule = rule.as_ref().map_err(Clone::clone)?;
        let state = keyspace::read(cx, key, rule, now)?;
        steps.push(decided(rule, state.as_ref(), now, cost)?);
    }
    let answers = outcomes(&steps);
    if hit && answers.iter().all(|o| o.allowed) {
        for (key, step) in keys.iter().zip(steps) {
            if let Some(update) = step.update {
                keyspace::write(cx, key, update, step.ttl_us)?;
            }
        }
    }
    Ok(answers.into_vec())
}

fn decided(rule: &Rule, state: Option<&State>, now: u64, cost: u64) -> Result<Step, String> {
    decide(rule, state, now, cost).map_err(|e| format!("ERR ratelock module: {e}"))
}

/// The in-process clock in µs since the Unix epoch (the script reads TIME; Redis 7.0 gives modules
/// no µs clock, and both are the same system clock).
pub fn clock_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}
