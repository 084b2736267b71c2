//! RATELOCK.LIMIT agrees with `core/lua/limit.lua`, call for call, on a real redis-server.
//!
//! This test builds nothing itself: it loads the module cdylib already built beside it, so build it
//! first, with the same target dir:
//!     cargo build --manifest-path server-module/Cargo.toml
//!     cargo test  --manifest-path server-module/Cargo.toml
//! (or point RATELOCK_MODULE_SO at the .so). It starts `redis-server` (on PATH) on a free loopback port
//! with `--loadmodule`, then sends thousands of generated calls (every algorithm, 1 to 3 rules, half of
//! them a single rule, hit and peek, explicit `now`, costs up to past capacity) twice: through limit.lua (prelude.lua in front,
//! loaded once, run by EVALSHA) on one set of keys, and through RATELOCK.LIMIT on a copy of them. The
//! replies must be identical, and so must every touched key's type, value and TTL (PTTL within a few ms).

use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::{Connection, Value};

mod common;

use common::{connect, module_path, run, spawn_server, start_server, Rng};

/// How many generated calls go through both paths (`RATELOCK_CALLS` overrides it, for longer runs).
const CALLS: usize = 3000;
/// How far apart the two copies' PTTLs may be: the module's call runs a moment after the script's.
const PTTL_SLACK_MS: i64 = 25;

/// One rule as the script takes it: code, limit, period µs, burst.
#[derive(Debug, Clone)]
struct Shape {
    code: &'static str,
    limit: u64,
    period_us: u64,
    burst: u64,
}

/// A fixed set of rule shapes; every key belongs to one shape, as ratelock's keys do (the rule id).
fn shapes(rng: &mut Rng) -> Vec<Shape> {
    let codes = ["g", "tb", "lb", "fw", "sw", "sl"];
    let periods_ms = [7, 250, 1000, 1234, 60_000];
    (0..24)
        .map(|i| {
            let code = codes[i % codes.len()];
            let limit = 1 + rng.below(12);
            let burst = if matches!(code, "g" | "tb" | "lb") {
                1 + rng.below(15)
            } else {
                limit
            };
            let period_us = periods_ms[rng.below(periods_ms.len() as u64) as usize] * 1000;
            Shape {
                code,
                limit,
                period_us,
                burst,
            }
        })
        .collect()
}

/// A key's type, contents and PTTL.
#[derive(Debug)]
struct Snapshot {
    kind: String,
    contents: Vec<String>,
    pttl: i64,
}

fn snapshot(con: &mut Connection, key: &str) -> Snapshot {
    let kind: String = redis::cmd("TYPE").arg(key).query(con).unwrap();
    let contents: Vec<String> = match kind.as_str() {
        "none" => vec![],
        "string" => vec![redis::cmd("GET").arg(key).query(con).unwrap()],
        "hash" => {
            let mut pairs: Vec<(String, String)> = redis::cmd("HGETALL").arg(key).query(con).unwrap();
            pairs.sort();
            pairs.into_iter().map(|(f, v)| format!("{f}={v}")).collect()
        }
        "zset" => redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(con)
            .unwrap(),
        other => panic!("{key} has unexpected type {other}"),
    };
    let pttl: i64 = redis::cmd("PTTL").arg(key).query(con).unwrap();
    Snapshot { kind, contents, pttl }
}

fn wall_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as u64
}

fn script_text() -> String {
    let lua = concat!(env!("CARGO_MANIFEST_DIR"), "/../core/lua/");
    let prelude = std::fs::read_to_string(format!("{lua}prelude.lua")).unwrap();
    let limit = std::fs::read_to_string(format!("{lua}limit.lua")).unwrap();
    format!("{prelude}\n{limit}")
}

#[test]
fn limit_agrees_with_lua() {
    let server = start_server();
    let mut con = connect(&server);
    let version: i64 = redis::cmd("RATELOCK.VERSION").query(&mut con).unwrap();
    assert_eq!(version, 1);
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(script_text())
        .query(&mut con)
        .unwrap();

    let seed = std::env::var("RATELOCK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_1234_u64);
    let mut rng = Rng(seed | 1);
    let shapes = shapes(&mut rng);
    // `now` runs ahead of the wall clock by a growing drift, never behind it: a key that expires in
    // real time has then also stopped mattering at the explicit `now`, on both copies alike.
    let mut drift: u64 = 0;
    let (mut allowed, mut denied, mut errors, mut writes) = (0, 0, 0, 0);
    let mut seen_codes = std::collections::BTreeSet::new();
    let calls = std::env::var("RATELOCK_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CALLS);
    let mut single_rule_calls = std::collections::BTreeMap::new();

    for call in 0..calls {
        drift += match rng.below(10) {
            0..=4 => rng.below(2_000),
            5..=7 => rng.below(200_000),
            8 => rng.below(3_000_000),
            _ => 0,
        };
        let now = wall_us() + drift;
        let user = rng.below(3);
        // Half the calls have one rule: limit.lua decides those on a path of their own.
        let rules = if rng.below(2) == 0 {
            1
        } else {
            2 + rng.below(2) as usize
        };
        let mut picked: Vec<usize> = Vec::new();
        while picked.len() < rules {
            let s = rng.below(shapes.len() as u64) as usize;
            if !picked.contains(&s) {
                picked.push(s);
            }
        }
        let mode = if rng.below(5) == 0 { "peek" } else { "hit" };
        let cost = match rng.below(20) {
            0 => 1 + rng.below(20),
            1..=5 => 2 + rng.below(3),
            _ => 1,
        };
        let keys = |side: &str| -> Vec<String> {
            picked.iter().map(|s| format!("{side}:{{u{user}}}:{s}")).collect()
        };
        let mut argv: Vec<String> = vec![mode.into(), now.to_string(), cost.to_string()];
        if rules == 1 {
            *single_rule_calls.entry(shapes[picked[0]].code).or_insert(0) += 1;
        }
        for &s in &picked {
            let shape = &shapes[s];
            seen_codes.insert(shape.code);
            argv.extend([
                shape.code.to_string(),
                shape.limit.to_string(),
                shape.period_us.to_string(),
                shape.burst.to_string(),
            ]);
        }
        let (lua_keys, module_keys) = (keys("lua"), keys("mod"));
        let lua_reply = run(
            &mut con,
            redis::cmd("EVALSHA")
                .arg(&sha)
                .arg(rules)
                .arg(&lua_keys)
                .arg(&argv),
        );
        let module_reply = run(
            &mut con,
            redis::cmd("RATELOCK.LIMIT")
                .arg(rules)
                .arg(&module_keys)
                .arg(&argv),
        );
        let context = || format!("call {call} (seed {seed}): keys {module_keys:?} argv {argv:?}");
        assert_eq!(lua_reply, module_reply, "replies differ at {}", context());
        match &lua_reply {
            Ok(Value::Array(items)) => {
                let all = items.iter().step_by(5).all(|v| *v == Value::Int(1));
                if all {
                    allowed += 1;
                    if mode == "hit" {
                        writes += 1;
                    }
                } else {
                    denied += 1;
                }
            }
            Ok(other) => panic!("unexpected reply {other:?} at {}", context()),
            Err(_) => errors += 1,
        }
        for (lua_key, module_key) in lua_keys.iter().zip(&module_keys) {
            let (a, b) = (snapshot(&mut con, lua_key), snapshot(&mut con, module_key));
            assert_eq!(
                (&a.kind, &a.contents),
                (&b.kind, &b.contents),
                "stored state differs for {module_key} at {}",
                context()
            );
            let ttls_agree = (a.pttl < 0 && a.pttl == b.pttl)
                || (a.pttl >= 0 && b.pttl >= 0 && (a.pttl - b.pttl).abs() <= PTTL_SLACK_MS);
            assert!(
                ttls_agree,
                "PTTL {} (lua) vs {} (module) for {module_key} at {}",
                a.pttl,
                b.pttl,
                context()
            );
        }
    }
    eprintln!(
        "{calls} calls over {:?}: {allowed} allowed ({writes} written), {denied} denied, {errors} errors; \
         single-rule calls per algorithm {single_rule_calls:?}",
        seen_codes
    );
    // One rule denies less often than several (about a tenth of the calls deny with this mix).
    assert!(
        allowed > calls / 10 && denied > calls / 20 && errors > 0,
        "the mix should cover every outcome"
    );
    assert_eq!(
        single_rule_calls.len(),
        6,
        "every algorithm should be called alone"
    );
}

/// With `now` empty each path reads the server's clock (the script TIME, the module the system clock),
/// a moment apart: the decisions and counts agree exactly, the µs figures within the slack.
#[test]
fn server_clock_calls_agree() {
    let server = start_server();
    let mut con = connect(&server);
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(script_text())
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
            snapshot(&mut con, &format!("lua:clock:{code}")),
            snapshot(&mut con, &format!("mod:clock:{code}")),
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
    let replica = spawn_server(&mut vec![
        "--replicaof".into(),
        "127.0.0.1".into(),
        master.port.to_string(),
    ]);
    let mut replica_con = connect(&replica);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !redis::cmd("INFO")
        .arg("replication")
        .query::<String>(&mut replica_con)
        .unwrap()
        .contains("master_link_status:up")
    {
        assert!(Instant::now() < deadline, "the replica did not connect");
        sleep(Duration::from_millis(50));
    }
    let keys = random_module_calls(&mut con, 0xA11CE, "rep", 400, true);
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1, "the replica did not acknowledge the writes");
    for key in &keys {
        let (a, b) = (snapshot(&mut con, key), snapshot(&mut replica_con, key));
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
    let before: Vec<Snapshot> = keys.iter().map(|key| snapshot(&mut con, key)).collect();
    sleep(Duration::from_millis(300)); // a replay on a later clock would move every expiry by this
    let _: () = redis::cmd("DEBUG").arg("LOADAOF").query(&mut con).unwrap();
    for (key, was) in keys.iter().zip(before) {
        let now = snapshot(&mut con, key);
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
