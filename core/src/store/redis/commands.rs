//! The commands the Redis store sends for the limiter, and how their replies read: `EVALSHA` of a
//! script with its keys, `limit.lua`'s call over every rule of a request, and its reply as one outcome
//! per rule (or the typed error it stands for). Shared by the store's connections and the wire path.

use redis::{Cmd, Value};

use super::call_tag::{excerpt, CallTag};
use super::packing;
use super::script::{LuaScript, LIMIT, STANDING};
use super::server_code::Route;
use crate::algorithm::overrides::KEY_SUFFIX as OVERRIDE_SUFFIX;
use crate::algorithm::standing::{Reason, StandingCall, Verdict, KEY_SUFFIX};
use crate::algorithm::{Outcome, Outcomes};
use crate::error::{Error, Result};
use crate::key::write_base;
use crate::rule::Rule;
use crate::store::roles::{EntryChange, LimitRequest};

/// `EVALSHA <sha> <n> keys...`, ready for the script's arguments.
pub(crate) fn script_call(script: &LuaScript, keys: &[&[u8]]) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(&script.sha).arg(keys.len());
    for key in keys {
        cmd.arg(*key);
    }
    cmd
}

/// `EVALSHA limit.lua` with the request's keys (one per rule, then the key's entry) and arguments.
pub(crate) fn limit_command(request: &LimitRequest<'_>) -> Cmd {
    limit_command_in(request, limit_mode(request))
}

/// `EVALSHA limit.lua` in its `refund` mode: give back the cost, then answer as a peek.
pub(crate) fn refund_command(request: &LimitRequest<'_>) -> Cmd {
    limit_command_in(request, "refund")
}

/// The mode `limit.lua` runs a request in: `hit`, `peek` or `reserve`.
fn limit_mode(request: &LimitRequest<'_>) -> &'static str {
    match (request.spend, request.max_wait_us) {
        (true, Some(_)) => "reserve",
        (true, None) => "hit",
        (false, _) => "peek",
    }
}

fn limit_command_in(request: &LimitRequest<'_>, mode: &str) -> Cmd {
    // One buffer, sized once: the keys are the base and a suffix each, every other argument a number
    // of at most 20 digits (growing a command argument by argument cost more than the call's encoding).
    let keys = request.rules.len() + 2;
    let args = 2 + limit_arg_count(request) + 1;
    let key_bytes = keys * (request.prefix.len() + request.key.len() + 16)
        + request.rules.iter().map(|rule| rule.id().len()).sum::<usize>();
    let mut cmd = Cmd::with_capacity(args, LIMIT.sha.len() + key_bytes + (args - keys) * 20);
    cmd.arg("EVALSHA").arg(&LIMIT.sha);
    write_limit_args(request, mode, &mut cmd);
    cmd
}

/// `hit`, `peek` or `reserve` of `request` on `route`, with call tag `tag`, written as RESP bytes into
/// `out` in one pass: the bytes of [`limit_command`] with the tag, as the route sends them (see
/// `packing::write_call_on`), without a command built first.
pub(crate) fn write_limit_call(request: &LimitRequest<'_>, route: Route, tag: CallTag, out: &mut Vec<u8>) {
    let head = packing::route_head(route, &LIMIT);
    let head = head.as_slice();
    let count = head.len() + limit_arg_count(request) + 1;
    out.reserve(64 + count * 24 + request.rules.len() * (request.prefix.len() + request.key.len() + 32));
    packing::write_array_header(count, out);
    for part in head {
        packing::write_bulk(part, out);
    }
    let mut sink = Resp(out);
    write_limit_args(request, limit_mode(request), &mut sink);
    sink.number(tag.number());
}

/// How many arguments follow the script's identity in a limit call, the call tag left out.
fn limit_arg_count(request: &LimitRequest<'_>) -> usize {
    let reserve = usize::from(request.spend && request.max_wait_us.is_some());
    1 + (request.rules.len() + 2) + 3 + request.rules.len() * 5 + reserve
}

/// A limit call's arguments after the script's identity, the one layout every form of the call shares:
/// the key count, one key per rule, the key's entry and override, the mode, the time, the cost, five
/// numbers per rule, and in `reserve` mode the longest wait.
fn write_limit_args(request: &LimitRequest<'_>, mode: &str, sink: &mut impl ArgSink) {
    let rules = request.rules.as_slice();
    let mut base = Vec::with_capacity(request.prefix.len() + request.key.len() + 8);
    write_base(&mut base, request.prefix, request.key);
    sink.number((rules.len() + 2) as u64);
    for rule in rules {
        sink.joined(&base, rule.id().as_bytes());
    }
    sink.joined(&base, KEY_SUFFIX);
    sink.joined(&base, OVERRIDE_SUFFIX);
    sink.bytes(mode.as_bytes());
    match request.now_us {
        Some(now) => sink.number(now),
        None => sink.bytes(b""),
    }
    sink.number(request.cost);
    for rule in rules {
        sink.rule(rule);
    }
    if let (true, Some(max_wait)) = (request.spend, request.max_wait_us) {
        sink.number(max_wait);
    }
}

/// Where a call's arguments go: a command being built, or its RESP bytes being written.
trait ArgSink {
    fn bytes(&mut self, arg: &[u8]);
    /// One argument made of two byte strings (a key's base and its suffix).
    fn joined(&mut self, first: &[u8], second: &[u8]);
    fn number(&mut self, value: u64);
    fn signed(&mut self, value: i64);

    /// A rule's five arguments: its code, limit, period, burst and block.
    fn rule(&mut self, rule: &Rule) {
        write_rule_args(rule, self);
    }
}

/// `rule`'s five arguments of a limit call, into `sink`. The last is its block in µs, 0 when it does
/// not block, or -1 for a `shadow` rule (which cannot block): the store then spends the other rules
/// when it alone denies.
fn write_rule_args(rule: &Rule, sink: &mut (impl ArgSink + ?Sized)) {
    let (code, period) = rule.wire_code_and_period();
    sink.bytes(code.as_bytes());
    sink.number(rule.limit());
    sink.signed(period);
    sink.number(rule.burst());
    if rule.is_shadow() {
        sink.signed(SHADOW_BLOCK);
    } else {
        sink.number(rule.block_us().unwrap_or(0));
    }
}

/// The block argument that marks a `shadow` rule on the wire (`limit.lua`'s header).
const SHADOW_BLOCK: i64 = -1;

impl ArgSink for Cmd {
    fn bytes(&mut self, arg: &[u8]) {
        self.arg(arg);
    }

    fn joined(&mut self, first: &[u8], second: &[u8]) {
        self.arg(Joined(first, second));
    }

    fn number(&mut self, value: u64) {
        self.arg(value);
    }

    fn signed(&mut self, value: i64) {
        self.arg(value);
    }
}

/// RESP bytes: each argument a bulk string.
struct Resp<'a>(&'a mut Vec<u8>);

impl ArgSink for Resp<'_> {
    fn bytes(&mut self, arg: &[u8]) {
        packing::write_bulk(arg, self.0);
    }

    fn joined(&mut self, first: &[u8], second: &[u8]) {
        self.0.push(b'$');
        packing::write_decimal(first.len() + second.len(), self.0);
        self.0.extend_from_slice(b"\r\n");
        self.0.extend_from_slice(first);
        self.0.extend_from_slice(second);
        self.0.extend_from_slice(b"\r\n");
    }

    fn number(&mut self, value: u64) {
        packing::write_bulk_number(i128::from(value), self.0);
    }

    fn signed(&mut self, value: i64) {
        packing::write_bulk_number(i128::from(value), self.0);
    }

    /// The rule's arguments as the rule keeps them written (the same bytes every call).
    fn rule(&mut self, rule: &Rule) {
        let written = rule.call_args(|| {
            let mut bytes = Vec::with_capacity(80);
            write_rule_args(rule, &mut Resp(&mut bytes));
            bytes.into_boxed_slice()
        });
        self.0.extend_from_slice(written);
    }
}

/// One argument made of two byte strings (a key's base and its suffix), written with no buffer of its
/// own.
struct Joined<'a>(&'a [u8], &'a [u8]);

impl redis::ToRedisArgs for Joined<'_> {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        let mut arg = out.writer_for_next_arg();
        // Writing into a command's own buffer cannot fail.
        let _ = std::io::Write::write_all(&mut arg, self.0);
        let _ = std::io::Write::write_all(&mut arg, self.1);
    }
}

/// `EVALSHA standing.lua`: one change to a key's ban or list entry.
pub(crate) fn standing_command(change: &EntryChange<'_>) -> Cmd {
    let mut entry = Vec::with_capacity(change.prefix.len() + change.key.len() + 16);
    write_base(&mut entry, change.prefix, change.key);
    entry.extend_from_slice(KEY_SUFFIX);
    let mut cmd = script_call(&STANDING, &[&entry]);
    match change.call {
        StandingCall::Set { .. } => cmd.arg("set"),
        StandingCall::Remove(_) => cmd.arg("remove"),
    };
    match change.now_us {
        Some(now) => cmd.arg(now),
        None => cmd.arg(""),
    };
    match change.call {
        StandingCall::Set { standing, for_us } => cmd.arg(&[standing.letter()][..]).arg(for_us),
        StandingCall::Remove(kinds) => cmd.arg(StandingCall::letters(kinds)),
    };
    cmd
}

/// `standing.lua`'s reply: whether an entry was put or removed.
pub(crate) fn standing_changed(reply: Value) -> Result<bool> {
    match reply {
        Value::Int(0) => Ok(false),
        Value::Int(1) => Ok(true),
        other => Err(Error::Protocol(format!(
            "unexpected reply from standing.lua: {}",
            excerpt(&other)
        ))),
    }
}

/// `limit.lua`'s reply as its reason and one outcome per rule, or the typed error it stands for.
pub(crate) fn limit_outcomes(reply: Result<Value>, request: &LimitRequest<'_>) -> Result<Verdict> {
    match reply {
        Ok(reply) => parse_verdict(reply, request.rules),
        Err(err) => Err(script_rejection(err, request)),
    }
}

/// Turns the script's own "cost exceeds capacity of rule N" reply into the typed error.
fn script_rejection(err: Error, request: &LimitRequest<'_>) -> Error {
    let (Error::Protocol(message) | Error::StoreUnavailable(message)) = &err else {
        return err;
    };
    let Some((_, index)) = message.split_once("cost exceeds capacity of rule ") else {
        return err;
    };
    let index: usize = index
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    match request.rules.get(index.wrapping_sub(1)) {
        Some(rule) => Error::CostExceedsCapacity {
            cost: request.cost,
            capacity: rule.capacity(),
            rule: rule.to_string(),
        },
        None => err,
    }
}

/// The reason, then five integers per rule, each tuple checked against its rule the same way however
/// many rules there are: `allowed` is 0 or 1, `limit` is the rule's, `remaining` at most what the rule
/// ever holds; a ban or a deny-list entry allows none, an allow-list entry every one.
fn parse_verdict(reply: Value, rules: &[crate::rule::Rule]) -> Result<Verdict> {
    let bad = |what: &Value| Error::Protocol(format!("unexpected reply from limit.lua: {}", excerpt(what)));
    let items = match &reply {
        Value::Array(items) if items.len() == 1 + rules.len() * 5 => items,
        other => return Err(bad(other)),
    };
    let reason = match items.first() {
        Some(&Value::Int(code)) => u64::try_from(code).ok().and_then(Reason::from_code),
        _ => None,
    };
    let Some(reason) = reason else {
        return Err(bad(&reply));
    };
    let outcomes = parse_outcomes(&items[1..], rules).ok_or_else(|| bad(&reply))?;
    let fits = match reason {
        Reason::Rule => true,
        Reason::AllowList => outcomes.iter().all(|o| o.allowed),
        _ => outcomes.iter().all(|o| !o.allowed),
    };
    if !fits {
        return Err(Error::Protocol(format!(
            "unexpected reply from limit.lua: the reason {} with outcomes {outcomes:?}",
            reason.name()
        )));
    }
    Ok(Verdict { reason, outcomes })
}

/// Five integers per rule as its outcome; `None` when any is not a whole number from 0, or does not fit
/// its rule.
fn parse_outcomes(items: &[Value], rules: &[crate::rule::Rule]) -> Option<Outcomes> {
    let number = |item: &Value| match item {
        Value::Int(n) => u64::try_from(*n).ok(),
        _ => None,
    };
    items
        .chunks_exact(5)
        .zip(rules)
        .map(|(chunk, rule)| {
            let mut n = [0u64; 5];
            for (slot, item) in n.iter_mut().zip(chunk) {
                *slot = number(item)?;
            }
            // An override in the store may give the rule another limit and burst: a reply with
            // another limit is checked against the largest ratelock accepts, one with the rule's own
            // against the rule.
            let fits = n[0] <= 1
                && if n[1] == rule.limit() {
                    n[2] <= rule.capacity().max(rule.limit())
                } else {
                    (1..=crate::MAX_LIMIT).contains(&n[1]) && n[2] <= crate::MAX_LIMIT
                };
            fits.then_some(Outcome {
                allowed: n[0] == 1,
                limit: n[1],
                remaining: n[2],
                reset_after_us: n[3],
                retry_after_us: n[4],
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::Rules;

    fn request(rules: &Rules) -> LimitRequest<'_> {
        LimitRequest {
            prefix: "rl",
            key: b"k",
            rules,
            cost: 1,
            now_us: None,
            spend: true,
            max_wait_us: None,
        }
    }

    /// The one-pass writer gives the bytes of the command it stands for, on every route, in every mode:
    /// one rule and several (a calendar rule's negative offset among them), a key needing escapes, with
    /// and without an explicit time.
    #[test]
    fn a_call_written_in_one_pass_is_the_command_on_its_route() {
        let rules: Rules = "5/second; 100/day calendar at -05:30; 10/minute using token_bucket block 1 hour"
            .parse()
            .unwrap();
        let one: Rules = "7/second".parse().unwrap();
        for rules in [&rules, &one] {
            for (spend, max_wait_us) in [(true, None), (false, None), (true, Some(250_000))] {
                for now_us in [None, Some(1_763_800_900_123_456)] {
                    let request = LimitRequest {
                        prefix: "pre:fix",
                        key: b"user:{42}\r\n\xff",
                        rules,
                        cost: 3,
                        now_us,
                        spend,
                        max_wait_us,
                    };
                    let tag = CallTag::next();
                    let mut command = limit_command(&request);
                    tag.append(&mut command);
                    for route in [Route::Module, Route::Function, Route::Script] {
                        let mut expected = Vec::new();
                        packing::write_call_on(route, &LIMIT, &command, &mut expected);
                        let mut written = b"before".to_vec();
                        write_limit_call(&request, route, tag, &mut written);
                        assert_eq!(
                            String::from_utf8_lossy(&written[6..]),
                            String::from_utf8_lossy(&expected),
                            "{route:?} spend {spend} wait {max_wait_us:?} now {now_us:?}"
                        );
                    }
                }
            }
        }
    }

    /// A rule keeps its arguments written after its first call; a rule made from it with another
    /// block (a clone changed) writes its own, not the bytes of the rule it came from. A rule given
    /// another's block by `keep_policies` writes that block too.
    #[test]
    fn a_rule_made_from_a_used_one_writes_its_own_arguments() {
        let used: Rules = "5/second".parse().unwrap();
        let mut first = Vec::new();
        write_limit_call(&request(&used), Route::Script, CallTag::next(), &mut first);
        let blocking = Rules::new(vec![used[0]
            .with_block(std::time::Duration::from_secs(60))
            .unwrap()])
        .unwrap();
        let kept = Rules::new(vec![Rule::new(5, std::time::Duration::from_secs(1))
            .unwrap()
            .keep_policies(&blocking[0])])
        .unwrap();
        for rules in [&blocking, &kept] {
            let tag = CallTag::next();
            let mut command = limit_command(&request(rules));
            tag.append(&mut command);
            let mut expected = Vec::new();
            packing::write_call_on(Route::Script, &LIMIT, &command, &mut expected);
            let mut written = Vec::new();
            write_limit_call(&request(rules), Route::Script, tag, &mut written);
            assert_eq!(
                String::from_utf8_lossy(&written),
                String::from_utf8_lossy(&expected)
            );
            assert!(
                String::from_utf8_lossy(&written).contains("60000000"),
                "the block is sent"
            );
        }
    }

    fn reply(numbers: &[i64]) -> Result<Value> {
        Ok(Value::Array(numbers.iter().map(|&n| Value::Int(n)).collect()))
    }

    #[test]
    fn one_rule_and_several_rules_are_checked_alike() {
        let one: Rules = "5/second".parse().unwrap();
        let two: Rules = "5/second; 10/minute".parse().unwrap();
        assert!(limit_outcomes(reply(&[0, 1, 5, 4, 200_000, 0]), &request(&one)).is_ok());
        // An override's limit (the store gave the rule another): within what ratelock accepts.
        assert!(limit_outcomes(reply(&[0, 1, 50, 40, 20_000, 0]), &request(&one)).is_ok());
        for bad in [
            &[0, 2, 5, 4, 200_000, 0][..],  // allowed neither 0 nor 1
            &[0, 1, 0, 4, 200_000, 0][..],  // a limit no rule has
            &[0, 1, 5, 99, 200_000, 0][..], // more left than the rule ever holds
            &[4, 1, 5, 4, 200_000, 0][..],  // no such reason
            &[1, 1, 5, 4, 200_000, 0][..],  // a ban that allows
            &[3, 0, 5, 0, 200_000, 9][..],  // an allow-list entry that denies
        ] {
            let error = limit_outcomes(reply(bad), &request(&one)).unwrap_err();
            assert!(error.is_protocol(), "{bad:?}: {error}");
            let mut both = bad.to_vec();
            both.extend_from_slice(&[bad[1].min(1), 10, 9, 6_000_000, 0]);
            let error = limit_outcomes(reply(&both), &request(&two)).unwrap_err();
            assert!(error.is_protocol(), "{both:?}: {error}");
        }
    }
}
