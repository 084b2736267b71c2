//! ratelock through Redis Sentinel (1 master, 1 replica, 3 sentinels, started by the harness): limits
//! and locks on the master the sentinels name, and hits that resume within 2 s of the replica's
//! promotion after the master is stopped in the middle of a stream of hits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratelock::{DistributedLock, Limiter, LimiterOptions, LockOptions, Rules, Store, StoreOptions};
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
async fn hits_resume_within_two_seconds_of_the_promotion() {
    let mut setup = RedisSentinels::start();
    let mut options = LimiterOptions::default();
    options.store.timeout = Duration::from_millis(300);
    let limiter = Limiter::connect_with(&setup.url(), options).await.unwrap();
    let rules: Rules = "1000000/second".parse().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let outcomes = Arc::new(std::sync::Mutex::new(Vec::<(Instant, bool)>::new()));
    let stream = {
        let (limiter, rules, stop, outcomes) =
            (limiter.clone(), rules.clone(), stop.clone(), outcomes.clone());
        tokio::spawn(async move {
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let ok = limiter.hit(format!("stream:{}", n % 64), &rules, 1).await.is_ok();
                outcomes.lock().unwrap().push((Instant::now(), ok));
                n += 1;
                if !ok {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        })
    };
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
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    tokio::time::timeout(Duration::from_secs(5), stream)
        .await
        .expect("the stream hung")
        .unwrap();

    let outcomes = outcomes.lock().unwrap().clone();
    let settled = promoted_at + Duration::from_secs(2);
    let late_failures = outcomes.iter().filter(|(at, ok)| !ok && *at > settled).count();
    assert_eq!(
        late_failures, 0,
        "hits still failed more than 2 s after the promotion"
    );
    let after = outcomes.iter().filter(|(at, ok)| *ok && *at > settled).count();
    assert!(after > 100, "only {after} hits succeeded after the failover");
    let last_failure = outcomes.iter().filter(|(_, ok)| !ok).map(|(at, _)| *at).max();
    println!(
        "sentinel failover: {} failed hits of {}, last failure {:?} after the promotion",
        outcomes.iter().filter(|(_, ok)| !ok).count(),
        outcomes.len(),
        last_failure.map(|last| last.saturating_duration_since(promoted_at))
    );
}
