//! Semaphore and ConcurrencyLimiter on both stores: N permits at most, expired permits reclaimed by the
//! store's clock, waiting woken by releases, renewal that keeps a permit, and loss that is reported.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratelock::{ConcurrencyLimiter, LockOptions, Semaphore};
use ratelock_testkit::stores::{lease_options, on_both_stores};

#[tokio::test]
async fn never_more_than_n_permits_and_a_release_frees_one() {
    on_both_stores(async |store| {
        let pool = Semaphore::new(&store, "pool", 3, LockOptions::default()).unwrap();
        let other_handle = Semaphore::new(&store, "pool", 3, LockOptions::default()).unwrap();
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(pool.try_acquire().await.unwrap().expect("a free permit"));
        }
        assert!(pool.try_acquire().await.unwrap().is_none());
        assert!(other_handle.try_acquire().await.unwrap().is_none());
        assert_eq!(pool.in_use().await.unwrap(), 3);
        assert_eq!(
            held.pop().unwrap().release().await.unwrap(),
            ratelock::Released::Released
        );
        let again = other_handle
            .try_acquire()
            .await
            .unwrap()
            .expect("freed by the release");
        assert_eq!(again.release().await.unwrap(), ratelock::Released::Released);
        for guard in held {
            assert_eq!(guard.release().await.unwrap(), ratelock::Released::Released);
        }
        assert_eq!(pool.in_use().await.unwrap(), 0);
    })
    .await;
}

#[tokio::test]
async fn an_abandoned_permit_is_reclaimed_when_its_lease_ends() {
    on_both_stores(async |store| {
        let crashed = Semaphore::new(&store, "single", 1, lease_options(100, false, false)).unwrap();
        let next = Semaphore::new(&store, "single", 1, LockOptions::default()).unwrap();
        let stale = crashed.try_acquire().await.unwrap().unwrap();
        assert!(next.try_acquire().await.unwrap().is_none());
        tokio::time::sleep(Duration::from_millis(150)).await;
        let fresh = next
            .try_acquire()
            .await
            .unwrap()
            .expect("the expired permit was reclaimed");
        assert!(stale.is_lost());
        assert_eq!(
            stale.extend(Duration::from_secs(5)).await.unwrap(),
            ratelock::Extended::Expired,
            "an expired permit never comes back"
        );
        assert_eq!(
            stale.release().await.unwrap(),
            ratelock::Released::NotHeld,
            "releasing a lost permit changes nothing"
        );
        assert_eq!(next.in_use().await.unwrap(), 1);
        assert_eq!(fresh.release().await.unwrap(), ratelock::Released::Released);
    })
    .await;
}

#[tokio::test]
async fn a_renewed_permit_outlives_its_ttl() {
    on_both_stores(async |store| {
        let pool = Semaphore::new(&store, "renewed", 1, lease_options(300, true, false)).unwrap();
        let guard = pool.try_acquire().await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        assert!(!guard.is_lost());
        assert!(
            pool.try_acquire().await.unwrap().is_none(),
            "the renewed permit lapsed"
        );
        assert_eq!(guard.release().await.unwrap(), ratelock::Released::Released);
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(pool.in_use().await.unwrap(), 0, "a renewal outlived the release");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_share_n_permits_woken_by_releases() {
    on_both_stores(async |store| {
        let in_use = Arc::new(AtomicU64::new(0));
        let most = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..12 {
            let (store, in_use, most) = (store.clone(), in_use.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                // A 10 s lease: only release messages can explain a quick turnover.
                let pool = Semaphore::new(&store, "workers", 3, lease_options(10_000, true, false)).unwrap();
                let guard = pool
                    .acquire(Duration::from_secs(20))
                    .await
                    .expect("a permit in time");
                let now = in_use.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                in_use.fetch_sub(1, Ordering::SeqCst);
                assert_eq!(guard.release().await.unwrap(), ratelock::Released::Released);
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 3);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "waiters were not woken: {:?}",
            started.elapsed()
        );
        let timed_out = {
            let pool = Semaphore::new(&store, "workers", 1, LockOptions::default()).unwrap();
            let _held = pool.try_acquire().await.unwrap().unwrap();
            pool.acquire(Duration::from_millis(100)).await.unwrap_err()
        };
        assert!(timed_out.is_wait_timeout());
    })
    .await;
}

#[tokio::test]
async fn the_concurrency_limiter_counts_in_flight_requests_per_key() {
    on_both_stores(async |store| {
        let limiter = ConcurrencyLimiter::new(&store, 2, LockOptions::default()).unwrap();
        let a1 = limiter.try_acquire("tenant:a").await.unwrap().unwrap();
        let a2 = limiter.try_acquire("tenant:a").await.unwrap().unwrap();
        assert!(limiter.try_acquire("tenant:a").await.unwrap().is_none());
        let b1 = limiter.try_acquire("tenant:b").await.unwrap().unwrap();
        assert_eq!(limiter.in_flight("tenant:a").await.unwrap(), 2);
        assert_eq!(limiter.in_flight("tenant:b").await.unwrap(), 1);
        assert_eq!(a1.release().await.unwrap(), ratelock::Released::Released);
        let a3 = limiter.try_acquire("tenant:a").await.unwrap().unwrap();
        for guard in [a2, a3, b1] {
            assert_eq!(guard.release().await.unwrap(), ratelock::Released::Released);
        }
        assert!(ConcurrencyLimiter::new(&store, 0, LockOptions::default())
            .unwrap_err()
            .is_invalid_argument());
    })
    .await;
}
