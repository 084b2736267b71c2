//! A guard dropped without `release()` still gives its hold back on Redis: where no runtime is current
//! (a plain thread), on the runtime the hold was taken on; and through an outage, by trying again until
//! the lease would have run out anyway.

use std::time::{Duration, Instant};

use ratelock::{DistributedLock, LockOptions, Store, StoreOptions};
use ratelock_testkit::fault::{Fault, FaultProxy};
use ratelock_testkit::RedisServer;

/// Long enough that a lock still taken when the check ends was never given back.
const TTL: Duration = Duration::from_secs(20);
const CHECK_FOR: Duration = Duration::from_secs(3);

/// Polls `lock` until it is free, for at most `CHECK_FOR`; whether it became free.
async fn freed(lock: &DistributedLock) -> bool {
    let until = Instant::now() + CHECK_FOR;
    while Instant::now() < until {
        if !lock.is_locked().await.unwrap() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[test]
fn a_guard_dropped_outside_any_runtime_is_released_on_the_one_it_was_taken_on() {
    let server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (lock, guard) = runtime.block_on(async {
        let store = Store::connect(&server.url(), &StoreOptions::default())
            .await
            .unwrap();
        let lock =
            DistributedLock::new(&store, "dropped:outside", LockOptions::default().with_ttl(TTL)).unwrap();
        let guard = lock.try_acquire().await.unwrap().expect("free");
        (lock, guard)
    });
    std::thread::spawn(move || drop(guard)).join().unwrap();
    assert!(
        runtime.block_on(freed(&lock)),
        "the dropped guard's lock is still taken"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_dropped_during_an_outage_is_released_once_the_store_answers() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 7);
    let options = StoreOptions::default().with_timeout(Duration::from_millis(100));
    let through = Store::connect(&proxy.url(0), &options).await.unwrap();
    let lock =
        DistributedLock::new(&through, "dropped:outage", LockOptions::default().with_ttl(TTL)).unwrap();
    let guard = lock.try_acquire().await.unwrap().expect("free");

    proxy.set(
        0,
        Fault {
            partitioned: true,
            ..Fault::default()
        },
    );
    drop(guard);
    // The first release times out; the held bytes are then thrown away with the connection.
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.cut(0);
    proxy.set(0, Fault::default());

    let direct = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let seen = DistributedLock::new(&direct, "dropped:outage", LockOptions::default()).unwrap();
    assert!(freed(&seen).await, "the dropped guard's lock is still taken");
}
