//! What the module's writes through the key API look like from outside, next to the scripts':
//! - a key is signalled as modified (WATCH) only when a call changed it: a denied hit or a refused
//!   release leaves a WATCH alone, as the scripts (which then write nothing) do, and a granted one
//!   ends it;
//! - a string written in place (a GCRA TAT, the fencing counter) reads back as `SET` would leave it,
//!   whatever it held before, and `SET`'s dropping of a TTL is kept for the counter.

mod common;

use common::{connect, lua_script, run, start_server, wall_us};
use redis::{Connection, Value};

/// `RATELOCK.LIMIT` (or `limit.lua`, by EVAL) of one GCRA rule, 1 per minute, at `now`.
fn hit(module: bool, key: &str, now: u64) -> redis::Cmd {
    let mut cmd = if module {
        redis::cmd("RATELOCK.LIMIT")
    } else {
        let mut eval = redis::cmd("EVAL");
        eval.arg(lua_script("limit"));
        eval
    };
    cmd.arg(1)
        .arg(key)
        .arg("hit")
        .arg(now)
        .arg(1)
        .arg("g")
        .arg(1)
        .arg(60_000_000)
        .arg(1);
    cmd
}

/// The lock script's call (module command or EVAL of `name`) with its keys and arguments.
fn lock_call(module: bool, name: &str, keys: &[&str], args: &[&str]) -> redis::Cmd {
    let mut cmd = if module {
        redis::cmd(&format!("RATELOCK.{}", name.to_uppercase()))
    } else {
        let mut eval = redis::cmd("EVAL");
        eval.arg(lua_script(name));
        eval
    };
    cmd.arg(keys.len()).arg(keys).arg(args);
    cmd
}

/// Whether a transaction `watcher` opened with `WATCH key` before `meanwhile` ran (on another
/// connection) still commits.
fn watch_survives(
    watcher: &mut Connection,
    other: &mut Connection,
    key: &str,
    meanwhile: &redis::Cmd,
) -> bool {
    let _: () = redis::cmd("WATCH").arg(key).query(watcher).unwrap();
    run(other, meanwhile).unwrap();
    let _: () = redis::cmd("MULTI").query(watcher).unwrap();
    let _: Value = redis::cmd("PING").query(watcher).unwrap();
    let committed: Value = redis::cmd("EXEC").query(watcher).unwrap();
    committed != Value::Nil
}

#[test]
fn a_hit_ends_a_watch_only_when_granted_as_the_script_does() {
    let server = start_server();
    let (mut watcher, mut other) = (connect(&server), connect(&server));
    for module in [true, false] {
        let key = format!("{{w}}:{module}");
        let now = wall_us();
        let granted = watch_survives(&mut watcher, &mut other, &key, &hit(module, &key, now));
        let denied = watch_survives(&mut watcher, &mut other, &key, &hit(module, &key, now + 1));
        assert_eq!(
            (granted, denied),
            (false, true),
            "module {module}: a granted hit must end the WATCH, a denied one must not"
        );
    }
}

#[test]
fn a_release_ends_a_watch_only_when_it_releases_as_the_script_does() {
    let server = start_server();
    let (mut watcher, mut other) = (connect(&server), connect(&server));
    for module in [true, false] {
        let [lease, fence, channel] =
            [":lock", ":fence", ":released"].map(|end| format!("{{l{module}}}{end}"));
        let acquired = run(
            &mut other,
            &lock_call(
                module,
                "lock_acquire",
                &[&lease, &fence],
                &["owner-a", "60000000", "0", ""],
            ),
        )
        .unwrap();
        let Value::Array(ref parts) = acquired else {
            panic!("acquire answered {acquired:?}")
        };
        let token = match parts[1] {
            Value::Int(token) => token.to_string(),
            ref other => panic!("fencing token {other:?}"),
        };
        let refused = lock_call(module, "lock_release", &[&lease], &["owner-b", &channel, &token]);
        let released = lock_call(module, "lock_release", &[&lease], &["owner-a", &channel, &token]);
        assert!(
            watch_survives(&mut watcher, &mut other, &lease, &refused),
            "module {module}: a refused release must not end the WATCH"
        );
        assert!(
            !watch_survives(&mut watcher, &mut other, &lease, &released),
            "module {module}: a release must end the WATCH"
        );
    }
}

#[test]
fn strings_written_in_place_read_back_as_the_script_leaves_them() {
    let server = start_server();
    let mut con = connect(&server);
    let now = wall_us();
    // A stale TAT stored short and int-encoded, then grown to a 16-digit one in place.
    for module in [true, false] {
        let key = format!("{{s}}:{module}");
        let _: () = redis::cmd("SET").arg(&key).arg(5).query(&mut con).unwrap();
        run(&mut con, &hit(module, &key, now)).unwrap();
    }
    let values: Vec<String> = redis::cmd("MGET")
        .arg("{s}:true")
        .arg("{s}:false")
        .query(&mut con)
        .unwrap();
    assert_eq!(
        values[0], values[1],
        "the TAT written in place differs from the script's"
    );
    assert_eq!(values[0], (now + 60_000_000).to_string());
    // A fencing counter with a TTL loses it, as the script's SET drops it.
    for module in [true, false] {
        let [lease, fence] = [":lock", ":fence"].map(|end| format!("{{c{module}}}{end}"));
        let _: () = redis::cmd("SET")
            .arg(&fence)
            .arg(7)
            .arg("PX")
            .arg(100_000)
            .query(&mut con)
            .unwrap();
        run(
            &mut con,
            &lock_call(
                module,
                "lock_acquire",
                &[&lease, &fence],
                &["owner-a", "60000000", "0", ""],
            ),
        )
        .unwrap();
        let pttl: i64 = redis::cmd("PTTL").arg(&fence).query(&mut con).unwrap();
        assert_eq!(pttl, -1, "module {module}: the fencing counter kept a TTL");
    }
}
