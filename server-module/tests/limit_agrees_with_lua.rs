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
use std::time::{Duration, Instant};

use redis::{Connection, Value};

mod common;

use common::agreement::{agree_with_lua, shapes};
use common::{
    assert_replica_ran_absolute_expiry, connect, module_path, run, spawn_server, start_replica, start_server,
    Rng,
};
use common::{key_snapshot, key_snapshots, lua_script, slack_since, wall_us, KeySnapshot, PTTL_SLACK_MS};

/// How many generated calls go through both paths (`RATELOCK_CALLS` overrides it, for longer runs).
const CALLS: usize = 3000;

#[test]
fn limit_agrees_with_lua() {
    let server = start_server();
    let mut con = connect(&server);
    let version: i64 = redis::cmd("RATELOCK.VERSION").query(&mut con).unwrap();
    assert_eq!(version, 5);
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
         algorithm {:?}; replies per reason {:?}",
        tally.codes,
        tally.allowed,
        tally.writes,
        tally.denied,
        tally.errors,
        tally.single_rule_calls,
        tally.reasons
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
            "0".into(),
        ];
        let started = Instant::now();
        let lua = run(
            &mut con,
            redis::cmd("EVALSHA")
                .arg(&sha)
                .arg(2)
                .arg(format!("lua:clock:{code}"))
                .arg("lua:clock:standing")
                .arg(&argv),
        );
        let module = run(
            &mut con,
            redis::cmd("RATELOCK.LIMIT")
                .arg(2)
                .arg(format!("mod:clock:{code}"))
                .arg("mod:clock:standing")
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
        // The reason, then allowed, limit, remaining, reset_after and retry_after.
        let (a, b) = (ints(lua), ints(module));
        assert_eq!(a.len(), 6, "{a:?}");
        assert_eq!(
            a[..4],
            b[..4],
            "reason/allowed/limit/remaining differ at call {call} ({code})"
        );
        let snapshots = key_snapshots(
            &mut con,
            &[&format!("lua:clock:{code}"), &format!("mod:clock:{code}")],
        );
        // The two calls ran in two round trips: their clocks, and the expiries they set, that far apart.
        let slack_ms = slack_since(started);
        for i in 4..6 {
            assert!(
                (a[i] - b[i]).abs() <= slack_ms * 1000,
                "µs figure {i} differs: {a:?} vs {b:?}"
            );
        }
        let (x, y) = (&snapshots[0], &snapshots[1]);
        assert_eq!(x.kind, y.kind);
        assert!(
            (x.pttl - y.pttl).abs() <= slack_ms,
            "PTTL {} vs {}",
            x.pttl,
            y.pttl
        );
    }
}

/// A hit that a blocking rule denies bans the key: both paths answer the ban (reason 1, every rule
/// `[0, limit, 0, block, block]`), write the same entry with the same TTL, and answer from it while
/// it lasts; an ended entry leaves the rules to decide; a deny-list or allow-list entry answers for
/// every rule, spending nothing.
#[test]
fn bans_and_list_entries_answer_alike() {
    let server = start_server();
    let mut con = connect(&server);
    let now = wall_us();
    let ints = |values: &[i64]| Ok(Value::Array(values.iter().map(|&n| Value::Int(n)).collect()));
    let mut seen = Vec::new();
    for side in ["lua", "mod"] {
        let module = side == "mod";
        let [g, fw, entry] = ["g", "fw", "standing"].map(|end| format!("{side}:{{k}}:{end}"));
        let call = |con: &mut Connection, mode: &str, at: u64, two_rules: bool| {
            let mut keys = vec![g.as_str()];
            let at = at.to_string();
            let mut args = vec![mode, &at, "1", "g", "1", "1000000", "1", "2000000"];
            if two_rules {
                keys.push(&fw);
                args.extend(["fw", "5", "1000000", "5", "0"]);
            }
            keys.push(&entry);
            run(con, &common::script_or_module(module, "limit", &keys, &args))
        };
        // Spent, then denied: the denial bans the key for the rule's 2 s.
        assert_eq!(
            call(&mut con, "hit", now, false),
            ints(&[0, 1, 1, 0, 1_000_000, 0]),
            "{side}"
        );
        assert_eq!(
            call(&mut con, "hit", now + 1, false),
            ints(&[1, 0, 1, 0, 2_000_000, 2_000_000]),
            "{side}"
        );
        let ban = key_snapshot(&mut con, &entry);
        assert_eq!(ban.contents, [format!("b{}", now + 2_000_001)], "{side}");
        assert!((1_900..=2_000).contains(&ban.pttl), "{side}: PTTL {}", ban.pttl);
        // The ban answers for every rule, a rule never called before too, which is not read.
        let wait = 1_500_000;
        assert_eq!(
            call(&mut con, "hit", now + 500_001, true),
            ints(&[1, 0, 1, 0, wait, wait, 0, 5, 0, wait, wait]),
            "{side}"
        );
        assert_eq!(key_snapshot(&mut con, &fw).kind, "none", "{side}");
        // Ended (its key not yet expired): the rules decide, and spend.
        let after = call(&mut con, "hit", now + 2_000_001, true);
        let Ok(Value::Array(ref items)) = after else {
            panic!("{side}: {after:?}")
        };
        assert_eq!(
            (&items[..2], &items[6]),
            (&[Value::Int(0), Value::Int(1)][..], &Value::Int(1)),
            "{side}: {after:?}"
        );
        // A deny-list entry denies every rule, peek or hit.
        let ends = now + 5_000_000;
        let _: () = redis::cmd("SET")
            .arg(&entry)
            .arg(format!("d{ends}"))
            .arg("PX")
            .arg(10_000)
            .query(&mut con)
            .unwrap();
        let wait = 2_000_000;
        assert_eq!(
            call(&mut con, "peek", ends - wait as u64, true),
            ints(&[2, 0, 1, 0, wait, wait, 0, 5, 0, wait, wait]),
            "{side}"
        );
        // An allow-list entry admits every rule with its whole capacity, and spends nothing.
        let _: () = redis::cmd("SET")
            .arg(&entry)
            .arg(format!("a{ends}"))
            .arg("PX")
            .arg(10_000)
            .query(&mut con)
            .unwrap();
        let before = [key_snapshot(&mut con, &g), key_snapshot(&mut con, &fw)];
        assert_eq!(
            call(&mut con, "hit", ends - 1, true),
            ints(&[3, 1, 1, 1, 0, 0, 1, 5, 5, 0, 0]),
            "{side}"
        );
        let after = [key_snapshot(&mut con, &g), key_snapshot(&mut con, &fw)];
        assert_eq!(
            before.iter().map(|k| &k.contents).collect::<Vec<_>>(),
            after.iter().map(|k| &k.contents).collect::<Vec<_>>(),
            "{side}: the allow list spent"
        );
        seen.push((kinds_and_contents(&after), ban));
    }
    let (lua, module) = (&seen[0], &seen[1]);
    assert_eq!(lua.0, module.0, "the rules' state differs after the same calls");
    assert_eq!(lua.1.contents, module.1.contents, "the bans differ");
    assert!(
        (lua.1.pttl - module.1.pttl).abs() <= PTTL_SLACK_MS,
        "{lua:?} vs {module:?}"
    );
}

/// The kinds and contents of snapshots, for comparing two copies whose TTLs were read apart.
fn kinds_and_contents(snapshots: &[KeySnapshot]) -> Vec<(String, Vec<String>)> {
    snapshots
        .iter()
        .map(|k| (k.kind.clone(), k.contents.clone()))
        .collect()
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
        let read = Instant::now();
        let (a, b) = (key_snapshot(&mut con, key), key_snapshot(&mut replica_con, key));
        assert_eq!(
            (&a.kind, &a.contents),
            (&b.kind, &b.contents),
            "{key} differs on the replica"
        );
        assert!(
            (a.pttl - b.pttl).abs() <= slack_since(read),
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

/// `count` seeded `RATELOCK.LIMIT` calls (one rule each, of the generated shapes, some of which ban
/// when they deny, on keys `<prefix>:{u}:<shape>` and the entry key `<prefix>:{u}:standing`, with
/// `now` moving ahead of the wall clock; a quarter of them peeks when `with_peeks`), each asserted to
/// answer; the keys they used.
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
        let entry = format!("{prefix}:{{u}}:standing");
        let mode = if with_peeks && rng.below(4) == 0 {
            "peek"
        } else {
            "hit"
        };
        let reply = run(
            con,
            redis::cmd("RATELOCK.LIMIT")
                .arg(2)
                .arg(&key)
                .arg(&entry)
                .arg(mode)
                .arg(wall_us() + drift)
                .arg(1)
                .arg(shape.code)
                .arg(shape.limit)
                .arg(shape.period)
                .arg(shape.burst)
                .arg(shape.block_us),
        );
        assert!(reply.is_ok(), "{reply:?}");
        keys.insert(key);
        keys.insert(entry);
    }
    keys
}

/// Calls off the contract (the count of keys and arguments, a rule's block) are refused by both
/// paths with the same error; every rule's arguments are checked before any key is read, so a bad
/// rule is the error even on a key that is banned or holds an entry no ratelock code writes.
#[test]
fn bad_calls_are_refused_alike() {
    let server = start_server();
    let mut con = connect(&server);
    let count_error = "ERR ratelock: expected 5 arguments per rule key, and the entry key last";
    let bad_rule = |i: usize| format!("ERR ratelock: bad rule arguments for key {i}");
    let (rule, entry) = ("rl:{bad}:g5/1000", "rl:{bad}:standing");
    let one = ["g", "5", "1000000", "5", "0"];
    let head = ["hit", "1763800000000000", "1"];
    let with = |rules: &[&[&'static str]]| -> Vec<&'static str> {
        let mut args = head.to_vec();
        for r in rules {
            args.extend_from_slice(r);
        }
        args
    };
    let cases: Vec<(Vec<&str>, Vec<&str>, String)> = vec![
        // The contract before the entry key: one key, four arguments per rule.
        (vec![rule], with(&[&one[..4]]), count_error.into()),
        // No entry key: the one key is taken for it, and no rule is left for the arguments.
        (vec![rule], with(&[&one]), count_error.into()),
        (vec![entry], head.to_vec(), count_error.into()),
        // The entry key, but four arguments per rule, or more than its one rule takes (one too many
        // is the call tag the module takes: tagged_calls.rs).
        (vec![rule, entry], with(&[&one[..4]]), count_error.into()),
        (vec![rule, entry], with(&[&one, &one[..4]]), count_error.into()),
        (vec![], head.to_vec(), count_error.into()),
        // A block that is not a whole number of µs from 0 to 366 days, nor -1 (shadow) as its client
        // writes it.
        (
            vec![rule, entry],
            with(&[&["g", "5", "1000000", "5", "-2"]]),
            bad_rule(1),
        ),
        (
            vec![rule, entry],
            with(&[&["g", "5", "1000000", "5", "-1.0"]]),
            bad_rule(1),
        ),
        (
            vec![rule, entry],
            with(&[&["g", "5", "1000000", "5", " -1"]]),
            bad_rule(1),
        ),
        (
            vec![rule, entry],
            with(&[&["g", "5", "1000000", "5", "1.5"]]),
            bad_rule(1),
        ),
        (
            vec![rule, entry],
            with(&[&["g", "5", "1000000", "5", ""]]),
            bad_rule(1),
        ),
        (
            vec![rule, entry],
            with(&[&["g", "5", "1000000", "5", "x"]]),
            bad_rule(1),
        ),
        (
            vec![rule, entry],
            with(&[&["g", "5", "1000000", "5", "31622400000001"]]),
            bad_rule(1),
        ),
        (
            vec![rule, "rl:{bad}:fw", entry],
            with(&[&one, &["fw", "5", "1000000", "5", "31622400000001"]]),
            bad_rule(2),
        ),
    ];
    for (keys, args, error) in &cases {
        for module in [false, true] {
            let reply = run(&mut con, &common::script_or_module(module, "limit", keys, args));
            assert_eq!(
                reply,
                Err(error.clone()),
                "module {module}: keys {keys:?} args {args:?}"
            );
        }
    }
    // The longest block is taken by both.
    let longest = with(&[&["g", "5", "1000000", "5", "31622400000000"]]);
    for module in [false, true] {
        let reply = run(
            &mut con,
            &common::script_or_module(module, "limit", &[rule, entry], &longest),
        );
        assert!(reply.is_ok(), "module {module}: {reply:?}");
    }
    // A bad second rule is the error, whatever the entry holds: a live ban, or a corrupt entry.
    for held in ["b1763800001000000", "garbage"] {
        let _: () = redis::cmd("SET").arg(entry).arg(held).query(&mut con).unwrap();
        let args = with(&[&one, &["g", "5", "1000000", "5", "-2"]]);
        let costly = ["hit", "1763800000000000", "6", "g", "5", "1000000", "5", "0"];
        for module in [false, true] {
            let keys = [rule, "rl:{bad}:g5/1000b", entry];
            let reply = run(&mut con, &common::script_or_module(module, "limit", &keys, &args));
            assert_eq!(reply, Err(bad_rule(2)), "module {module}, entry {held}");
            // A cost above the rule's capacity too.
            let reply = run(
                &mut con,
                &common::script_or_module(module, "limit", &[rule, entry], &costly),
            );
            assert_eq!(
                reply,
                Err("ERR ratelock: cost exceeds capacity of rule 1".into()),
                "module {module}, entry {held}"
            );
        }
    }
}

/// A call with more rules than ratelock checks together (ratelock::MAX_RULES) is refused by both paths,
/// with the same error, before any work: no client call can hold the server with thousands of rules.
#[test]
fn too_many_rules_are_refused_alike() {
    let server = start_server();
    let mut con = connect(&server);
    for (count, refused) in [(100, false), (101, true), (5_000, true)] {
        let mut keys: Vec<String> = (0..count)
            .map(|i| format!("rl:{{many}}:g{}/1000", i + 1))
            .collect();
        keys.push("rl:{many}:standing".into());
        let mut args = vec!["peek".to_string(), String::new(), "1".into()];
        for i in 0..count {
            args.extend([
                "g".into(),
                (i + 1).to_string(),
                "1000000".into(),
                (i + 1).to_string(),
                "0".into(),
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
