//! The floors of limit.lua's call contract on the Functions route: the least any FCALL under that
//! contract can cost the server, so that a target set against a bare peer script can be read against
//! what the contract itself costs. Functions written for this bench, in a library of their own,
//! each called with the very KEYS and ARGV of limit.lua's one-rule call (call tag included):
//! - the minimal GCRA's work (TIME, GET, SET PX) in the contract's shape: the tag taken off ARGV, and
//!   the reply (the reason and five integers) sent back with the tag appended (contract 4);
//! - the same, reading the key's ban or list entry, its override and the state in one MGET, as every
//!   ratelock call does (bans, lists and overrides answer in the same call as the rule);
//! - the INCR + PEXPIRE counter of rate-limiter-flexible and limits, with the clock (a window that
//!   starts on the clock's boundaries needs it) and the same reads, in the same shape.
//!
//! And the least any contract could cost that keeps what a ratelock call answers for: the ban or list
//! entry and the override read in the same call as the state, the server's clock, a denial that spends
//! nothing, the call tag echoed (the never-replay rule's crossed-reply check), and a reply that carries
//! the decision. These "lightest contract" functions take only the arguments that work needs (the rule
//! as two numbers, the tag last, read in place) and read the entry and the override (with the state,
//! for GCRA) in one MGET; a limit call answers one string (the tag, then the decision's figures: the
//! cheapest reply shape measured, about 3.6k instructions under a table of the tag and five integers)
//! and so does a lock release; a lock acquire answers a table of the tag and the token (Lua would
//! print a 16-digit token in a string as an exponent). None of them checks what it read, so each is a
//! lower bound, not a design:
//! - GCRA: MGET, TIME, SET PX;
//! - a clock-aligned fixed window as the peers' counter (INCR, and PEXPIRE to the window's end on its
//!   first hit), with MGET of the entry and override and TIME: lighter than any window that spends
//!   nothing on a denial;
//! - a fenced lock pair: `SET NX PX` and, when taken, TIME and INCR of the fencing counter (a token
//!   above the last one and at least the clock, as ratelock's, though this one is not written back);
//!   then GET, compare (the owner's token only, no fencing token), DEL and PUBLISH of the release
//!   notice (waiters are woken by it), the channel given as an argument, the owner's token as the value.

/// The library: what each function does is in the module docs. None of them decides anything.
const LIBRARY: &str = "#!lua name=ratelock_bench_floors
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function gcra(key, tat, now)
  if tat < now then tat = now end
  redis.call('SET', key, tat + 600000, 'PX', 60000)
  return { 0, 1, 100, 99, tat + 600000 - now, 0 }
end
redis.register_function('floor_gcra_shape', function(KEYS, ARGV)
  local tag = table.remove(ARGV)
  local now = now_us()
  local reply = gcra(KEYS[1], tonumber(redis.call('GET', KEYS[1]) or now), now)
  reply[#reply + 1] = tag
  return reply
end)
redis.register_function('floor_gcra_reads', function(KEYS, ARGV)
  local tag = table.remove(ARGV)
  local now = now_us()
  local held = redis.call('MGET', KEYS[2], KEYS[3], KEYS[1])
  local reply = gcra(KEYS[1], tonumber(held[3] or now), now)
  reply[#reply + 1] = tag
  return reply
end)
redis.register_function('floor_counter_reads', function(KEYS, ARGV)
  local tag = table.remove(ARGV)
  local now = now_us()
  local held = redis.call('MGET', KEYS[2], KEYS[3])
  local n = redis.call('INCR', KEYS[1])
  if n == 1 then redis.call('PEXPIRE', KEYS[1], 60000) end
  return { 0, 1, 100, 100 - n, 60000000 - now % 60000000, 0, tag }
end)
redis.register_function('floor_gcra_lightest', function(KEYS, ARGV)
  local held = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3])
  local now = now_us()
  local tat = tonumber(held[1]) or now
  if tat < now then tat = now end
  tat = tat + ARGV[1]
  redis.call('SET', KEYS[1], tat, 'PX', ARGV[2])
  return ARGV[3] .. ' 1 100 99 ' .. (tat - now) .. ' 0'
end)
redis.register_function('floor_window_lightest', function(KEYS, ARGV)
  redis.call('MGET', KEYS[2], KEYS[3])
  local now = now_us()
  local count = redis.call('INCR', KEYS[1])
  local reset = ARGV[1] - now % ARGV[1]
  if count == 1 then redis.call('PEXPIRE', KEYS[1], math.ceil(reset / 1000)) end
  return ARGV[2] .. ' 1 100 ' .. (100 - count) .. ' ' .. reset .. ' 0'
end)
redis.register_function('floor_lock_acquire', function(KEYS, ARGV)
  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    local now = now_us()
    return { ARGV[3], math.max(redis.call('INCR', KEYS[2]), now) }
  end
  return { ARGV[3], 0 }
end)
redis.register_function('floor_lock_release', function(KEYS, ARGV)
  if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('DEL', KEYS[1])
    redis.call('PUBLISH', ARGV[2], ARGV[1])
    return ARGV[3] .. ' 1'
  end
  return ARGV[3] .. ' 0'
end)
";

/// The start of every floor row's name.
pub const PREFIX: &str = "the floor of limit.lua's contract by FCALL: ";
/// The minimal GCRA in the contract's shape.
pub const GCRA_SHAPE: &str = "the minimal GCRA's work in its call shape (ARGV, tag, reply)";
/// The same with the reads every ratelock call makes.
pub const GCRA_READS: &str =
    "the minimal GCRA's work in its call shape, with the entry, override and state read in one MGET";
/// The counter in the contract's shape with the clock and the reads.
pub const COUNTER_READS: &str =
    "INCR + PEXPIRE in its call shape, with the clock and the entry and override read in one MGET";

/// The start of every lightest-contract row's name, as a literal that `concat!` can build on.
macro_rules! lightest_prefix {
    () => {
        "the floor of any contract keeping ratelock's answers, by FCALL: "
    };
}
/// The start of every lightest-contract row's name.
pub const LIGHTEST_PREFIX: &str = lightest_prefix!();
/// The least any contract keeping a GCRA call's answers could cost (see the module docs).
pub const GCRA_LIGHTEST: &str =
    "one GCRA rule (MGET of the state, entry and override; TIME; SET PX; the tag echoed)";
/// The same for a fixed window.
pub const WINDOW_LIGHTEST: &str =
    "one fixed_window rule (MGET of the entry and override; TIME; INCR, PEXPIRE on a window's first hit; the tag echoed)";
/// The lock pair's lightest contract (a family of `lock_server_cost`).
pub const LOCK_PAIR_LIGHTEST: &str = concat!(
    lightest_prefix!(),
    "a fenced lock pair (SET NX PX, TIME, INCR; GET, DEL, PUBLISH; the tag echoed)"
);

/// Loads the library on `connection` (replacing an older copy).
pub fn load(connection: &mut redis::Connection) {
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(LIBRARY)
        .query(connection)
        .expect("FUNCTION LOAD of the bench's floor library");
}

/// Each floor's row label and command: `FCALL <function>`, then `arguments` (limit.lua's numkeys,
/// KEYS and ARGV for one rule): the GCRA floors with a GCRA rule's, the counter's with a fixed
/// window's; the lightest contract's with those KEYS and only the rule's numbers and the tag.
pub fn commands(gcra_arguments: &[String], window_arguments: &[String]) -> Vec<(String, Vec<String>)> {
    let call = |function: &str, arguments: &[String]| {
        let mut command = vec!["FCALL".to_owned(), function.to_owned()];
        command.extend(arguments.iter().cloned());
        command
    };
    vec![
        (
            format!("{PREFIX}{GCRA_SHAPE}"),
            call("floor_gcra_shape", gcra_arguments),
        ),
        (
            format!("{PREFIX}{GCRA_READS}"),
            call("floor_gcra_reads", gcra_arguments),
        ),
        (
            format!("{PREFIX}{COUNTER_READS}"),
            call("floor_counter_reads", window_arguments),
        ),
        // The rule's numbers as the minimal GCRA script is called with them (100/minute: 600,000 µs
        // apart, a 60,000 ms expiry) and the window's period (a minute in µs).
        (
            format!("{LIGHTEST_PREFIX}{GCRA_LIGHTEST}"),
            call(
                "floor_gcra_lightest",
                &lightest(gcra_arguments, &["600000", "60000"]),
            ),
        ),
        (
            format!("{LIGHTEST_PREFIX}{WINDOW_LIGHTEST}"),
            call(
                "floor_window_lightest",
                &lightest(window_arguments, &["60000000"]),
            ),
        ),
    ]
}

/// A lightest-contract call's arguments: limit.lua's numkeys and three KEYS from `arguments`, then
/// `rule` (the rule's numbers), then the call tag (limit.lua's last argument).
fn lightest(arguments: &[String], rule: &[&str]) -> Vec<String> {
    let mut lightest = arguments[..4].to_vec();
    lightest.extend(rule.iter().map(|number| (*number).to_owned()));
    lightest.push(arguments.last().expect("limit.lua's call tag").clone());
    lightest
}

/// The lightest lock pair's two commands: acquire `lease` for `owner` with a `lease_ms` lease (fencing
/// counter `fence`), and release it, telling `channel`; each with the call tag `tag`.
pub fn lock_pair(
    lease: &str,
    fence: &str,
    channel: &str,
    owner: &str,
    lease_ms: u64,
    tag: &str,
) -> [Vec<String>; 2] {
    let words = |parts: &[&str]| parts.iter().map(|part| (*part).to_owned()).collect::<Vec<_>>();
    [
        words(&[
            "FCALL",
            "floor_lock_acquire",
            "2",
            lease,
            fence,
            owner,
            &lease_ms.to_string(),
            tag,
        ]),
        words(&["FCALL", "floor_lock_release", "1", lease, owner, channel, tag]),
    ]
}
