//! RATELOCK.LIMIT: `limit.lua` as a module command. Same KEYS/ARGV (`numkeys key... entry mode now
//! cost [alg limit period burst block]... [max_wait]`, mode `hit`, `peek`, `refund` or `reserve`), same
//! reply (the reason,
//! then 5 integers per rule), same
//! stored state; the decisions are the core's (`ratelock::algorithm::decide` and `outcomes`, and
//! `ratelock::algorithm::standing` for the key's ban or list entry), not a second copy of them.

use ratelock::algorithm::overrides::Overrides;
use ratelock::algorithm::refund::refund;
use ratelock::algorithm::reserve;
use ratelock::algorithm::standing::{ban_after, banned, Entry, Standing, Verdict};
use ratelock::algorithm::{decide, outcomes, spends};
use ratelock::Rule;

use crate::args;
use crate::ctx::{Context, Value};
use crate::key_read::KeyRead;
use crate::key_write::WriteKey;
use crate::keyspace::{self, TokenFields};
use crate::override_cache;
use std::rc::Rc;

/// The ARGV count of `limit.lua`'s contract: `mode now cost`, then 5 per rule key (every key but the
/// entry's, which comes last), then the longest wait of a reservation.
pub fn contract_args(keys: usize, argv: &[&[u8]]) -> Option<usize> {
    let reserving = usize::from(argv.first().copied() == Some(b"reserve".as_slice()));
    // A tag may follow: the count with the override key is the one that fits, with or without it.
    let with_override = |given: usize| args::rule_count(keys, given.saturating_sub(reserving)).1;
    let rules = if with_override(argv.len()) || with_override(argv.len().saturating_sub(1)) {
        keys.saturating_sub(2)
    } else {
        keys.saturating_sub(1)
    };
    Some(3 + 5 * rules + reserving)
}

/// Serves one call: the flat reply integers, or an error text (`ERR ...`).
pub fn run(cx: &Context, keys: &[&[u8]], argv: &[&[u8]]) -> Result<Value, String> {
    let head = args::head(keys.len(), argv)?;
    let now = head.now.unwrap_or_else(args::clock_us);
    let (keys_of_rules, override_key) = if head.with_override {
        keys.split_at(keys.len() - 1)
    } else {
        (keys, &[][..])
    };
    let (rule_keys, entry_key) = keys_of_rules.split_at(keys_of_rules.len() - 1);
    // Every rule is read and checked before any key is: the first bad one is the error, as in the script.
    let rules = (1..=rule_keys.len())
        .map(|i| args::rule(argv, i, head.cost))
        .collect::<Result<Vec<Rule>, String>>()?;
    let max_wait = args::max_wait(&head, argv, &rules)?;
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
    // The key's override: each rule as it replaces it (a rule it does not replace stays as given).
    let overrides = match override_key {
        [key] => read_override(&opened[handle[keys.len() - 1]], key)?,
        _ => None,
    };
    let (rules, token_fields) = match &overrides {
        Some(overrides) => applied(&rules, overrides, head.cost)?,
        None => (rules, Vec::new()),
    };
    let fields_of = |i: usize| token_fields.get(i).and_then(Option::as_ref);
    if head.refund {
        // Each rule's units given back first (the core's refund), keeping each key's TTL.
        for (i, ((rule, &at), key)) in rules.iter().zip(&handle).zip(rule_keys).enumerate() {
            let read = keyspace::read(&opened[at], key, rule, now, fields_of(i))?;
            if let Some(update) = refund(rule, read.state.as_ref(), now, head.cost) {
                keyspace::write_refund(&opened[at], &read, update, fields_of(i))?;
            }
        }
    }
    let entry_handle = &opened[handle[rule_keys.len()]];
    if let Some(verdict) = read_entry(entry_handle, entry_key[0])?.and_then(|e| e.answer(&rules, now)) {
        return Ok(reply(&verdict));
    }
    // Rule by rule, as the script goes: read its state, decide.
    let mut reads = Vec::with_capacity(rule_keys.len());
    let mut steps = Vec::with_capacity(rule_keys.len());
    for (i, ((rule, &at), key)) in rules.iter().zip(&handle).zip(rule_keys).enumerate() {
        let read = keyspace::read(&opened[at], key, rule, now, fields_of(i))?;
        steps.push(
            decide(rule, read.state.as_ref(), now, head.cost)
                .map_err(|e| format!("ERR ratelock module: {e}"))?,
        );
        reads.push(read);
    }
    if let Some(max_wait) = max_wait {
        let wait = reserve::wait_of(&steps);
        if reserve::books_ahead(wait, max_wait) {
            let booked = rules
                .iter()
                .zip(&reads)
                .map(|(rule, read)| decide(rule, read.state.as_ref(), now + wait, head.cost))
                .map(|step| step.map(|step| reserve::booked(step, wait)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("ERR ratelock module: {e}"))?;
            if booked.iter().all(|step| step.outcome.allowed) {
                steps = booked;
            }
        }
    }
    let answers = outcomes(&rules, &steps);
    if head.hit && spends(&rules, &steps) {
        // A shadow rule that denied has no update: it is not charged.
        // A key named twice may change under its later reads: its every field is written.
        let shared = opened.len() < keys.len();
        for (i, ((read, step), &at)) in reads.iter().zip(steps).zip(&handle).enumerate() {
            if let Some(update) = step.update {
                keyspace::write(
                    &opened[at],
                    (!shared).then_some(read),
                    update,
                    step.ttl_us,
                    fields_of(i),
                )?;
            }
        }
    } else if head.hit && max_wait.is_none() {
        if let Some(block_us) = ban_after(&rules, &answers) {
            let entry = Entry {
                standing: Standing::Banned,
                until_us: now + block_us,
            };
            keyspace::write_entry(entry_handle, &entry, block_us)?;
            return Ok(reply(&banned(&rules, block_us)));
        }
    }
    Ok(reply(&Verdict::from(answers)))
}

/// The key's override as stored (`None` when absent); text no ratelock code writes fails the call.
fn read_override(stored: &WriteKey<'_>, key: &[u8]) -> Result<Option<Rc<Overrides>>, String> {
    match stored.string()? {
        None => Ok(None),
        Some(text) => override_cache::overrides_of(text)
            .map(Some)
            .ok_or_else(|| unexpected_state(key, text)),
    }
}

/// The rules as `overrides` replaces them, each checked against `cost` as the script checks it, and
/// the hash fields of each overridden token bucket.
fn applied(
    rules: &[Rule],
    overrides: &Overrides,
    cost: u64,
) -> Result<(Vec<Rule>, Vec<Option<TokenFields>>), String> {
    let mut applied = Vec::with_capacity(rules.len());
    let mut fields = Vec::with_capacity(rules.len());
    for (i, rule) in rules.iter().enumerate() {
        match overrides.applied(rule) {
            Some(replaced) if cost > replaced.capacity() => return Err(args::cost_exceeds(i + 1)),
            Some(replaced) => {
                fields.push(TokenFields::of(rule, &replaced));
                applied.push(replaced);
            }
            None => {
                fields.push(None);
                applied.push(rule.clone());
            }
        }
    }
    Ok((applied, fields))
}

/// The error for a stored text at `key` that no ratelock code writes.
fn unexpected_state(key: &[u8], text: &[u8]) -> String {
    let shown = String::from_utf8_lossy(&text[..text.len().min(64)]).into_owned();
    format!(
        "ERR ratelock: unexpected state at {}: {shown}",
        String::from_utf8_lossy(key)
    )
}

/// The key's entry as stored (`None` when absent); text no ratelock code writes fails the call.
fn read_entry(stored: &WriteKey<'_>, key: &[u8]) -> Result<Option<Entry>, String> {
    match stored.string()? {
        None => Ok(None),
        Some(text) => Entry::parse(text)
            .map(Some)
            .ok_or_else(|| unexpected_state(key, text)),
    }
}

/// The reply: the reason's number, then each rule's five integers.
fn reply(verdict: &Verdict) -> Value {
    let mut items = Vec::with_capacity(1 + 5 * verdict.outcomes.len());
    items.push(Value::Int(verdict.reason.code() as i64));
    for o in &verdict.outcomes {
        items.extend(
            [
                i64::from(o.allowed),
                o.limit as i64,
                o.remaining as i64,
                o.reset_after_us as i64,
                o.retry_after_us as i64,
            ]
            .map(Value::Int),
        );
    }
    Value::Array(items)
}
