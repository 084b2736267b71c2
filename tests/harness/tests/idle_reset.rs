//! An idle connection reset (RST, as a load balancer or a NAT that forgot the flow sends it) fails no
//! call: the next hit, peek and lock call find the reset before they are written and go out on a fresh
//! connection, with the counts exact (nothing that may have run is sent again). The FIN of a server's
//! close is in `connection_lifecycle.rs`; Python and Node run the same case through the fault proxy.

use std::time::Duration;

use ratelock::{DistributedLock, Limiter, LimiterOptions, LockOptions, Store, StoreOptions};
use ratelock_testkit::fault::FaultProxy;
use ratelock_testkit::RedisServer;

/// Long enough for the reset to reach the client's socket before the next call.
const SETTLE: Duration = Duration::from_millis(50);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_reset_fails_no_call() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 3);
    let store = Store::connect(&proxy.url(0), &StoreOptions::default())
        .await
        .unwrap();
    let limiter = Limiter::with_store(store.clone(), LimiterOptions::default()).unwrap();
    let rules = limiter.rules("20/minute").unwrap();
    let lock = DistributedLock::new(&store, "idle-reset", LockOptions::default()).unwrap();
    let mut admitted = 0;
    for round in 0..10 {
        admitted += u32::from(
            limiter
                .hit("idle-reset", &rules, 1)
                .await
                .expect("a hit after a reset")
                .allowed,
        );
        limiter
            .peek("idle-reset", &rules, 1)
            .await
            .expect("a peek after a reset");
        let guard = lock
            .try_acquire()
            .await
            .expect("a lock call after a reset")
            .unwrap_or_else(|| panic!("round {round}: the lock is free"));
        guard.release().await.expect("a release");
        tokio::time::sleep(SETTLE).await;
        proxy.cut(0);
        tokio::time::sleep(SETTLE).await;
    }
    assert_eq!(admitted, 10, "every hit counted once");
    let blocking = Limiter::with_store(store, LimiterOptions::default()).unwrap();
    for _ in 0..3 {
        let answer = tokio::task::spawn_blocking({
            let (blocking, rules) = (blocking.clone(), rules.clone());
            move || blocking.try_hit_blocking("idle-reset", &rules, 1, None)
        })
        .await
        .unwrap();
        if let Some(answer) = answer {
            answer.expect("a blocking hit after a reset");
        }
        tokio::time::sleep(SETTLE).await;
        proxy.cut(0);
        tokio::time::sleep(SETTLE).await;
    }
}
