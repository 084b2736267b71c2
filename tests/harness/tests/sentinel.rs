//! ratelock through Redis Sentinel (1 master, 1 replica, 3 sentinels, started by the harness): limits
//! and locks on the master the sentinels name, connections the master closed while idle, and hits that
//! resume within 2 s of the replica's promotion after the master is stopped (or frozen) in the middle of
//! a stream of hits and lock grants (double grants counted, each exposed by its fencing token), and
//! lock waiters woken by the promoted master.

use std::time::{Duration, Instant};

use ratelock::{DistributedLock, Limiter, LimiterOptions, LockOptions, Rules, Store, StoreOptions};
use ratelock_testkit::failover::{GrantStream, HitStream};
use ratelock_testkit::RedisSentinels;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_and_locks_work_through_the_sentinels() {
    let setup = RedisSentinels::start();
    let store = Store::connect(&setup.url(), &StoreOptions::default())
        .await
        .unwrap();
    let limiter = Limiter::with_store(store.clone(), LimiterOptions::default()).unwrap();
    let rules: Rules = "2/minute".parse().unwrap();
    assert!(limiter.hit("k", &rules, 1).await.unwrap().allowed);
    assert!(limiter.hit("k", &rules, 1).await.unwrap().allowed);
    assert!(!limiter.hit("k", &rules, 1).await.unwrap().allowed);
    let lock = DistributedLock::new(&store, "job", LockOptions::default()).unwrap();
    let guard = lock.try_acquire().await.unwrap().expect("free lock");
    assert!(lock.is_locked().await.unwrap());
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_master_closed_while_idle_fail_no_call() {
    let mut setup = RedisSentinels::start();
    let limiter = Limiter::connect(&setup.url()).await.unwrap();
    let rules: Rules = "10/minute using fixed_window".parse().unwrap();
    let keys: Vec<String> = (0..5).map(|n| format!("idle:{n}")).collect();
    for key in &keys {
        limiter.hit(key, &rules, 1).await.unwrap();
    }
    for round in 1..=3u64 {
        // The master closes every client connection (as a server `timeout` or an idle-closing proxy does).
        setup.master().kill_clients();
        tokio::time::sleep(Duration::from_millis(50)).await;
        for key in &keys {
            let decision = limiter.hit(key, &rules, 1).await;
            // Each hit counted once: nothing failed, nothing was sent twice.
            assert_eq!(decision.unwrap().remaining, 9 - round, "round {round}, {key}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hits_resume_within_two_seconds_of_the_promotion() {
    let mut setup = RedisSentinels::start();
    let mut options = LimiterOptions::default();
    options.store.timeout = Duration::from_millis(300);
    let limiter = Limiter::connect_with(&setup.url(), options).await.unwrap();
    let stream = HitStream::start(&limiter, 1);
    let grants = GrantStream::start(limiter.store(), 4, 2);
    tokio::time::sleep(Duration::from_millis(300)).await;

    let replica_port = setup.replica().port();
    setup.master().stop();
    let deadline = Instant::now() + Duration::from_secs(30);
    let promoted_at = loop {
        if setup.named_master_port() == Some(replica_port) {
            break Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "the sentinels did not promote the replica"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Past a stranded lease's end (see `GrantStream::assert_recovered`), so late waits are seen.
    tokio::time::sleep(Duration::from_secs(5)).await;
    stream.assert_recovered(promoted_at, "sentinel failover").await;
    grants.assert_recovered(promoted_at, "sentinel failover").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hits_resume_after_the_promotion_when_the_old_master_is_frozen_not_gone() {
    let mut setup = RedisSentinels::start();
    let mut options = LimiterOptions::default();
    options.store.timeout = Duration::from_millis(300);
    let limiter = Limiter::connect_with(&setup.url(), options).await.unwrap();
    let stream = HitStream::start(&limiter, 1);
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A frozen master still accepts connections (the kernel completes them); only its calls time out.
    let replica_port = setup.replica().port();
    setup.master().pause();
    let deadline = Instant::now() + Duration::from_secs(30);
    let promoted_at = loop {
        if setup.named_master_port() == Some(replica_port) {
            break Instant::now();
        }
        if Instant::now() > deadline {
            setup.master().resume();
            panic!("the sentinels did not promote the replica");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    tokio::time::sleep(Duration::from_secs(3)).await;
    setup.master().resume();
    stream
        .assert_recovered(promoted_at, "sentinel failover from a frozen master")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_waiters_are_woken_by_the_promoted_master() {
    let mut setup = RedisSentinels::start();
    let store = Store::connect(&setup.url(), &StoreOptions::default())
        .await
        .unwrap();
    let lock = |name: &str| DistributedLock::new(&store, name, LockOptions::default()).unwrap();
    // One wait before the failover, so the subscriber's connection is open on the old master.
    let before = lock("before").acquire(Duration::from_secs(5)).await.unwrap();
    let waiting = tokio::spawn({
        let other = lock("before");
        async move { other.acquire(Duration::from_secs(5)).await.map(drop) }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    before.release().await.unwrap();
    waiting.await.unwrap().unwrap();

    let replica_port = setup.replica().port();
    setup.master().stop();
    let deadline = Instant::now() + Duration::from_secs(30);
    while setup.named_master_port() != Some(replica_port) {
        assert!(
            Instant::now() < deadline,
            "the sentinels did not promote the replica"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The holder's lease (30 s, renewed) outlasts the waiter's 5 s: only a wake-up can grant it in time.
    let holder = loop {
        match lock("after").try_acquire().await {
            Ok(Some(guard)) => break guard,
            _ => {
                assert!(Instant::now() < deadline, "the promoted master never took a lock");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    let waiter = tokio::spawn({
        let other = lock("after");
        async move {
            other
                .acquire(Duration::from_secs(5))
                .await
                .map(|_| Instant::now())
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let released = Instant::now();
    holder.release().await.unwrap();
    let granted = waiter
        .await
        .unwrap()
        .expect("woken by the release on the promoted master");
    assert!(
        granted - released < Duration::from_secs(2),
        "woken after {:?}",
        granted - released
    );
}
