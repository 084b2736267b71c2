//! The arguments of RATELOCK.LIMIT, read as `limit.lua` reads its KEYS and ARGV, with its error texts.
//!
//! Numbers are plain decimal integers (what every ratelock client sends). Lua's `tonumber` would also
//! take "1e3", "0x10" or "2.5"; the module refuses those with the same error as a missing number,
//! rather than guess at a fractional rule. Likewise a `now` that is neither empty nor an integer is
//! an error here, where the script would quietly fall back to the server clock.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ratelock::{Algorithm, Calendar, CalendarUnit, Rule, MAX_OFFSET_MINUTES};

use crate::rule_cache;

/// The parts of a call before its rules: `mode now cost`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// "hit" or "reserve" (true), or "peek" or "refund" (false).
    pub hit: bool,
    /// "reserve": a hit that books the earliest slot within the last argument's µs.
    pub reserve: bool,
    /// Whether the last key is the override key (the ARGV count tells).
    pub with_override: bool,
    /// "refund": give back `cost` on every rule, then answer as "peek".
    pub refund: bool,
    /// The caller's `now` in µs, or `None` for the server clock (ARGV[2] empty).
    pub now: Option<u64>,
    /// Units to spend, at least 1.
    pub cost: u64,
}

/// A call's KEYS and its ARGV.
pub type KeysAndArgv<'s, 'a> = (&'s [&'a [u8]], &'s [&'a [u8]]);

/// The KEYS and ARGV of one call, split as `EVAL script numkeys key... arg...` would split them.
pub fn split<'s, 'a>(args: &'s [&'a [u8]]) -> Result<KeysAndArgv<'s, 'a>, String> {
    let numkeys = parse_i64(args[1]).ok_or("ERR value is not an integer or out of range")?;
    if numkeys < 0 {
        return Err("ERR Number of keys can't be negative".into());
    }
    let rest = &args[2..];
    if numkeys as u64 > rest.len() as u64 {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    Ok(rest.split_at(numkeys as usize))
}

/// Reads `mode now cost` and checks the argument count (`keys`: the rules' and the entry's), in
/// `limit.lua`'s order.
pub fn head(keys: usize, argv: &[&[u8]]) -> Result<Head, String> {
    let (hit, refund, reserve) = match argv.first().copied() {
        Some(b"hit") => (true, false, false),
        Some(b"peek") => (false, false, false),
        Some(b"refund") => (false, true, false),
        Some(b"reserve") => (true, false, true),
        _ => return Err("ERR ratelock: mode must be \"hit\", \"peek\", \"refund\" or \"reserve\"".into()),
    };
    let now = given_now(argv.get(1).copied())?;
    let cost = argv
        .get(2)
        .copied()
        .and_then(parse_u64)
        .filter(|&c| c >= 1)
        .ok_or("ERR ratelock: cost must be an integer >= 1")?;
    let (rules, with_override) = rule_count(keys, argv.len() - usize::from(reserve));
    if argv.len() != 3 + 5 * rules + usize::from(reserve) || rules == 0 {
        return Err("ERR ratelock: expected 5 arguments per rule key, and the entry key last".into());
    }
    if rules > ratelock::MAX_RULES {
        return Err("ERR ratelock: at most 100 rules in one call (ratelock::MAX_RULES)".into());
    }
    Ok(Head {
        hit,
        reserve,
        with_override,
        refund,
        now,
        cost,
    })
}

/// How many of `keys` are rules' for `args` arguments (the reservation's last one left out), and
/// whether the override key is there: without it, every key but the entry's (the last) is a rule's.
pub fn rule_count(keys: usize, args: usize) -> (usize, bool) {
    if keys >= 3 && args == 3 + 5 * (keys - 2) {
        (keys - 2, true)
    } else {
        (keys.saturating_sub(1), false)
    }
}

/// A reservation's longest wait (its last argument), checked after the rules as the script checks it,
/// with every rule reservable and none in shadow; `None` for any other mode.
pub fn max_wait(head: &Head, argv: &[&[u8]], rules: &[Rule]) -> Result<Option<u64>, String> {
    if !head.reserve {
        return Ok(None);
    }
    let max_wait = argv
        .last()
        .copied()
        .and_then(parse_u64)
        .filter(|&wait| wait <= ratelock::MAX_PERIOD.as_micros() as u64)
        .ok_or("ERR ratelock: the longest wait must be an integer of µs from 0 to 366 days")?;
    for (i, rule) in rules.iter().enumerate() {
        if !rule.algorithm().uses_burst() {
            return Err(format!(
                "ERR ratelock: rule {} cannot be reserved (gcra, token_bucket and leaky_bucket can)",
                i + 1
            ));
        }
        if rule.is_shadow() {
            return Err(format!(
                "ERR ratelock: rule {} is in shadow, and a reservation enforces its rules",
                i + 1
            ));
        }
    }
    Ok(Some(max_wait))
}

/// Reads rule `i` (from 1) out of ARGV and checks `cost` against its capacity, with `limit.lua`'s
/// errors. A rule the script would take but the core refuses (a period that is not whole ms, a
/// limit above ratelock's maximum...) is refused too: no ratelock client sends one. A rule built
/// before is taken from `rule_cache`.
pub fn rule(argv: &[&[u8]], i: usize, cost: u64) -> Result<Rule, String> {
    let at = 3 + 5 * (i - 1);
    let parts = [argv[at], argv[at + 1], argv[at + 2], argv[at + 3], argv[at + 4]];
    match rule_cache::rule_of(parts, || build_rule(argv, i, None)) {
        Ok(rule) if cost > rule.capacity() => Err(cost_exceeds(i)),
        Ok(rule) => Ok(rule),
        // Built again with the cost, for the first error in the script's order.
        Err(_) => build_rule(argv, i, Some(cost)),
    }
}

pub fn cost_exceeds(i: usize) -> String {
    format!("ERR ratelock: cost exceeds capacity of rule {i}")
}

/// Parses, checks and builds rule `i`; with a `cost`, checks it against the capacity before building,
/// where the script checks it.
fn build_rule(argv: &[&[u8]], i: usize, cost: Option<u64>) -> Result<Rule, String> {
    let at = 3 + 5 * (i - 1);
    let bad = || format!("ERR ratelock: bad rule arguments for key {i}");
    if let Some(unit) = CalendarUnit::from_code(argv[at]) {
        return build_calendar_rule(argv, i, unit, cost);
    }
    let algorithm = algorithm(argv[at]).ok_or_else(bad)?;
    let number = |text: &[u8]| parse_u64(text).filter(|&n| n >= 1);
    let (limit, period, burst) = match (number(argv[at + 1]), number(argv[at + 2]), number(argv[at + 3])) {
        (Some(limit), Some(period), Some(burst)) => (limit, period, burst),
        _ => return Err(bad()),
    };
    let policy = policy(argv[at + 4]).ok_or_else(bad)?;
    let capacity = if algorithm.uses_burst() { burst } else { limit };
    if cost.is_some_and(|cost| cost > capacity) {
        return Err(cost_exceeds(i));
    }
    // The window algorithms ignore the burst argument; the core wants it equal to the limit.
    let burst = if algorithm.uses_burst() { burst } else { limit };
    let outside =
        |e: ratelock::Error| format!("ERR ratelock module: rule {i} is outside what ratelock accepts: {e}");
    let rule = Rule::build(algorithm, limit, Duration::from_micros(period), burst).map_err(outside)?;
    policy.apply(rule).map_err(outside)
}

/// A calendar window's rule: its code is the unit's, and its period argument is the offset from UTC in
/// minutes (`limit.lua`'s header).
fn build_calendar_rule(
    argv: &[&[u8]],
    i: usize,
    unit: CalendarUnit,
    cost: Option<u64>,
) -> Result<Rule, String> {
    let at = 3 + 5 * (i - 1);
    let bad = || format!("ERR ratelock: bad rule arguments for key {i}");
    let number = |text: &[u8]| parse_u64(text).filter(|&n| n >= 1);
    let offset = parse_i64(argv[at + 2])
        // A range, not `abs()`: i64::MIN has none (a panic, or a wrap to UTC in a release build).
        .filter(|offset| (-i64::from(MAX_OFFSET_MINUTES)..=i64::from(MAX_OFFSET_MINUTES)).contains(offset))
        .ok_or_else(bad)?;
    let (limit, policy) = match (number(argv[at + 1]), number(argv[at + 3]), policy(argv[at + 4])) {
        (Some(limit), Some(_), Some(policy)) => (limit, policy),
        _ => return Err(bad()),
    };
    if cost.is_some_and(|cost| cost > limit) {
        return Err(cost_exceeds(i));
    }
    let outside =
        |e: ratelock::Error| format!("ERR ratelock module: rule {i} is outside what ratelock accepts: {e}");
    let calendar = Calendar::new(unit).at_offset(offset as i32).map_err(outside)?;
    let rule = Rule::on_calendar(limit, calendar).map_err(outside)?;
    policy.apply(rule).map_err(outside)
}

/// What a rule's last argument asks beside its limit (`limit.lua`'s header).
enum Policy {
    /// Ban the key for this many µs when the rule denies a hit (0: never).
    Block(u64),
    /// Only report a denial (`-1`): the rule is in shadow.
    Shadow,
}

/// The policy its argument's text gives; `None` for text the script refuses.
fn policy(text: &[u8]) -> Option<Policy> {
    if text == b"-1" {
        return Some(Policy::Shadow);
    }
    parse_u64(text)
        .filter(|&block| block <= ratelock::MAX_PERIOD.as_micros() as u64)
        .map(Policy::Block)
}

impl Policy {
    /// `rule` with this policy.
    fn apply(self, rule: Rule) -> ratelock::Result<Rule> {
        match self {
            Policy::Block(0) => Ok(rule),
            Policy::Block(block) => rule.with_block(Duration::from_micros(block)),
            Policy::Shadow => rule.with_shadow(),
        }
    }
}

/// The algorithm of a wire code (`ratelock::Algorithm::code`).
fn algorithm(code: &[u8]) -> Option<Algorithm> {
    Algorithm::ALL.into_iter().find(|a| a.code().as_bytes() == code)
}

/// A call's `now` argument, as every command reads it (the prelude's `now_us`): absent or empty is
/// `None` (the server's clock), else a decimal integer of µs since the Unix epoch. Anything else is
/// refused, where a script would quietly read the clock.
pub fn given_now(arg: Option<&[u8]>) -> Result<Option<u64>, String> {
    match arg {
        None | Some(b"") => Ok(None),
        Some(text) => parse_u64(text)
            .filter(|&now| now <= ratelock::clock::MAX_NOW_US)
            .map(Some)
            .ok_or_else(|| "ERR ratelock: now must be empty or an integer of µs from 0 to 2^52".into()),
    }
}

/// The largest integer every path keeps exact (`prelude.lua`'s MAX_EXACT, ratelock's MAX_NOW_US).
pub const MAX_EXACT: u64 = (1 << 53) - 1;

/// A number read back from a key (`stored` in `prelude.lua`): `None` when absent; anything but an
/// integer from 0 to 2^53 - 1 is a state no ratelock code writes, and fails the call rather than
/// being taken for an empty key.
pub fn stored(raw: Option<&[u8]>, key: &[u8]) -> Result<Option<u64>, String> {
    match raw {
        None => Ok(None),
        Some(text) => parse_u64(text)
            .filter(|&n| n <= MAX_EXACT)
            .map(Some)
            .ok_or_else(|| {
                let shown = String::from_utf8_lossy(&text[..text.len().min(64)]).into_owned();
                format!(
                    "ERR ratelock: unexpected state at {}: {shown}",
                    String::from_utf8_lossy(key)
                )
            }),
    }
}

/// The last fencing token of the counter at `key` read back (`stored`, 0 when absent), refused at
/// 2^53 - 1: no further token would be exact in every client (`mint_fence` in `fence.lua`).
pub fn fence_counter(raw: Option<&[u8]>, key: &[u8]) -> Result<u64, String> {
    let last = stored(raw, key)?.unwrap_or(0);
    if last >= MAX_EXACT {
        return Err(format!(
            "ERR ratelock: the fencing counter at {} is exhausted (2^53 - 1)",
            String::from_utf8_lossy(key)
        ));
    }
    Ok(last)
}

/// [`given_now`], with the in-process clock standing in for an absent one (the scripts read TIME;
/// both are the system clock, and Redis 7.0 gives modules no µs clock).
pub fn now_or_clock(arg: Option<&[u8]>) -> Result<u64, String> {
    given_now(arg).map(|now| now.unwrap_or_else(clock_us))
}

/// A non-negative decimal integer, digits only.
pub fn parse_u64(text: &[u8]) -> Option<u64> {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// A decimal integer with an optional sign.
fn parse_i64(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// The in-process clock in µs since the Unix epoch (the script reads TIME; Redis 7.0 gives modules
/// no µs clock, and both are the same system clock).
pub fn clock_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}
