//! Worker for the lock tests.
//! `lock_worker contend <url> <name> <tasks> <acquisitions per task>`: tasks take the lock in turn and
//! print every hold as `<fencing token> <µs entered> <µs left>`.
//! `lock_worker pause <url> <name> <ttl ms>`: takes the lock with auto-renew, prints `acquired <token>`,
//! then waits for the lost signal (the test stops this process past its lease) and prints `lost`
//! followed by `release <outcome>`.

use std::io::Write;
use std::time::Duration;

use ratelock::clock::now_us;
use ratelock::{DistributedLock, LockOptions, Store, StoreOptions};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = Store::connect(&args[2], &StoreOptions::default())
        .await
        .expect("connect");
    match args[1].as_str() {
        "contend" => {
            contend(
                store,
                &args[3],
                args[4].parse().unwrap(),
                args[5].parse().unwrap(),
            )
            .await
        }
        "pause" => pause(store, &args[3], args[4].parse().unwrap()).await,
        other => panic!("unknown mode {other}"),
    }
}

async fn contend(store: Store, name: &str, tasks: usize, rounds: usize) {
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let lock = DistributedLock::new(&store, name, LockOptions::default()).unwrap();
        handles.push(tokio::spawn(async move {
            let mut holds = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                let guard = lock.acquire(Duration::from_secs(60)).await.expect("acquire");
                let entered = now_us();
                tokio::task::yield_now().await;
                let left = now_us();
                holds.push((guard.fencing_token(), entered, left));
                guard.release().await.expect("release");
            }
            holds
        }));
    }
    let mut out = String::new();
    for handle in handles {
        for (fence, entered, left) in handle.await.unwrap() {
            out += &format!("{fence} {entered} {left}\n");
        }
    }
    print!("{out}");
}

async fn pause(store: Store, name: &str, ttl_ms: u64) {
    let mut options = LockOptions::default();
    options.ttl = Duration::from_millis(ttl_ms);
    let lock = DistributedLock::new(&store, name, options).unwrap();
    let guard = lock.try_acquire().await.unwrap().expect("the lock is free");
    println!("acquired {}", guard.fencing_token());
    std::io::stdout().flush().unwrap();
    let lost = tokio::time::timeout(Duration::from_secs(10), guard.lost())
        .await
        .is_ok();
    println!("{}", if lost { "lost" } else { "not lost" });
    println!("release {:?}", guard.release().await.unwrap());
}
