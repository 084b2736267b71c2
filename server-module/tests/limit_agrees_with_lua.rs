//! RATELOCK.LIMIT agrees with `core/lua/limit.lua`, call for call, on a real redis-server.
//!
//! This test builds nothing itself: it loads the module cdylib already built beside it, so build it
//! first, with the same target dir:
//!     cargo build --manifest-path server-module/Cargo.toml
//!     cargo test  --manifest-path server-module/Cargo.toml
//! (or point RATELOCK_MODULE_SO at the .so). It starts `redis-server` (on PATH; or the binary
//! RATELOCK_SERVER_BIN names) on a free loopback port with `--loadmodule`, then sends thousands of
//! generated calls (half of them a single rule, limit.lua's fast path) twice, through limit.lua and
//! through RATELOCK.LIMIT (`common::agreement`): the
//! replies must be identical, and so must every touched key's type, value and TTL (PTTL within a few ms).

use std::thread::sleep;
use std::time::Duration;

use redis::{Connection, Value};

mod common;

use common::agreement::{agree_with_lua, shapes};
use common::{
    assert_replica_ran_absolute_expiry, connect, module_path, run, spawn_server, start_replica, start_server,
    Rng,
};
use common::{key_snapshot, lua_script, wall_us, KeySnapshot, PTTL_SLACK_MS};

/// How many generated calls go through both paths (`RATELOCK_CALLS` overrides it, for longer runs).
const CALLS: usize = 3000;

#[test]
fn limit_agrees_with_lua() {
    let server = start_server();
    let mut con = connect(&server);
    let version: i64 = redis::cmd("RATELOCK.VERSION").query(&mut con).unwrap();
    assert_eq!(version, 1);
    let seed = std::env::var("RATELOCK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_1234_u64);
    let calls = std::env::var("RATELOCK_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CALLS);
    let tally = agree_with_lua(&mut con, calls, seed);
    eprintln!(
        "{calls} calls over {:?}: {} allowed ({} written), {} denied, {} errors; single-rule calls per \
         algorithm {:?}",
        tally.codes, tally.allowed, tally.writes, tally.denied, tally.errors, tally.single_rule_calls
    );
    tally.assert_covers_every_outcome(calls);
}

/// With `now` empty each path reads the server's clock (the script TIME, the module the system clock),
/// a moment apart: the decisions and counts agree exactly, the µs figures within the slack.
#[test]
fn server_clock_calls_agree() {
    let server = start_server();
    let mut con = connect(&server);
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(lua_script("limit"))
        .query(&mut con)
        .unwrap();
    // Slow rules, so that a few ms between the two calls change no count.
    let rules = [
        ("g", 5, 3_600_000_000u64, 5),
        ("fw", 4, 3_600_000_000, 4),
        ("tb", 6, 3_600_000_000, 3),
    ];
    for call in 0..40 {
        let (code, limit, period, burst) = rules[call % rules.len()];
        let argv = [
            "hit".to_string(),
            String::new(),
            "1".into(),
            code.into(),
            limit.to_string(),
            period.to_string(),
            burst.to_string(),
        ];
        let lua = run(
            &mut con,
            redis::cmd("EVALSHA")
                .arg(&sha)
                .arg(1)
                .arg(format!("lua:clock:{code}"))
                .arg(&argv),
        );
        let module = run(
            &mut con,
            redis::cmd("RATELOCK.LIMIT")
                .arg(1)
                .arg(format!("mod:clock:{code}"))
                .arg(&argv),
        );
        let ints = |reply: Result<Value, String>| -> Vec<i64> {
            match reply {
                Ok(Value::Array(items)) => items
                    .into_iter()
                    .map(|v| match v {
                        Value::Int(n) => n,
                        other => panic!("not an integer: {other:?}"),
                    })
                    .collect(),
                other => panic!("unexpected reply {other:?}"),
            }
        };
        let (a, b) = (ints(lua), ints(module));
        assert_eq!(
            a[..3],
            b[..3],
            "allowed/limit/remaining differ at call {call} ({code})"
        );
        for i in 3..5 {
            assert!(
                (a[i] - b[i]).abs() <= PTTL_SLACK_MS * 1000,
                "µs figure {i} differs: {a:?} vs {b:?}"
            );
        }
        let (x, y) = (
            key_snapshot(&mut con, &format!("lua:clock:{code}")),
            key_snapshot(&mut con, &format!("mod:clock:{code}")),
        );
        assert_eq!(x.kind, y.kind);
        assert!(
            (x.pttl - y.pttl).abs() <= PTTL_SLACK_MS,
            "PTTL {} vs {}",
            x.pttl,
            y.pttl
        );
    }
}

/// The module's writes reach a replica as plain effects (SET .. PXAT, HSET, ZADD, ZREMRANGEBYSCORE,
/// PEXPIREAT), never as RATELOCK.LIMIT: a replica without the module ends with the same keys and TTLs.
#[test]
fn writes_replicate_as_effects() {
    let master = start_server();
    let mut con = connect(&master);
    let (_replica, mut replica_con) = start_replica(&master);
    let keys = random_module_calls(&mut con, 0xA11CE, "rep", 400, true);
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1, "the replica did not acknowledge the writes");
    for key in &keys {
        let (a, b) = (key_snapshot(&mut con, key), key_snapshot(&mut replica_con, key));
        assert_eq!(
            (&a.kind, &a.contents),
            (&b.kind, &b.contents),
            "{key} differs on the replica"
        );
        assert!(
            (a.pttl - b.pttl).abs() <= PTTL_SLACK_MS,
            "{key}: PTTL {} vs {} on the replica",
            a.pttl,
            b.pttl
        );
    }
    assert_replica_ran_absolute_expiry(&mut replica_con);
}

/// An AOF reload (`DEBUG LOADAOF`: the server empties itself and replays its append-only file) gives back
/// the same keys, values and expiry times: the AOF holds the effects with absolute expiry, never
/// `RATELOCK.LIMIT` itself, which a replay would decide again on a later clock.
#[test]
fn an_aof_reload_gives_back_the_same_keys_values_and_expiry() {
    let module = module_path();
    let port_dir = std::env::temp_dir().join(format!("ratelock-module-aof-{}", std::process::id()));
    std::fs::create_dir_all(&port_dir).unwrap();
    let server = spawn_server(&mut vec![
        "--loadmodule".into(),
        module.display().to_string(),
        "--appendonly".into(),
        "yes".into(),
        "--appendfsync".into(),
        "always".into(),
        "--enable-debug-command".into(),
        "yes".into(),
        "--dir".into(),
        port_dir.display().to_string(),
    ]);
    let mut con = connect(&server);
    let keys = random_module_calls(&mut con, 0xA0F, "aof", 300, false);
    let before: Vec<KeySnapshot> = keys.iter().map(|key| key_snapshot(&mut con, key)).collect();
    sleep(Duration::from_millis(300)); // a replay on a later clock would move every expiry by this
    let _: () = redis::cmd("DEBUG").arg("LOADAOF").query(&mut con).unwrap();
    for (key, was) in keys.iter().zip(before) {
        let now = key_snapshot(&mut con, key);
        assert_eq!(
            (&was.kind, &was.contents),
            (&now.kind, &now.contents),
            "{key} differs after the reload"
        );
        if was.pttl > 0 {
            let elapsed = was.pttl - now.pttl;
            assert!(
                (0..=PTTL_SLACK_MS + 400).contains(&elapsed),
                "{key}: PTTL {} before, {} after the reload: the expiry moved",
                was.pttl,
                now.pttl
            );
        }
    }
    let _ = std::fs::remove_dir_all(&port_dir);
}

/// `count` seeded `RATELOCK.LIMIT` calls (one rule each, of the generated shapes, on keys
/// `<prefix>:{u}:<shape>`, with `now` moving ahead of the wall clock; a quarter of them peeks when
/// `with_peeks`), each asserted to answer; the keys they used.
fn random_module_calls(
    con: &mut Connection,
    seed: u64,
    prefix: &str,
    count: usize,
    with_peeks: bool,
) -> std::collections::BTreeSet<String> {
    let mut rng = Rng(seed);
    let shapes = shapes(&mut rng);
    let mut keys = std::collections::BTreeSet::new();
    let mut drift = 0;
    for _ in 0..count {
        drift += rng.below(300_000);
        let s = rng.below(shapes.len() as u64) as usize;
        let shape = &shapes[s];
        let key = format!("{prefix}:{{u}}:{s}");
        let mode = if with_peeks && rng.below(4) == 0 {
            "peek"
        } else {
            "hit"
        };
        let reply = run(
            con,
            redis::cmd("RATELOCK.LIMIT")
                .arg(1)
                .arg(&key)
                .arg(mode)
                .arg(wall_us() + drift)
                .arg(1)
                .arg(shape.code)
                .arg(shape.limit)
                .arg(shape.period_us)
                .arg(shape.burst),
        );
        assert!(reply.is_ok(), "{reply:?}");
        keys.insert(key);
    }
    keys
}

/// A call with more rules than ratelock checks together (ratelock::MAX_RULES) is refused by both paths,
/// with the same error, before any work: no client call can hold the server with thousands of rules.
#[test]
fn too_many_rules_are_refused_alike() {
    let server = start_server();
    let mut con = connect(&server);
    for (count, refused) in [(100, false), (101, true), (5_000, true)] {
        let keys: Vec<String> = (0..count)
            .map(|i| format!("rl:{{many}}:g{}/1000", i + 1))
            .collect();
        let mut args = vec!["peek".to_string(), String::new(), "1".into()];
        for i in 0..count {
            args.extend([
                "g".into(),
                (i + 1).to_string(),
                "1000000".into(),
                (i + 1).to_string(),
            ]);
        }
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let lua = run(&mut con, &common::script_or_module(false, "limit", &keys, &args));
        let module = run(&mut con, &common::script_or_module(true, "limit", &keys, &args));
        assert_eq!(lua, module, "{count} rules");
        if refused {
            let error = lua.unwrap_err();
            assert!(error.contains("at most 100 rules"), "{count} rules: {error}");
        } else {
            assert!(lua.is_ok(), "{count} rules: {lua:?}");
        }
    }
}
