//! Locks across OS processes on one Redis: mutual exclusion with rising fencing tokens under heavy
//! contention, and a holder frozen past its lease (SIGSTOP) that learns it lost the lock on waking.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ratelock::{DistributedLock, LockOptions, Store, StoreOptions};
use ratelock_testkit::RedisServer;

const PROCESSES: usize = 4;
const TASKS: usize = 8;
const GRANTS: usize = 2_000;

#[test]
fn processes_never_hold_the_lock_together_and_tokens_rise() {
    let server = RedisServer::start();
    let rounds = GRANTS.div_ceil(PROCESSES * TASKS);
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_lock_worker"))
                .args([
                    "contend",
                    &server.url(),
                    "shared-resource",
                    &TASKS.to_string(),
                    &rounds.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .expect("start a lock worker")
        })
        .collect();
    let mut holds: Vec<(u64, u64, u64)> = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "a lock worker failed");
        for line in String::from_utf8(output.stdout).unwrap().lines() {
            let numbers: Vec<u64> = line.split(' ').map(|n| n.parse().unwrap()).collect();
            holds.push((numbers[0], numbers[1], numbers[2]));
        }
    }
    assert_eq!(holds.len(), rounds * PROCESSES * TASKS);
    holds.sort_by_key(|&(_, entered, _)| entered);
    for pair in holds.windows(2) {
        let ((fence_a, _, left_a), (fence_b, entered_b, _)) = (pair[0], pair[1]);
        assert!(
            entered_b >= left_a,
            "two holders at once: {:?} and {:?}",
            pair[0],
            pair[1]
        );
        assert!(fence_b > fence_a, "tokens did not rise: {fence_a} then {fence_b}");
    }
}

#[tokio::test]
async fn a_frozen_holder_learns_on_waking_that_it_lost_the_lock() {
    let server = RedisServer::start();
    let mut worker = Command::new(env!("CARGO_BIN_EXE_lock_worker"))
        .args(["pause", &server.url(), "frozen", "600"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the lock worker");
    let mut lines = BufReader::new(worker.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let frozen_token: u64 = first.strip_prefix("acquired ").expect(&first).parse().unwrap();

    let signal = |name: &str| {
        let status = Command::new("kill")
            .args([name, &worker.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    signal("-STOP");
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let lock = DistributedLock::new(&store, "frozen", LockOptions::default()).unwrap();
    let started = Instant::now();
    let guard = lock
        .acquire(Duration::from_secs(5))
        .await
        .expect("the frozen lease runs out");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "taken before the frozen lease ended"
    );
    assert!(guard.fencing_token() > frozen_token);
    tokio::time::sleep(Duration::from_millis(300)).await;
    signal("-CONT");

    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert_eq!(
        rest,
        ["lost", "release HeldByOther"],
        "the woken holder must be told and change nothing"
    );
    assert!(worker.wait().unwrap().success());
    assert_eq!(lock.fencing_token().await.unwrap(), Some(guard.fencing_token()));
    guard.release().await.unwrap();
}
