//! What a decision costs the server: every path saturated by `redis-benchmark -c 50 -P 16 -r 10000` on
//! one redis-server that loads ratelock's module (and redis-cell's, when built), calls/s from
//! redis-benchmark and server µs per call from `INFO commandstats` beside it. Rows: ratelock's module
//! and its Lua script for one rule of each algorithm and for three rules; a minimal GCRA script (alone,
//! and in limit.lua's call shape: the floor of any script under ratelock's contract) and the
//! INCR + PEXPIRE script that peers run; redis-cell's `CL.THROTTLE`; a plain `SET`. The Lua rows' µs
//! are set against the minimal GCRA script's (what a server without modules can do at best); the
//! module's against CL.THROTTLE's. Then the lock acquire+release pairs (lock_server_cost.rs). Each
//! limit path's server time per call is also read as a histogram (server_tails.rs), and the minimal
//! GCRA script's once more on a server with nothing else loaded.
//! Run alone: `cargo run --release -p ratelock-bench -- server-cost`.

use std::path::PathBuf;

use ratelock::Rules;
use ratelock_testkit::RedisServer;

use crate::lock_server_cost;
use crate::native_floor;
use crate::redis_benchmark::{command_stat, load_script, requests_per_second, BenchmarkRun};
use crate::report::{Row, Target, Unit};
use crate::script_call::{ScriptCall, LIMIT_SCRIPT};
use crate::server_tails::{self, Tail};

/// A minimal GCRA in Lua, the floor for any GCRA script: read the theoretical arrival time, read the
/// clock, write the next one with a PX expiry. (Written for this bench; it denies nothing.)
pub(crate) const MINIMAL_GCRA: &str = "local t = redis.call('TIME') \
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) \
local tat = tonumber(redis.call('GET', KEYS[1]) or now) \
if tat < now then tat = now end \
redis.call('SET', KEYS[1], tat + tonumber(ARGV[1]), 'PX', ARGV[2]) \
return 1";

/// The minimal GCRA's work with limit.lua's call shape: its arguments, the call-tag envelope and a
/// reply of five integers. What limit.lua's one GCRA rule could cost at best under that contract.
const MINIMAL_GCRA_IN_LIMIT_SHAPE: &str = "local t = redis.call('TIME') \
local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) \
local tat = tonumber(redis.call('GET', KEYS[1]) or now) \
if tat < now then tat = now end \
redis.call('SET', KEYS[1], tat + 600000, 'PX', 60000) \
return { 1, 100, 99, 600000, 0 }";

/// The fixed-window counter that rate-limiter-flexible and limits run: INCR, PEXPIRE on the first hit.
const INCR_PEXPIRE: &str = "local n = redis.call('INCR', KEYS[1]) \
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end \
return n";

/// The label of limit.lua's single GCRA rule, the row with a target against the minimal GCRA script.
pub(crate) const LUA_GCRA_LABEL: &str = "one GCRA rule";
/// The minimal GCRA script's row: the floor the Lua rows' µs are set against.
pub(crate) const MINIMAL_GCRA_LABEL: &str = "a minimal GCRA Lua script (GET, TIME, SET PX)";
/// How far above that floor limit.lua's single GCRA rule may cost (server µs per call).
pub(crate) const LUA_GCRA_TARGET_RATIO: f64 = 1.2;
/// The label of limit.lua's single fixed_window rule, whose FCALL row has a target against INCR + PEXPIRE.
pub(crate) const FIXED_WINDOW_LABEL: &str = "one fixed_window rule";
/// The label of limit.lua's single sliding_window rule.
pub(crate) const SLIDING_WINDOW_LABEL: &str = "one sliding_window rule";
/// The counter script's row: the yardstick of the fixed-window rows.
pub(crate) const INCR_PEXPIRE_LABEL: &str = "the INCR + PEXPIRE script of rate-limiter-flexible and limits";
/// How far above INCR + PEXPIRE limit.lua's fixed window may cost by FCALL (server µs per call).
pub(crate) const FIXED_WINDOW_TARGET_RATIO: f64 = 2.0;

/// One row's command, and the `INFO commandstats` entry that times it.
pub(crate) struct Path {
    pub(crate) name: String,
    pub(crate) command: Vec<String>,
    stat: &'static str,
}

/// The module's `.so`, from `RATELOCK_MODULE_SO` (the Makefile builds it and sets it).
pub(crate) fn module_path() -> Option<PathBuf> {
    std::env::var_os("RATELOCK_MODULE_SO")
        .map(PathBuf::from)
        .filter(|p| p.exists())
}

/// redis-cell's `.so`, from `REDIS_CELL_SO` (`bench/peers/redis-cell.sh` builds it).
fn redis_cell_path() -> Option<PathBuf> {
    std::env::var_os("REDIS_CELL_SO")
        .map(PathBuf::from)
        .filter(|p| p.exists())
}

pub(crate) fn paths(connection: &mut redis::Connection, with_module: bool, with_cell: bool) -> Vec<Path> {
    let limit_sha = load_script(connection, &LIMIT_SCRIPT);
    let library = ratelock::store::function_library();
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(library.code)
        .query(connection)
        .expect("FUNCTION LOAD of ratelock's library");
    let mut paths = Vec::new();
    for (label, rules) in [
        (LUA_GCRA_LABEL, "100/minute"),
        ("one token_bucket rule", "100/minute using token_bucket"),
        ("one leaky_bucket rule", "100/minute using leaky_bucket"),
        (FIXED_WINDOW_LABEL, "100/minute using fixed_window"),
        (SLIDING_WINDOW_LABEL, "100/minute using sliding_window"),
        ("sliding_log 100/minute", "100/minute using sliding_log"),
        (
            THREE_RULES_LABEL,
            "100/minute; 1000/hour using sliding_window; 10/second using fixed_window",
        ),
        (THREE_GCRA_LABEL, "100/minute; 1000/hour; 10/second"),
    ] {
        let rules: Rules = rules.parse().expect("bench rules");
        let call = ScriptCall::hit_all("rl", "bench:__rand_int__", rules.iter());
        let mut lua = vec!["EVALSHA".to_owned()];
        lua.extend(call.evalsha_args(&limit_sha));
        if with_module {
            paths.push(Path {
                name: format!("ratelock module RATELOCK.LIMIT, {label}"),
                command: call.module_command(),
                stat: "ratelock.limit",
            });
        }
        // The same call as a Redis Function, the route the store takes on a server without the module
        // (Redis >= 7): FCALL <function> and EVALSHA's arguments after the SHA1.
        let mut fcall = vec!["FCALL".to_owned(), library.limit_function.to_owned()];
        fcall.extend(lua[2..].iter().cloned());
        paths.push(Path {
            name: format!("{LUA_FCALL_PREFIX}{label}"),
            command: fcall,
            stat: "fcall",
        });
        paths.push(Path {
            name: format!("ratelock limit.lua, {label}"),
            command: lua,
            stat: "evalsha",
        });
    }
    crate::contract_floors::load(connection);
    let one_rule_arguments = |rule: &str| {
        let rules: Rules = rule.parse().expect("bench rule");
        let call = ScriptCall::hit_all("rl", "bench:__rand_int__", rules.iter());
        call.evalsha_args("")[1..].to_vec()
    };
    for (name, command) in crate::contract_floors::commands(
        &one_rule_arguments("100/minute"),
        &one_rule_arguments("100/minute using fixed_window"),
    ) {
        paths.push(Path {
            name,
            command,
            stat: "fcall",
        });
    }
    let minimal = load_script(connection, MINIMAL_GCRA);
    paths.push(Path {
        name: MINIMAL_GCRA_LABEL.into(),
        command: minimal_gcra_command(&minimal),
        stat: "evalsha",
    });
    let shaped = load_script(
        connection,
        &ratelock::store::tagged_script(MINIMAL_GCRA_IN_LIMIT_SHAPE),
    );
    let rule: Rules = "100/minute".parse().expect("bench rule");
    let gcra_call = ScriptCall::hit_all("rl", "bench:__rand_int__", rule.iter());
    let mut shaped_command = vec!["EVALSHA".to_owned()];
    shaped_command.extend(gcra_call.evalsha_args(&shaped));
    paths.push(Path {
        name: "the minimal GCRA script in limit.lua's call shape (its ARGV, tag and reply)".into(),
        command: shaped_command,
        stat: "evalsha",
    });
    let counter = load_script(connection, INCR_PEXPIRE);
    paths.push(Path {
        name: INCR_PEXPIRE_LABEL.into(),
        command: ["EVALSHA", &counter, "1", "count:__rand_int__", "60000"]
            .map(str::to_owned)
            .to_vec(),
        stat: "evalsha",
    });
    if with_cell {
        paths.push(Path {
            name: "redis-cell 0.2.2 CL.THROTTLE (GCRA, native)".into(),
            command: ["CL.THROTTLE", "cell:__rand_int__", "100", "100", "60", "1"]
                .map(str::to_owned)
                .to_vec(),
            stat: "cl.throttle",
        });
    }
    paths.push(Path {
        name: "plain SET".into(),
        command: ["SET", "set:__rand_int__", "x"].map(str::to_owned).to_vec(),
        stat: "set",
    });
    paths
}

/// The three rules of different algorithms checked together: a row for each path.
pub(crate) const THREE_RULES_LABEL: &str = "3 rules (gcra + sliding_window + fixed_window)";
/// Three GCRA rules checked together: how a call's cost grows with its rules when every rule does the
/// same work.
pub(crate) const THREE_GCRA_LABEL: &str = "3 GCRA rules (100/minute; 1000/hour; 10/second)";

/// The name of the module's single GCRA rule in the rows ("server µs per call: <name>").
pub(crate) const MODULE_GCRA_NAME: &str = "ratelock module RATELOCK.LIMIT, one GCRA rule";
/// The name of limit.lua's single GCRA rule in the rows.
pub(crate) const LUA_GCRA_NAME: &str = "ratelock limit.lua, one GCRA rule";
/// The start of the name of a row of limit.lua called as a Redis Function.
pub(crate) const LUA_FCALL_PREFIX: &str = "ratelock limit.lua as a Redis Function (FCALL), ";

/// One path's figures: its name, saturated calls/s and server µs per call.
pub(crate) type Figure = (String, Option<f64>, Option<f64>);

fn saturating_run() -> BenchmarkRun {
    BenchmarkRun {
        requests: 200_000,
        clients: 50,
        pipeline: 16,
        keyspace: Some(10_000),
    }
}

/// Saturates `server` with each path in turn and reads its commandstats and latency histogram.
fn measure(
    server: &RedisServer,
    connection: &mut redis::Connection,
    paths: Vec<Path>,
    notes: &mut Vec<String>,
) -> (Vec<Figure>, Vec<Tail>) {
    let run = saturating_run();
    let mut figures = Vec::new();
    let mut tails = Vec::new();
    for path in paths {
        // Each path on an empty keyspace (scripts and libraries stay): paths share key names, and a
        // counter's INCR on the hash another path left would fail every call.
        let _: () = redis::cmd("FLUSHALL").query(connection).expect("FLUSHALL");
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query(connection)
            .expect("CONFIG RESETSTAT");
        let per_second = requests_per_second(server.port(), &path.command, &run);
        let mut micros = command_stat(connection, path.stat, "usec_per_call");
        if let Err(problem) = &per_second {
            notes.push(format!("server cost, {}: {problem}", path.name));
        }
        // A call that failed is counted in usec_per_call too: no figure then, and a note.
        let failed = command_stat(connection, path.stat, "failed_calls").unwrap_or(0.0);
        if failed > 0.0 {
            notes.push(format!(
                "server cost, {}: {failed:.0} calls failed: no µs figure",
                path.name
            ));
            micros = None;
        }
        match server_tails::read(connection, path.stat) {
            Some(tail) => tails.push((path.name.clone(), micros, tail)),
            None => notes.push(format!(
                "server cost, {}: no latency histogram for {} (LATENCY HISTOGRAM needs Redis >= 7 and a call)",
                path.name, path.stat
            )),
        }
        figures.push((path.name, per_second.ok(), micros));
    }
    (figures, tails)
}

/// `EVALSHA` of the minimal GCRA script (loaded as `sha`) on a random key of 10,000.
fn minimal_gcra_command(sha: &str) -> Vec<String> {
    ["EVALSHA", sha, "1", "gcra:__rand_int__", "600000", "60000"]
        .map(str::to_owned)
        .to_vec()
}

/// The minimal GCRA script on a server of its own, with no other script or library loaded: its
/// histogram beside the same script's on the section's server shows what the scripts and the library
/// loaded beside it cost its tail (Redis steps the Lua garbage collector every 50 script calls, over
/// everything its Lua state holds).
fn minimal_gcra_alone(notes: &mut Vec<String>) -> Option<Tail> {
    let server = RedisServer::start();
    let mut connection = server.connection();
    let sha = load_script(&mut connection, MINIMAL_GCRA);
    let path = Path {
        name: format!("{MINIMAL_GCRA_LABEL}, on a server with no other script or library"),
        command: minimal_gcra_command(&sha),
        stat: "evalsha",
    };
    let (_, mut tails) = measure(&server, &mut connection, vec![path], notes);
    tails.pop()
}

/// Only the single GCRA rule of the module (when built) and of limit.lua, measured as the section
/// does, on a server of their own: for sections that need these figures when server-cost did not run.
pub(crate) fn single_gcra_figures(notes: &mut Vec<String>) -> Vec<Figure> {
    let module = module_path();
    let server = match &module {
        Some(so) => RedisServer::start_with(&["--loadmodule", &so.display().to_string()]),
        None => RedisServer::start(),
    };
    let mut connection = server.connection();
    let wanted: Vec<Path> = paths(&mut connection, module.is_some(), false)
        .into_iter()
        .filter(|path| path.name == MODULE_GCRA_NAME || path.name == LUA_GCRA_NAME)
        .collect();
    measure(&server, &mut connection, wanted, notes).0
}

/// The section's rows, and the table of each path's server time per call as a histogram.
pub fn rows(notes: &mut Vec<String>) -> (Vec<Row>, String) {
    let (module, cell) = (module_path(), redis_cell_path());
    let mut arguments: Vec<String> = Vec::new();
    for so in [&module, &cell].into_iter().flatten() {
        arguments.push("--loadmodule".into());
        arguments.push(so.display().to_string());
    }
    let argument_refs: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let server = RedisServer::start_with(&argument_refs);
    let mut connection = server.connection();
    if module.is_none() {
        notes.push("server cost: the module was not built (RATELOCK_MODULE_SO unset): no module rows".into());
    }
    if cell.is_none() {
        notes.push("server cost: redis-cell was not built (REDIS_CELL_SO unset): no CL.THROTTLE row".into());
    }
    let run = saturating_run();
    let all_paths = paths(&mut connection, module.is_some(), cell.is_some());
    let (figures, mut tails) = measure(&server, &mut connection, all_paths, notes);
    tails.extend(minimal_gcra_alone(notes));
    notes.push(format!(
        "server cost: redis-benchmark {} -r 10000 -n {} per row on one redis-server{}; µs per call from INFO commandstats after CONFIG RESETSTAT (it leaves out argument parsing and varies from run to run); the limit.lua rows' µs baseline is the minimal GCRA script (the fixed window's by FCALL: INCR + PEXPIRE), the others' CL.THROTTLE; the contract's floors are functions of a bench library called with limit.lua's own KEYS and ARGV, the lightest contract's with those KEYS and only the rule's numbers and the tag (bench/src/contract_floors.rs); FLUSHALL before each path",
        run.describe(),
        run.requests,
        if module.is_some() { " that loads ratelock's module" } else { "" }
    ));
    let set_rate = figures
        .iter()
        .find(|(name, ..)| name == "plain SET")
        .and_then(|(_, rate, _)| *rate);
    let cell = figures
        .iter()
        .find(|(name, ..)| name.starts_with("redis-cell"))
        .map(|(_, rate, micros)| (*rate, *micros));
    let micros_of = |wanted: &str| {
        figures
            .iter()
            .find(|(name, ..)| name == wanted)
            .and_then(|(_, _, micros)| *micros)
    };
    let minimal_micros = micros_of(MINIMAL_GCRA_LABEL);
    let counter_micros = micros_of(INCR_PEXPIRE_LABEL);
    let figures_by_name: Vec<(String, Option<f64>)> = figures
        .iter()
        .map(|(name, _, micros)| (name.clone(), *micros))
        .collect();
    let mut rows = Vec::new();
    for (name, rate, micros) in figures {
        // Both figures against redis-cell's native GCRA when it was built (calls/s against plain SET
        // otherwise); the module's single GCRA rule aims at CL.THROTTLE's rate.
        let module_gcra = name == MODULE_GCRA_NAME;
        rows.push(Row {
            name: format!("saturated calls/s: {name}"),
            unit: Unit::PerSecond,
            measured: rate,
            baseline: cell.and_then(|(rate, _)| rate).or(set_rate),
            target: if module_gcra && cell.is_some() {
                Target::RatioAtLeast(1.0)
            } else {
                Target::None
            },
        });
        // Each Lua row against the peer script its target names: a fixed window (by FCALL, and the
        // counter's floor) against INCR + PEXPIRE, every other against the minimal GCRA script.
        let fcall_window = name == format!("{LUA_FCALL_PREFIX}{FIXED_WINDOW_LABEL}");
        let counter = fcall_window
            || name.ends_with(crate::contract_floors::COUNTER_READS)
            || name.ends_with(crate::contract_floors::WINDOW_LIGHTEST);
        let lua = name.starts_with("ratelock limit.lua")
            || name.starts_with(crate::contract_floors::PREFIX)
            || name.starts_with(crate::contract_floors::LIGHTEST_PREFIX);
        rows.push(Row {
            name: format!("server µs per call: {name}"),
            unit: Unit::Micros,
            measured: micros,
            baseline: match (counter, lua) {
                (true, _) => counter_micros,
                (false, true) => minimal_micros,
                (false, false) => cell.and_then(|(_, micros)| micros),
            },
            target: if name == LUA_GCRA_NAME || name == format!("{LUA_FCALL_PREFIX}{LUA_GCRA_LABEL}") {
                Target::RatioAtMost(LUA_GCRA_TARGET_RATIO)
            } else if fcall_window {
                Target::RatioAtMost(FIXED_WINDOW_TARGET_RATIO)
            } else {
                Target::None
            },
        });
    }
    let floors = limit_floors(&mut connection);
    let pings = (
        native_floor::exec_of_pings(&mut connection, 2),
        native_floor::exec_of_pings(&mut connection, 8),
    );
    notes.push(format!(
        "server cost, native floors (a call's keyspace work as native commands in one MULTI/EXEC per call, \
         -r 10000, µs per EXEC): one GCRA rule {} µs (GET, SET .. PXAT), 3 rules {} µs (the GCRA's, then \
         HMGET, HSET, PEXPIREAT for the sliding_window and the fixed_window hashes), sliding_log {} µs \
         (ZREMRANGEBYSCORE, ZRANGE .. WITHSCORES, ZCOUNT, ZADD, PEXPIREAT; -r 5000, 20 entries a user by the \
         end as in the module's row); EXECs of 2 and 8 PINGs cost {} and {} µs, at most the EXECs' own share",
        floors.one_rule.map_or("-".into(), |m| format!("{m:.2}")),
        floors.three_rules.map_or("-".into(), |m| format!("{m:.2}")),
        floors.sliding_log.map_or("-".into(), |m| format!("{m:.2}")),
        pings.0.map_or("-".into(), |m| format!("{m:.2}")),
        pings.1.map_or("-".into(), |m| format!("{m:.2}")),
    ));
    rows.extend(rule_count_rows(&figures_by_name, &floors));
    rows.extend(lock_server_cost::rows(
        &server,
        &mut connection,
        module.is_some(),
        notes,
    ));
    (rows, server_tails::table(&tails))
}

/// How far above its three rules called one by one (the sum of their single-rule FCALLs) limit.lua may
/// cost by FCALL for the 3 rules in one atomic call (server µs): the alternative to 12 µs.
const THREE_RULES_FCALL_TARGET_RATIO: f64 = 2.0;

/// How a call's server µs grows with its rules, for the module and for limit.lua (by FCALL and by
/// EVALSHA): several rules, or a sliding log, against the same path's single GCRA rule (the module's 3
/// rules and sliding log carry the targets), 3 rules against the sum of their three
/// single-rule rows (FCALL's carries a target), and the module rows and their native floors
/// (`limit_floors`).
fn rule_count_rows(micros: &[(String, Option<f64>)], floors: &Floors) -> Vec<Row> {
    let of = |name: String| micros.iter().find(|(n, _)| *n == name).and_then(|(_, m)| *m);
    let module = "ratelock module RATELOCK.LIMIT";
    let mut rows = Vec::new();
    let with_floors = [
        (LUA_GCRA_LABEL, floors.one_rule),
        (THREE_RULES_LABEL, floors.three_rules),
        ("sliding_log 100/minute", floors.sliding_log),
    ];
    for (label, floor) in &with_floors[1..] {
        rows.push(Row {
            name: format!(
                "server µs, native floor: the keyspace work of {label} against one GCRA rule's (native commands in one EXEC each)"
            ),
            unit: Unit::Micros,
            measured: *floor,
            baseline: floors.one_rule,
            target: Target::None,
        });
    }
    for (label, floor) in with_floors {
        rows.push(Row {
            name: format!(
                "server µs, against its floor (its keyspace work as native commands): {module}, {label}"
            ),
            unit: Unit::Micros,
            measured: of(format!("{module}, {label}")),
            baseline: floor,
            target: Target::None,
        });
    }
    let fcall = LUA_FCALL_PREFIX.trim_end_matches(", ");
    for (path, is_module) in [(module, true), (fcall, false), ("ratelock limit.lua", false)] {
        let single = of(format!("{path}, {LUA_GCRA_LABEL}"));
        let against_single = [
            (THREE_RULES_LABEL, 2.5),
            (THREE_GCRA_LABEL, 0.0),
            ("sliding_log 100/minute", 3.0),
        ];
        for (label, target) in against_single {
            rows.push(Row {
                name: format!("server µs, against its one GCRA rule: {path}, {label}"),
                unit: Unit::Micros,
                measured: of(format!("{path}, {label}")),
                baseline: single,
                target: if is_module && target > 0.0 {
                    Target::RatioAtMost(target)
                } else {
                    Target::None
                },
            });
        }
        let parts = [LUA_GCRA_LABEL, "one sliding_window rule", "one fixed_window rule"]
            .map(|label| of(format!("{path}, {label}")));
        rows.push(Row {
            name: format!(
                "server µs, against its three rules called one by one: {path}, {THREE_RULES_LABEL}"
            ),
            unit: Unit::Micros,
            measured: of(format!("{path}, {THREE_RULES_LABEL}")),
            baseline: parts.iter().copied().sum::<Option<f64>>(),
            target: if path == fcall {
                Target::RatioAtMost(THREE_RULES_FCALL_TARGET_RATIO)
            } else {
                Target::None
            },
        });
    }
    rows
}

/// The native floors (`native_floor`) of one GCRA rule's call and of the 3 rules' call: each rule's
/// read and write of its key as Redis's own commands, one MULTI/EXEC per call, over 10,000 users.
fn limit_floors(connection: &mut redis::Connection) -> Floors {
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    let (tat, until) = (
        (now_us + 600_000).to_string(),
        (now_us / 1000 + 60_000).to_string(),
    );
    let gcra = |n: u64| {
        let key = native_floor::drawn("floor:{__rand_int__}:g", n);
        vec![
            native_floor::command(&["GET", &key]),
            native_floor::command(&["SET", &key, &tat, "PXAT", &until]),
        ]
    };
    let three = |n: u64| {
        let (window, sliding) = (
            native_floor::drawn("floor:{__rand_int__}:fw", n),
            native_floor::drawn("floor:{__rand_int__}:sw", n),
        );
        let mut commands = gcra(n);
        commands.extend([
            native_floor::command(&["HMGET", &sliding, "w", "c", "p"]),
            native_floor::command(&["HSET", &sliding, "w", "490000", "c", "7", "p", "12"]),
            native_floor::command(&["PEXPIREAT", &sliding, &until]),
            native_floor::command(&["HMGET", &window, "w", "c"]),
            native_floor::command(&["HSET", &window, "w", "1764000000", "c", "3"]),
            native_floor::command(&["PEXPIREAT", &window, &until]),
        ]);
        commands
    };
    // The sliding log's: drop what left the window, read the rest with scores, count the entries at
    // this µs, add one, set the expiry. Each call stamps a µs of its own, so the sets grow as the
    // module row's do: its 200,000 calls over 10,000 users leave 20 entries a user, as these 100,000
    // over 5,000 do.
    let stamp = std::cell::Cell::new(now_us);
    let log = |n: u64| {
        let key = native_floor::drawn("floor:{__rand_int__}:sl", n);
        stamp.set(stamp.get() + 1);
        let (at, through) = (stamp.get().to_string(), (stamp.get() - 60_000_000).to_string());
        vec![
            native_floor::command(&["ZREMRANGEBYSCORE", &key, "-inf", &through]),
            native_floor::command(&["ZRANGE", &key, "0", "-1", "WITHSCORES"]),
            native_floor::command(&["ZCOUNT", &key, &at, &at]),
            native_floor::command(&["ZADD", &key, &at, &format!("{at}:0")]),
            native_floor::command(&["PEXPIREAT", &key, &until]),
        ]
    };
    Floors {
        one_rule: native_floor::exec_micros(connection, &gcra, 10_000),
        three_rules: native_floor::exec_micros(connection, &three, 10_000),
        sliding_log: native_floor::exec_micros(connection, &log, 5_000),
    }
}

/// The native floors of the module rows with targets, µs per EXEC (`limit_floors`).
struct Floors {
    one_rule: Option<f64>,
    three_rules: Option<f64>,
    sliding_log: Option<f64>,
}
