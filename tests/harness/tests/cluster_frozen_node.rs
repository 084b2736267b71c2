//! A call to a frozen Redis Cluster node times out once and is never sent again (redis-rs's routing
//! retries what its connections report as I/O timeouts; ratelock's node connection reports a call that
//! may have run as an error it does not retry). In its own test binary: the cluster node connections'
//! deadline is the shortest timeout of the process's cluster stores, and this one is short.

use std::time::{Duration, Instant};

use ratelock::{Limiter, LimiterOptions, Rules, Store, StoreOptions};
use ratelock_testkit::RedisCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_a_frozen_node_times_out_once_and_is_never_sent_again() {
    let cluster = RedisCluster::start(3, 0);
    let timeout = Duration::from_millis(300);
    let options = StoreOptions::default().with_timeout(timeout);
    let store = Store::connect(&cluster.url(), &options).await.unwrap();
    let limiter = Limiter::with_store(store, LimiterOptions::default()).unwrap();
    let rules: Rules = "10/minute using fixed_window".parse().unwrap();
    assert_eq!(limiter.hit("frozen", &rules, 1).await.unwrap().remaining, 9);
    for node in cluster.nodes() {
        node.pause();
    }
    let started = Instant::now();
    let frozen = limiter.hit("frozen", &rules, 1).await;
    let waited = started.elapsed();
    for node in cluster.nodes() {
        node.resume();
    }
    assert!(matches!(frozen, Err(ratelock::Error::Timeout(_))), "{frozen:?}");
    assert!(waited < timeout * 2, "answered after {waited:?}");
    // The timed-out hit ran once when the node woke (it reached it), and was not sent again.
    let until = Instant::now() + Duration::from_secs(5);
    let remaining = loop {
        match limiter.hit("frozen", &rules, 1).await {
            Err(err) if err.is_store_failure() && Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            answer => break answer.unwrap().remaining,
        }
    };
    assert_eq!(remaining, 7);
}
