//! A release that fails on the way (the store could not be reached) keeps the hold, so the caller can
//! call it again, but the hold is no longer renewed: if nobody calls again, the lock frees itself when
//! its lease runs out, as a redis-py lock or a Redisson unlock that failed does. A hold renewed after a
//! failed release would stay taken for as long as its owner lives (a `with lock:` cannot call again).

use std::time::{Duration, Instant};

use ratelock::{DistributedLock, LockGuard, LockOptions, Released, Store, StoreOptions};
use ratelock_testkit::fault::{Fault, FaultProxy};
use ratelock_testkit::RedisServer;

const TTL: Duration = Duration::from_millis(900);

/// Polls `lock` until it is free, for at most `within`; how long that took.
async fn freed_within(lock: &DistributedLock, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < within {
        if !lock.is_locked().await.unwrap() {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// `guard.try_release()` again until the store answers (a breaker opened by the failure lets calls
/// through again within a few seconds), for at most 5 s.
async fn release_once_answered(guard: &mut LockGuard) -> ratelock::Result<Released> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        match guard.try_release().await {
            Err(err) if err.is_store_failure() && Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            answer => return answer,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_whose_release_failed_is_not_renewed_and_frees_itself_at_its_lease_end() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 11);
    let options = StoreOptions::default().with_timeout(Duration::from_millis(100));
    let through = Store::connect(&proxy.url(0), &options).await.unwrap();
    let lock =
        DistributedLock::new(&through, "failed:release", LockOptions::default().with_ttl(TTL)).unwrap();
    let mut guard = lock.try_acquire().await.unwrap().expect("free");

    proxy.set(
        0,
        Fault {
            partitioned: true,
            ..Fault::default()
        },
    );
    let failed = guard.try_release().await;
    assert!(
        matches!(failed, Err(ref err) if err.is_store_failure()),
        "the release met the partition: {failed:?}"
    );
    // The release's held bytes are thrown away with the connection: the server never ran it.
    proxy.cut(0);
    proxy.set(0, Fault::default());

    let direct = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let seen = DistributedLock::new(&direct, "failed:release", LockOptions::default()).unwrap();
    assert!(
        seen.is_locked().await.unwrap(),
        "still held right after the failed release"
    );
    let freed = freed_within(&seen, 4 * TTL).await;
    assert!(
        freed.is_some_and(|after| after <= TTL + Duration::from_millis(300)),
        "the hold was renewed after its release failed: still taken (freed after {freed:?})"
    );
    assert!(guard.is_lost(), "its lease ran out: the holder is told");
    // Calling release again is still allowed; once the store answers (the breaker the partition opened
    // lets calls through again), it finds nothing left to give back.
    let again = release_once_answered(&mut guard).await;
    assert_eq!(again.unwrap(), Released::NotHeld);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_that_ran_though_its_answer_was_lost_answers_released_when_called_again() {
    // The failed release advises calling again; the first one had reached the server (it was frozen,
    // and ran once it woke) and freed the lock, so the second found it gone and answered NotHeld: the
    // caller was told its lock had been lost while held (LockLost in Python and Node).
    let server = RedisServer::start();
    let options = StoreOptions::default().with_timeout(Duration::from_millis(200));
    let store = Store::connect(&server.url(), &options).await.unwrap();
    let lock = DistributedLock::new(
        &store,
        "unheard:release",
        LockOptions::default().with_ttl(Duration::from_secs(30)),
    )
    .unwrap();
    let mut guard = lock.try_acquire().await.unwrap().expect("free");
    server.pause();
    let failed = guard.try_release().await;
    server.resume();
    assert!(
        matches!(failed, Err(ref err) if err.is_timeout()),
        "the release met the frozen server: {failed:?}"
    );
    let again = release_once_answered(&mut guard).await;
    assert_eq!(again.unwrap(), Released::Released, "the first release freed it");
    assert!(!lock.is_locked().await.unwrap());
}
