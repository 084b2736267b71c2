//! What the module's writes through the key API look like from outside, next to the scripts':
//! - a key is signalled as modified (WATCH) only when a call changed it: a denied hit or a refused
//!   release leaves a WATCH alone, as the scripts (which then write nothing) do, and a granted one
//!   ends it;
//! - a string written in place (a GCRA TAT, the fencing counter) reads back as `SET` would leave it,
//!   whatever it held before, and `SET`'s dropping of a TTL is kept for the counter.

mod common;

use common::{acquire_token, connect, run, script_or_module, start_server, wall_us};
use redis::{Connection, Value};

/// `RATELOCK.LIMIT` (or `limit.lua`, by EVAL) of one GCRA rule, 1 per minute, at `now`, that bans
/// the key for `block_us` when it denies (0: never), with the key's entry at [`entry_of`].
fn hit_blocking(module: bool, key: &str, now: u64, block_us: u64) -> redis::Cmd {
    let (now, block) = (now.to_string(), block_us.to_string());
    script_or_module(
        module,
        "limit",
        &[key, &entry_of(key)],
        &["hit", &now, "1", "g", "1", "60000000", "1", &block],
    )
}

/// [`hit_blocking`] of a rule that bans nobody.
fn hit(module: bool, key: &str, now: u64) -> redis::Cmd {
    hit_blocking(module, key, now, 0)
}

/// The entry key (ban or list entry) beside the rule key `key`, in its hash slot.
fn entry_of(key: &str) -> String {
    format!("{key}:standing")
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
fn a_ban_ends_a_watch_on_the_entry_only_when_written_as_the_script_does() {
    let server = start_server();
    let (mut watcher, mut other) = (connect(&server), connect(&server));
    for module in [true, false] {
        let key = format!("{{b}}:{module}");
        let entry = entry_of(&key);
        let now = wall_us();
        // A granted hit writes the rule's state only; a denied hit of a rule that blocks writes the ban.
        let granted = watch_survives(
            &mut watcher,
            &mut other,
            &entry,
            &hit_blocking(module, &key, now, 5_000_000),
        );
        let banned = watch_survives(
            &mut watcher,
            &mut other,
            &entry,
            &hit_blocking(module, &key, now + 1, 5_000_000),
        );
        // While the ban lasts, a hit reads it and writes nothing.
        let during = watch_survives(
            &mut watcher,
            &mut other,
            &entry,
            &hit_blocking(module, &key, now + 2, 5_000_000),
        );
        assert_eq!(
            (granted, banned, during),
            (true, false, true),
            "module {module}: only the hit that starts a ban may end a WATCH on the entry"
        );
        let ban: String = redis::cmd("GET").arg(&entry).query(&mut other).unwrap();
        assert_eq!(ban, format!("b{}", now + 1 + 5_000_000), "module {module}");
    }
}

#[test]
fn a_release_ends_a_watch_only_when_it_releases_as_the_script_does() {
    let server = start_server();
    let (mut watcher, mut other) = (connect(&server), connect(&server));
    for module in [true, false] {
        let [lease, fence, channel] =
            [":lock", ":fence", ":released"].map(|end| format!("{{l{module}}}{end}"));
        let token = acquire_token(&mut other, module, &lease, &fence, "owner-a").to_string();
        let refused = script_or_module(module, "lock_release", &[&lease], &["owner-b", &channel, &token]);
        let released = script_or_module(module, "lock_release", &[&lease], &["owner-a", &channel, &token]);
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
        acquire_token(&mut con, module, &lease, &fence, "owner-a");
        let pttl: i64 = redis::cmd("PTTL").arg(&fence).query(&mut con).unwrap();
        assert_eq!(pttl, -1, "module {module}: the fencing counter kept a TTL");
    }
}

#[test]
fn a_key_named_twice_in_one_call_ends_as_the_script_leaves_it() {
    let server = start_server();
    let mut con = connect(&server);
    let now = wall_us();
    // Two rules on one key (periods of 1 s and 2 s), each of one algorithm: GCRA (a string) and fixed_window (a hash, written
    // field by field), and a sliding log (trimmed, then added to, twice per call).
    for (code, limit, burst) in [("g", "3", "5"), ("fw", "4", "4"), ("sl", "3", "3")] {
        let mut replies = Vec::new();
        let mut snapshots = Vec::new();
        for module in [true, false] {
            let key = format!("{{twice}}:{code}:{module}");
            let mut answers = Vec::new();
            for step in 0..6u64 {
                let at = (now + step * 400_000).to_string();
                let args = [
                    "hit", &at, "1", code, limit, "1000000", burst, "0", code, "2", "2000000", "2", "0",
                ];
                answers.push(run(
                    &mut con,
                    &script_or_module(module, "limit", &[&key, &key, &entry_of(&key)], &args),
                ));
            }
            replies.push(answers);
            snapshots.push(common::key_snapshot(&mut con, &key));
        }
        assert_eq!(
            replies[0], replies[1],
            "{code}: the module's replies differ from the script's"
        );
        assert!(
            snapshots[0].agrees_with(&snapshots[1]),
            "{code}: module {:?}, script {:?}",
            snapshots[0],
            snapshots[1]
        );
    }
}
