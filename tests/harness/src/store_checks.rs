//! Checks a test runs against a store however it is deployed: that it serves limits, locks and a lock
//! waiter's wake-up (the subscriber's own connection).

use std::time::{Duration, Instant};

use ratelock::{DistributedLock, Limiter, LimiterOptions, LockOptions, Rules, Store, StoreOptions};

/// Hits, a lock and a waiter woken by its release, through `url` (on keys named after `setup`).
pub async fn serves_limits_and_locks(url: &str, options: &StoreOptions, setup: &str) {
    let store = Store::connect(url, options).await.unwrap();
    let limiter = Limiter::with_store(store.clone(), LimiterOptions::default()).unwrap();
    let rules: Rules = "2/minute".parse().unwrap();
    for allowed in [true, true, false] {
        let decision = limiter.hit(setup, &rules, 1).await;
        assert!(
            decision.as_ref().is_ok_and(|d| d.allowed == allowed),
            "{setup}: {decision:?}"
        );
    }
    let lock = |name: &str| DistributedLock::new(&store, name, LockOptions::default()).unwrap();
    let holder = lock(setup).try_acquire().await.unwrap().expect("a free lock");
    let waiter = tokio::spawn({
        let other = lock(setup);
        async move {
            other
                .acquire(Duration::from_secs(10))
                .await
                .map(|_| Instant::now())
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    holder.release().await.unwrap();
    let granted = waiter.await.unwrap();
    // The holder's lease (30 s) outlasts the wait: only the release's message wakes the waiter in time.
    assert!(
        granted
            .as_ref()
            .is_ok_and(|at| *at - released < Duration::from_secs(2)),
        "{setup}: the waiter was not woken by the release: {granted:?}"
    );
}
