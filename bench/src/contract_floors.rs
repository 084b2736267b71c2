//! The floors of limit.lua's call contract on the Functions route: the least any FCALL under that
//! contract can cost the server, so that a target set against a bare peer script can be read against
//! what the contract itself costs. Three functions written for this bench, in a library of their own,
//! each called with the very KEYS and ARGV of limit.lua's one-rule call (call tag included):
//! - the minimal GCRA's work (TIME, GET, SET PX) in the contract's shape: the tag taken off ARGV, and
//!   the reply (the reason and five integers) sent back with the tag appended (contract 4);
//! - the same, reading the key's ban or list entry, its override and the state in one MGET, as every
//!   ratelock call does (bans, lists and overrides answer in the same call as the rule);
//! - the INCR + PEXPIRE counter of rate-limiter-flexible and limits, with the clock (a window that
//!   starts on the clock's boundaries needs it) and the same reads, in the same shape.

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
/// window's.
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
    ]
}
