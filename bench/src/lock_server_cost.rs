//! What one lock acquire+release pair costs the server, in the server-cost section: ratelock's module
//! commands, ratelock's Lua scripts (EVALSHA, tagged as the store sends them) and what redlock and
//! redis-py's Lock spend (`SET NX PX`, then a compare-and-delete script). redis-benchmark sends one
//! command per run, so each pair is two saturated runs on a fresh keyspace:
//!
//! - acquire: `-r 100000000` over lock names, so nearly every call finds its lock free and takes it;
//! - release: first 2,000,000 held locks are written in the very state an acquire leaves (owner, one
//!   hold, a fencing token the release can name, the lease's expiry), then `-r 2000000` releases them,
//!   so about 95% of the calls really release (delete, and PUBLISH for ratelock) and the rest draw a
//!   lock the run had already released. Both shares are counted (DBSIZE), not assumed.
//!
//! Server µs per pair = the sum of both runs' `usec_per_call` (`INFO commandstats`); pairs/s =
//! 1 / (1/acquire calls/s + 1/release calls/s).

use ratelock_testkit::RedisServer;

use crate::lock_scripts::{self, ScriptWords, ACQUIRE_SCRIPT, RELEASE_SCRIPT};
use crate::native_floor;
use crate::redis_benchmark::{command_stat, load_script, requests_per_second, BenchmarkRun};
use crate::redis_comparison::query;
use crate::report::{Row, Target, Unit};
use crate::script_call::BENCH_TAG;

/// redlock's and redis-py's release: delete the key only if it still holds our token (written for
/// this bench from the algorithm's description).
const COMPARE_AND_DELETE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// Writes the locks `ARGV[1]..=ARGV[2]` that the release run will draw, named as redis-benchmark names
/// them (`ARGV[3]`, the 12-digit number, `ARGV[4]`), each in the state an acquire leaves: a lease hash
/// (owner `ARGV[5]`, one hold, fencing token `ARGV[6]`) or a string holding the token, with a `ARGV[7]`
/// ms expiry. (`ARGV[8]` is "hash" or "string".)
const WRITE_HELD_LOCKS: &str = "for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do \
local key = ARGV[3] .. string.format('%012d', i) .. ARGV[4] \
if ARGV[8] == 'hash' then \
redis.call('HSET', key, 'o', ARGV[5], 'n', 1, 'f', ARGV[6]) \
redis.call('PEXPIRE', key, ARGV[7]) \
else \
redis.call('SET', key, ARGV[5], 'PX', ARGV[7]) \
end \
end \
return 0";

/// Every lock the runs take: `rl:{bench:lock-pair:<12 digits>}:lock` (redlock: the same key).
const LOCK_NAME: &str = "bench:lock-pair:__rand_int__";
/// The fencing counter every ratelock acquire bumps (a counter that exists, as for a lock used before).
pub(crate) const FENCE_COUNTER_NAME: &str = "bench:lock-pair";
/// 128 random bits in hex: ratelock's owner token and redis-py's `uuid1().hex` are this long.
const OWNER: &str = "5f0c1e9a7d3b4c28a1e6f09b3d2c7e41";
/// The fencing token of the locks written for the release run (as long as a real one: µs since 1970).
const HELD_FENCE: &str = "1700000000000000";
const LEASE_MS: u64 = 30_000;
/// The acquire run's keyspace: 200,000 draws from it repeat a lock about 0.1% of the time.
pub(crate) const ACQUIRE_KEYSPACE: u64 = 100_000_000;
/// The locks held before the release run; 200,000 draws from them hit about 190,000 distinct ones.
const HELD_LOCKS: u64 = 2_000_000;
/// How many held locks one call of `WRITE_HELD_LOCKS` writes (keeps each script call short).
const WRITE_CHUNK: u64 = 200_000;
const REQUESTS: u64 = 200_000;

/// How a family stores a held lock.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Held {
    /// ratelock's lease hash (`o`, `n`, `f`).
    Hash,
    /// redlock's string holding the owner's token.
    Text,
}

/// One way to take and give back a lock: the two commands (`__rand_int__` in the lock's key), the
/// `INFO commandstats` entry of each, and how a held lock looks.
pub(crate) struct PairFamily {
    pub(crate) label: &'static str,
    pub(crate) acquire: Vec<String>,
    acquire_stat: &'static str,
    pub(crate) release: Vec<String>,
    release_stat: &'static str,
    pub(crate) held: Held,
}

/// One saturated run: calls/s, server µs per call, calls the server ran, and how many of them changed
/// a lock (an acquire that took a free one, a release that deleted a held one).
struct HalfPair {
    per_second: Option<f64>,
    micros: Option<f64>,
    calls: f64,
    changed: u64,
}

const MODULE_LABEL: &str = "ratelock module RATELOCK.LOCK_ACQUIRE + LOCK_RELEASE";
pub(crate) const REDLOCK_LABEL: &str = "redlock / redis-py: SET NX PX + compare-and-delete script";
/// The default path wherever Functions exist (Redis ≥ 7, Valkey): the row with the target.
pub(crate) const FUNCTIONS_LABEL: &str = "ratelock lock_acquire + lock_release as Redis Functions (FCALL)";
/// How far above redlock's pair the Functions pair may cost (server µs per pair).
pub(crate) const FUNCTIONS_TARGET_RATIO: f64 = 2.0;

/// The pair rows; the module's only when the server loads it. Leaves the server empty (FLUSHALL).
pub fn rows(
    server: &RedisServer,
    connection: &mut redis::Connection,
    with_module: bool,
    notes: &mut Vec<String>,
) -> Vec<Row> {
    let families = families(connection, with_module, LEASE_MS);
    let mut measured = Vec::new();
    for family in &families {
        check_family(connection, family);
        let acquire = acquire_run(server, connection, family, notes);
        let release = release_run(server, connection, family, notes);
        notes.push(format!(
            "lock pair, {}: acquire {} µs/call, {}/s, {} of {:.0} calls took a free lock; release {} µs/call, \
             {}/s, {} of {:.0} calls released a held lock (the others drew one already released)",
            family.label,
            shown(acquire.micros, 2),
            shown(acquire.per_second, 0),
            acquire.changed,
            acquire.calls,
            shown(release.micros, 2),
            shown(release.per_second, 0),
            release.changed,
            release.calls,
        ));
        measured.push((family.label, acquire, release));
    }
    let lease_floor = with_module.then(|| lease_layout_floor(connection));
    let _: () = query(connection, &mut redis::cmd("FLUSHALL"));
    notes.push(format!(
        "lock pairs (server cost): redis-benchmark -c 50 -P 16 -n {REQUESTS} per half on a flushed server. \
         Acquire: -r {ACQUIRE_KEYSPACE} over `rl:{{{LOCK_NAME}}}:lock`, server clock, {LEASE_MS} ms lease, \
         one shared fencing counter. Release: {HELD_LOCKS} locks first written by a script in the state an \
         acquire leaves (a lease hash o/n/f with PEXPIRE, or redlock's string with PX; checked against a real \
         acquire's), then -r {HELD_LOCKS} over them. A pair's µs is the two usec_per_call added; it leaves out \
         what commandstats leaves out (reading and parsing the request, writing the reply)"
    ));
    let redlock = measured
        .iter()
        .find(|(label, ..)| *label == REDLOCK_LABEL)
        .map(|(_, acquire, release)| (pair_rate(acquire, release), pair_micros(acquire, release)));
    let mut rows = Vec::new();
    if let Some((acquire, release, pings)) = lease_floor {
        let floor = acquire.zip(release).map(|(a, r)| a + r);
        notes.push(format!(
            "lock pair, native floor (the module pair's keyspace work as native commands, one MULTI/EXEC per \
             half, µs per EXEC): acquire {} µs (HMGET, GET, SET, HSET, PEXPIREAT on free locks), release {} µs \
             (HMGET, DEL, PUBLISH on {HELD_LOCKS} held locks); an EXEC of the same 8 commands' count of PINGs costs \
             {} µs, at most the EXECs' own share",
            shown(acquire, 2),
            shown(release, 2),
            shown(pings, 2)
        ));
        rows.push(Row {
            name: "server µs: the module pair's keyspace work as native commands in one EXEC per half (its floor) vs redlock's pair".into(),
            unit: Unit::Micros,
            measured: floor,
            baseline: redlock.and_then(|(_, micros)| micros),
            target: Target::None,
        });
        let module_pair = measured
            .iter()
            .find(|(label, ..)| *label == MODULE_LABEL)
            .and_then(|(_, acquire, release)| pair_micros(acquire, release));
        rows.push(Row {
            name: "server µs: ratelock module lock pair vs its floor (the same keyspace work as native commands)".into(),
            unit: Unit::Micros,
            measured: module_pair,
            baseline: floor,
            target: Target::None,
        });
    }
    for (label, acquire, release) in &measured {
        rows.push(Row {
            name: format!("saturated lock pairs/s: {label}"),
            unit: Unit::PerSecond,
            measured: pair_rate(acquire, release),
            baseline: redlock.and_then(|(rate, _)| rate),
            target: Target::None,
        });
        rows.push(Row {
            name: format!("server µs per lock pair: {label}"),
            unit: Unit::Micros,
            measured: pair_micros(acquire, release),
            baseline: redlock.and_then(|(_, micros)| micros),
            target: match *label {
                MODULE_LABEL => Target::RatioAtMost(1.0),
                FUNCTIONS_LABEL => Target::RatioAtMost(FUNCTIONS_TARGET_RATIO),
                _ => Target::None,
            },
        });
    }
    rows
}

/// The lock pair of each family, every acquire taking a lease of `lease_ms`.
pub(crate) fn families(
    connection: &mut redis::Connection,
    with_module: bool,
    lease_ms: u64,
) -> Vec<PairFamily> {
    let [lease, _, channel] = lock_scripts::keys_of(LOCK_NAME);
    let [_, fence_counter, _] = lock_scripts::keys_of(FENCE_COUNTER_NAME);
    let ttl_us = u128::from(lease_ms) * 1000;
    let acquire_sha = load_script(connection, &ACQUIRE_SCRIPT);
    let release_sha = load_script(connection, &RELEASE_SCRIPT);
    let fence: i64 = HELD_FENCE.parse().expect("a fencing token");
    let lua_acquire = lock_scripts::acquire(&acquire_sha, &lease, &fence_counter, OWNER, ttl_us);
    let lua_release = lock_scripts::release(&release_sha, &lease, OWNER, &channel, fence);
    let mut families = Vec::new();
    if with_module {
        families.push(PairFamily {
            label: MODULE_LABEL,
            acquire: on_route(&["RATELOCK.LOCK_ACQUIRE"], &lua_acquire),
            acquire_stat: "ratelock.lock_acquire",
            release: on_route(&["RATELOCK.LOCK_RELEASE"], &lua_release),
            release_stat: "ratelock.lock_release",
            held: Held::Hash,
        });
    }
    let library = ratelock::store::function_library();
    families.push(PairFamily {
        label: FUNCTIONS_LABEL,
        acquire: on_route(&["FCALL", library.lock_acquire_function], &lua_acquire),
        acquire_stat: "fcall",
        release: on_route(&["FCALL", library.lock_release_function], &lua_release),
        release_stat: "fcall",
        held: Held::Hash,
    });
    families.push(PairFamily {
        label: "ratelock lock_acquire.lua + lock_release.lua (EVALSHA)",
        acquire: lua_acquire.command(),
        acquire_stat: "evalsha",
        release: lua_release.command(),
        release_stat: "evalsha",
        held: Held::Hash,
    });
    crate::contract_floors::load(connection);
    let [lightest_acquire, lightest_release] =
        crate::contract_floors::lock_pair(&lease, &fence_counter, &channel, OWNER, lease_ms, BENCH_TAG);
    families.push(PairFamily {
        label: crate::contract_floors::LOCK_PAIR_LIGHTEST,
        acquire: lightest_acquire,
        acquire_stat: "fcall",
        release: lightest_release,
        release_stat: "fcall",
        held: Held::Text,
    });
    let compare_and_delete = load_script(connection, COMPARE_AND_DELETE);
    let ms = lease_ms.to_string();
    families.push(PairFamily {
        label: REDLOCK_LABEL,
        acquire: words(&["SET", &lease, OWNER, "NX", "PX", &ms]),
        acquire_stat: "set",
        release: words(&["EVALSHA", &compare_and_delete, "1", &lease, OWNER]),
        release_stat: "evalsha",
        held: Held::Text,
    });
    families
}

/// A script call as the store sends it on another route: `head` (the module's command, or `FCALL` and
/// the library function), then the script call's numkeys, KEYS and ARGV (call tag included).
fn on_route(head: &[&str], script: &ScriptWords) -> Vec<String> {
    let mut command = words(head);
    command.extend(script.command().into_iter().skip(2));
    command
}

fn words(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|part| (*part).to_owned()).collect()
}

/// The lock key of draw `number`, as redis-benchmark writes it (12 digits, zero-padded).
fn drawn(pattern: &str, number: u64) -> String {
    pattern.replace("__rand_int__", &format!("{number:012}"))
}

fn drawn_command(command: &[String], number: u64) -> Vec<String> {
    command.iter().map(|word| drawn(word, number)).collect()
}

/// Before measuring: the acquire takes a free lock; a lock written for the release run looks exactly
/// like what that acquire left (but for the fencing token's digits); and the release deletes it.
fn check_family(connection: &mut redis::Connection, family: &PairFamily) {
    let _: () = query(connection, &mut redis::cmd("FLUSHALL"));
    let [lease, ..] = lock_scripts::keys_of(LOCK_NAME);
    let (taken, written) = (drawn(&lease, 42), drawn(&lease, 43));
    let _: redis::Value = query(connection, &mut command(&drawn_command(&family.acquire, 42)));
    write_held_locks(connection, family.held, 43, 43, LEASE_MS);
    assert_eq!(
        lock_state(connection, family.held, &taken),
        lock_state(connection, family.held, &written),
        "{}: the locks written for the release run differ from what the acquire leaves",
        family.label
    );
    let _: redis::Value = query(connection, &mut command(&drawn_command(&family.release, 43)));
    let left: i64 = query(connection, redis::cmd("EXISTS").arg(&written));
    assert_eq!(
        left, 0,
        "{}: the release did not release a held lock",
        family.label
    );
}

/// What a held lock looks like, with the fencing token's digits blanked (their count kept).
fn lock_state(connection: &mut redis::Connection, held: Held, key: &str) -> Vec<String> {
    let encoding: String = query(connection, redis::cmd("OBJECT").arg("ENCODING").arg(key));
    let ttl: i64 = query(connection, redis::cmd("PTTL").arg(key));
    let mut state = vec![encoding, (ttl > 0 && ttl <= LEASE_MS as i64).to_string()];
    match held {
        Held::Hash => {
            let fields: Vec<(String, String)> = query(connection, redis::cmd("HGETALL").arg(key));
            for (field, value) in fields {
                let value = if field == "f" {
                    "#".repeat(value.len())
                } else {
                    value
                };
                state.push(format!("{field}={value}"));
            }
        }
        Held::Text => state.push(query(connection, redis::cmd("GET").arg(key))),
    }
    state
}

/// Writes locks `first..=last` as `held` leaves them, with `lease_ms` left (the work of a release does not
/// depend on it; a run under callgrind needs it longer than its own length).
pub(crate) fn write_held_locks(
    connection: &mut redis::Connection,
    held: Held,
    first: u64,
    last: u64,
    lease_ms: u64,
) {
    let [lease, ..] = lock_scripts::keys_of(LOCK_NAME);
    let (before, after) = lease
        .split_once("__rand_int__")
        .expect("the lease key has a draw");
    let kind = if held == Held::Hash { "hash" } else { "string" };
    let _: i64 = query(
        connection,
        redis::cmd("EVAL")
            .arg(WRITE_HELD_LOCKS)
            .arg(0)
            .arg(first)
            .arg(last)
            .arg(before)
            .arg(after)
            .arg(OWNER)
            .arg(HELD_FENCE)
            .arg(lease_ms)
            .arg(kind),
    );
}

/// Writes the `HELD_LOCKS` locks a release run draws from, `WRITE_CHUNK` per script call.
fn write_every_held_lock(connection: &mut redis::Connection, held: Held) {
    let mut first = 0;
    while first < HELD_LOCKS {
        let last = (first + WRITE_CHUNK).min(HELD_LOCKS) - 1;
        write_held_locks(connection, held, first, last, LEASE_MS);
        first = last + 1;
    }
}

fn acquire_run(
    server: &RedisServer,
    connection: &mut redis::Connection,
    family: &PairFamily,
    notes: &mut Vec<String>,
) -> HalfPair {
    let _: () = query(connection, &mut redis::cmd("FLUSHALL"));
    let [_, fence_counter, _] = lock_scripts::keys_of(FENCE_COUNTER_NAME);
    let _: () = query(connection, redis::cmd("SET").arg(&fence_counter).arg(1));
    let mut half = saturated(
        server,
        connection,
        (&family.acquire, family.acquire_stat),
        ACQUIRE_KEYSPACE,
        notes,
    );
    let _: i64 = query(connection, redis::cmd("DEL").arg(&fence_counter));
    half.changed = query(connection, &mut redis::cmd("DBSIZE"));
    half
}

fn release_run(
    server: &RedisServer,
    connection: &mut redis::Connection,
    family: &PairFamily,
    notes: &mut Vec<String>,
) -> HalfPair {
    let _: () = query(connection, &mut redis::cmd("FLUSHALL"));
    write_every_held_lock(connection, family.held);
    let mut half = saturated(
        server,
        connection,
        (&family.release, family.release_stat),
        HELD_LOCKS,
        notes,
    );
    let left: u64 = query(connection, &mut redis::cmd("DBSIZE"));
    half.changed = HELD_LOCKS - left;
    half
}

/// redis-benchmark -c 50 -P 16 -r `keyspace` on `command`, then its `stat` line of commandstats.
fn saturated(
    server: &RedisServer,
    connection: &mut redis::Connection,
    (command, stat): (&[String], &str),
    keyspace: u64,
    notes: &mut Vec<String>,
) -> HalfPair {
    let _: () = query(connection, redis::cmd("CONFIG").arg("RESETSTAT"));
    let run = BenchmarkRun {
        requests: REQUESTS,
        clients: 50,
        pipeline: 16,
        keyspace: Some(keyspace),
    };
    let per_second = requests_per_second(server.port(), command, &run);
    if let Err(problem) = &per_second {
        notes.push(format!("lock pairs (server cost), {}: {problem}", command[0]));
    }
    HalfPair {
        per_second: per_second.ok(),
        micros: command_stat(connection, stat, "usec_per_call"),
        calls: command_stat(connection, stat, "calls").unwrap_or(0.0),
        changed: 0,
    }
}

/// The floor under the module's pair (`native_floor`): each half's keyspace work as Redis's own
/// commands in one MULTI/EXEC, on the keyspace its run uses.
/// - acquire: read the lease (HMGET o n f) and the counter (GET), write the counter (SET), the lease
///   (HSET o n f) and its expiry (PEXPIREAT), on free locks;
/// - release: read the lease (HMGET o n f), delete it (DEL) and tell the channel (PUBLISH), on held
///   locks.
fn lease_layout_floor(connection: &mut redis::Connection) -> (Option<f64>, Option<f64>, Option<f64>) {
    let [lease, _, channel] = lock_scripts::keys_of(LOCK_NAME);
    let [_, fence_counter, _] = lock_scripts::keys_of(FENCE_COUNTER_NAME);
    let _: () = query(connection, &mut redis::cmd("FLUSHALL"));
    let _: () = query(connection, redis::cmd("SET").arg(&fence_counter).arg(HELD_FENCE));
    let until = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
        + LEASE_MS)
        .to_string();
    let acquire = |n: u64| {
        let lease = native_floor::drawn(&lease, n);
        vec![
            native_floor::command(&["HMGET", &lease, "o", "n", "f"]),
            native_floor::command(&["GET", &fence_counter]),
            native_floor::command(&["SET", &fence_counter, HELD_FENCE]),
            native_floor::command(&["HSET", &lease, "o", OWNER, "n", "1", "f", HELD_FENCE]),
            native_floor::command(&["PEXPIREAT", &lease, &until]),
        ]
    };
    let acquire = native_floor::exec_micros(connection, &acquire, ACQUIRE_KEYSPACE);
    let _: () = query(connection, &mut redis::cmd("FLUSHALL"));
    write_every_held_lock(connection, Held::Hash);
    let release = |n: u64| {
        let lease = native_floor::drawn(&lease, n);
        vec![
            native_floor::command(&["HMGET", &lease, "o", "n", "f"]),
            native_floor::command(&["DEL", &lease]),
            native_floor::command(&["PUBLISH", &native_floor::drawn(&channel, n), "released"]),
        ]
    };
    let release = native_floor::exec_micros(connection, &release, HELD_LOCKS);
    (acquire, release, native_floor::exec_of_pings(connection, 8))
}

fn command(words: &[String]) -> redis::Cmd {
    let mut command = redis::cmd(&words[0]);
    for word in &words[1..] {
        command.arg(word);
    }
    command
}

fn pair_rate(acquire: &HalfPair, release: &HalfPair) -> Option<f64> {
    Some(1.0 / (1.0 / acquire.per_second? + 1.0 / release.per_second?))
}

fn pair_micros(acquire: &HalfPair, release: &HalfPair) -> Option<f64> {
    Some(acquire.micros? + release.micros?)
}

fn shown(figure: Option<f64>, decimals: usize) -> String {
    figure.map_or("-".to_owned(), |value| format!("{value:.decimals$}"))
}
