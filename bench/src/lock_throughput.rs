//! Uncontended lock acquire+release pairs per second of the Rust client: tokio tasks sharing one
//! `Store` (one multiplexed connection), each taking and giving back its own lock in a loop.

use std::time::Instant;

use ratelock::{DistributedLock, LockOptions, Released, Store};

use crate::client_throughput::Window;

/// What one measurement counted: pairs per second, and pairs that did not go as expected.
pub struct PairRate {
    pub per_second: f64,
    /// `try_acquire` found the lock held, or `release` did not report `Released`.
    pub surprises: u64,
}

/// Options of every bench lock: the default lease, no watchdog renewals.
pub fn options() -> LockOptions {
    let mut options = LockOptions::default();
    options.auto_renew = false;
    options
}

/// Pairs per second of `names.len()` tasks, task `i` on lock `names[i]`, all through `store`.
pub async fn pairs_per_second(store: &Store, names: &[String], window: Window) -> PairRate {
    let locks: Vec<DistributedLock> = names
        .iter()
        .map(|name| DistributedLock::new(store, name, options()).expect("bench lock options"))
        .collect();
    run_tasks(&locks, Instant::now() + window.warm_up).await;
    let started = Instant::now();
    let (pairs, surprises) = run_tasks(&locks, started + window.measure).await;
    PairRate {
        per_second: pairs as f64 / started.elapsed().as_secs_f64(),
        surprises,
    }
}

async fn run_tasks(locks: &[DistributedLock], deadline: Instant) -> (u64, u64) {
    let handles: Vec<_> = locks
        .iter()
        .map(|lock| tokio::spawn(pairs_until(lock.clone(), deadline)))
        .collect();
    let (mut pairs, mut surprises) = (0, 0);
    for handle in handles {
        let (done, odd) = handle.await.expect("a lock benchmark task panicked");
        pairs += done;
        surprises += odd;
    }
    (pairs, surprises)
}

/// Acquire+release pairs until `deadline`; returns (pairs done, surprises).
async fn pairs_until(lock: DistributedLock, deadline: Instant) -> (u64, u64) {
    let (mut pairs, mut surprises) = (0, 0);
    while Instant::now() < deadline {
        let guard = lock
            .try_acquire()
            .await
            .expect("try_acquire on the bench redis-server");
        match guard {
            Some(guard) => {
                let released = guard.release().await.expect("release on the bench redis-server");
                surprises += u64::from(released != Released::Released);
                pairs += 1;
            }
            None => surprises += 1,
        }
    }
    (pairs, surprises)
}
