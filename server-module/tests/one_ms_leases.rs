//! A lease of one ms (any lease under 1,000 µs, which PEXPIRE rounds up to 1 ms) still gets a whole
//! reply, from the scripts and from the module.
//!
//! Redis 7.0's PEXPIRE reads the clock twice: once to add the ms, once to ask whether that moment has
//! passed. When a ms boundary falls between the two readings, it deletes the key at once. A script that
//! read its key after its PEXPIRE then found nothing: a re-entered lock answered `{1}` without its
//! fencing token and hold count, a semaphore counted 0 permits in use. Such a crossing happens about
//! once in 10,000 calls here, so each case runs many calls, pipelined, bounded in count and in time.

use std::time::{Duration, Instant};

use redis::{Connection, Value};

mod common;

use common::{connect, lua_script, start_server};

/// Calls per case and per path, and the time each path may take at most.
const CALLS: usize = 60_000;
const BATCH: usize = 500;
const TIME_LIMIT: Duration = Duration::from_secs(10);

/// Loads script `name` and answers the (command, first argument) that runs it on each path.
fn paths(con: &mut Connection, name: &str) -> [(String, Option<String>); 2] {
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(lua_script(name))
        .query(con)
        .unwrap();
    [
        ("EVALSHA".to_string(), Some(sha)),
        (format!("RATELOCK.{}", name.to_uppercase()), None),
    ]
}

/// Runs `batch` of (keys, args) calls to `path` in one pipeline and answers the replies.
fn pipelined(
    con: &mut Connection,
    path: &(String, Option<String>),
    calls: &[(Vec<String>, Vec<String>)],
) -> Vec<Value> {
    let mut pipe = redis::pipe();
    for (keys, args) in calls {
        let cmd = pipe.cmd(&path.0);
        if let Some(sha) = &path.1 {
            cmd.arg(sha);
        }
        cmd.arg(keys.len()).arg(keys).arg(args);
    }
    pipe.query(con).unwrap()
}

/// The calls of batch `first..first + BATCH` (the same count of calls per index, in index order).
type Batch = Vec<(Vec<String>, Vec<String>)>;

/// Sends `script`'s calls through each path in pipelined batches (`batch(first)` makes one batch),
/// until CALLS or the time limit, handing each batch's replies to `check` with the path's command and
/// the batch's first index.
fn in_batches(script: &str, batch: impl Fn(usize) -> Batch, mut check: impl FnMut(&str, usize, Vec<Value>)) {
    let server = start_server();
    let mut con = connect(&server);
    for path in paths(&mut con, script) {
        let started = Instant::now();
        let mut done = 0;
        while done < CALLS && started.elapsed() < TIME_LIMIT {
            check(&path.0, done, pipelined(&mut con, &path, &batch(done)));
            done += BATCH;
        }
        assert!(done >= BATCH, "{}: no call ran", path.0);
    }
}

#[test]
fn a_re_entered_lock_of_one_ms_answers_its_token_and_holds() {
    // Each lock is taken for a minute, then re-entered for 500 µs.
    let batch = |first: usize| -> Batch {
        let mut calls = Vec::with_capacity(BATCH * 2);
        for i in first..first + BATCH {
            let keys = vec![format!("{{l{i}}}:lock"), format!("{{l{i}}}:fence")];
            let taken = vec!["o".into(), "60000000".into(), "1".into(), String::new()];
            calls.push((keys.clone(), taken));
            calls.push((keys, vec!["o".into(), "500".into(), "1".into(), String::new()]));
        }
        calls
    };
    in_batches("lock_acquire", batch, |path, first, replies| {
        for (i, pair) in replies.chunks(2).enumerate() {
            let Value::Array(granted) = &pair[0] else {
                panic!("{path}: acquire answered {:?}", pair[0])
            };
            let reentered = Value::Array(vec![Value::Int(1), granted[1].clone(), Value::Int(2)]);
            assert_eq!(pair[1], reentered, "{path}: the re-entry of lock {}", first + i);
        }
    });
}

#[test]
fn a_semaphore_permit_of_one_ms_counts_the_permits_in_use() {
    // Each semaphore's one permit, of 500 µs, on the server's clock.
    let batch = |first: usize| -> Batch {
        (first..first + BATCH)
            .map(|i| {
                let keys = vec![format!("{{s{i}}}:permits")];
                (keys, vec!["p".into(), "2".into(), "500".into(), String::new()])
            })
            .collect()
    };
    in_batches("semaphore_acquire", batch, |path, first, replies| {
        for (i, reply) in replies.into_iter().enumerate() {
            let granted = Value::Array(vec![Value::Int(1), Value::Int(1)]);
            assert_eq!(reply, granted, "{path}: semaphore {}", first + i);
        }
    });
}
