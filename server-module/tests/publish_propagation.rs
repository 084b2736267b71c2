//! A release's "released" message travels as the script's PUBLISH does: to the replicas (which run it,
//! so their subscribers hear it), never into the AOF, with the AOF off or on (the module takes a
//! different road in each case, `src/publish.rs`).

mod common;

use std::thread::sleep;
use std::time::{Duration, Instant};

use common::{acquire_token, connect, module_path, run, script_or_module, spawn_server, start_replica};
use redis::{Connection, Value};

const RELEASES: usize = 3;

/// `RELEASES` acquire+release rounds of lock `name`, through the module or the scripts (EVAL).
fn take_and_give_back(con: &mut Connection, module: bool, name: &str) {
    let [lease, fence, channel] = [":lock", ":fence", ":released"].map(|end| format!("{{{name}}}{end}"));
    for _ in 0..RELEASES {
        let token = acquire_token(con, module, &lease, &fence, "me");
        let released = run(
            con,
            &script_or_module(
                module,
                "lock_release",
                &[&lease],
                &["me", &channel, &token.to_string()],
            ),
        )
        .unwrap();
        assert_eq!(released, Value::Array(vec![Value::Int(1), Value::Int(0)]));
    }
}

/// How many PUBLISH commands `con`'s server has run, waiting up to 5 s for `expected`.
fn publishes_seen(con: &mut Connection, expected: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let stats: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
        let calls = stats
            .lines()
            .find_map(|line| line.strip_prefix("cmdstat_publish:calls="))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |n| n.parse().unwrap());
        if calls >= expected || Instant::now() > deadline {
            return calls;
        }
        sleep(Duration::from_millis(20));
    }
}

/// The text of every append-only file under `dir`.
fn aof_text(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir.join("appendonlydir")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        text.push_str(&String::from_utf8_lossy(&bytes));
    }
    text
}

#[test]
fn releases_reach_replicas_as_publish_and_stay_out_of_the_aof_like_the_scripts() {
    for aof in [false, true] {
        let mut seen = Vec::new();
        for module in [true, false] {
            let dir = std::env::temp_dir().join(format!(
                "ratelock-module-publish-{}-{aof}-{module}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let master = spawn_server(&mut vec![
                "--loadmodule".into(),
                module_path().display().to_string(),
                "--dir".into(),
                dir.display().to_string(),
                "--appendonly".into(),
                if aof { "yes" } else { "no" }.into(),
                "--appendfsync".into(),
                "always".into(),
                "--repl-diskless-sync-delay".into(),
                "0".into(),
            ]);
            let (_replica, mut replica_con) = start_replica(&master);
            let mut con = connect(&master);
            take_and_give_back(&mut con, module, "p");
            let on_replica = publishes_seen(&mut replica_con, RELEASES);
            let in_aof = if aof {
                let text = aof_text(&dir);
                assert!(
                    text.contains("HSET") || text.contains("hset"),
                    "no lock write in the AOF"
                );
                text.matches("PUBLISH").count() + text.matches("publish").count()
            } else {
                0
            };
            seen.push((on_replica, in_aof));
            drop(con);
            drop(master);
            let _ = std::fs::remove_dir_all(&dir);
        }
        assert_eq!(
            seen[0], seen[1],
            "aof {aof}: (replica PUBLISHes, AOF PUBLISHes) of module, script"
        );
        assert_eq!(
            seen[0].0, RELEASES,
            "aof {aof}: the replica ran every release's PUBLISH"
        );
    }
}
