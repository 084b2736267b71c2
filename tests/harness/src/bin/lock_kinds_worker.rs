//! Worker for the fair and read-write lock tests across processes.
//! `lock_kinds_worker hold <url> <name> <fair|read|write> <hold ms> <waiter ttl ms>`: waits for one hold,
//! prints `granted <fencing token> <µs entered>`, holds it, releases, prints `left <µs>`.
//! `lock_kinds_worker contend <url> <name> <tasks> <rounds>`: tasks take read holds (three in four) and
//! write holds on one read-write lock and print every hold as `<r|w> <token> <µs entered> <µs left>`.

use std::io::Write;
use std::time::Duration;

use ratelock::clock::now_us;
use ratelock::{FairLock, LockOptions, ReadWriteLock, Store, StoreOptions};

const WAIT: Duration = Duration::from_secs(60);

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = Store::connect(&args[2], &StoreOptions::default())
        .await
        .expect("connect");
    match args[1].as_str() {
        "hold" => {
            let waiter_ttl = Duration::from_millis(args[6].parse().unwrap());
            let options = LockOptions::default().with_waiter_ttl(waiter_ttl);
            hold(store, &args[3], &args[4], args[5].parse().unwrap(), options).await
        }
        "contend" => {
            contend(
                store,
                &args[3],
                args[4].parse().unwrap(),
                args[5].parse().unwrap(),
            )
            .await
        }
        other => panic!("unknown mode {other}"),
    }
}

async fn hold(store: Store, name: &str, kind: &str, hold_ms: u64, options: LockOptions) {
    let guard = match kind {
        "fair" => FairLock::new(&store, name, options).unwrap().acquire(WAIT).await,
        "read" => {
            ReadWriteLock::new(&store, name, options)
                .unwrap()
                .acquire_read(WAIT)
                .await
        }
        "write" => {
            ReadWriteLock::new(&store, name, options)
                .unwrap()
                .acquire_write(WAIT)
                .await
        }
        other => panic!("unknown lock kind {other}"),
    }
    .expect("acquire");
    say(&format!("granted {} {}", guard.fencing_token(), now_us()));
    tokio::time::sleep(Duration::from_millis(hold_ms)).await;
    let left = now_us();
    assert_eq!(
        guard.release().await.expect("release"),
        ratelock::Released::Released,
        "the hold was lost"
    );
    say(&format!("left {left}"));
}

async fn contend(store: Store, name: &str, tasks: usize, rounds: usize) {
    let mut handles = Vec::new();
    for task in 0..tasks {
        let lock = ReadWriteLock::new(&store, name, LockOptions::default()).unwrap();
        handles.push(tokio::spawn(async move {
            let mut holds = Vec::with_capacity(rounds);
            for round in 0..rounds {
                let write = (task + round) % 4 == 0;
                let guard = if write {
                    lock.acquire_write(WAIT).await
                } else {
                    lock.acquire_read(WAIT).await
                }
                .expect("acquire");
                let entered = now_us();
                tokio::time::sleep(Duration::from_micros(300)).await;
                let left = now_us();
                holds.push((
                    if write { 'w' } else { 'r' },
                    guard.fencing_token(),
                    entered,
                    left,
                ));
                assert_eq!(
                    guard.release().await.expect("release"),
                    ratelock::Released::Released,
                    "a hold was lost"
                );
            }
            holds
        }));
    }
    let mut out = String::new();
    for handle in handles {
        for (mode, fence, entered, left) in handle.await.unwrap() {
            out += &format!("{mode} {fence} {entered} {left}\n");
        }
    }
    say(out.trim_end());
}

fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}").unwrap();
    stdout.flush().unwrap();
}
