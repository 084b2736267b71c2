//! One failed master of a Redis Cluster fails only the calls for its own slots: the calls for the
//! other shards are still answered by their masters, never refused by the store's circuit breaker,
//! whether the master froze (its calls time out) or died (its connections are refused), and its
//! failed calls make the store check the server's code again at most once a second. With every master
//! dead, the breaker opens as on one server. In its own test
//! binary: the node calls' deadline is process-wide, and this one is short.

use std::time::{Duration, Instant};

use ratelock::store::connection_core::BreakerState;
use ratelock::{Limiter, LimiterOptions, Rules, Store, StoreOptions};
use ratelock_testkit::cluster::key_of;
use ratelock_testkit::RedisCluster;

/// How the first master fails.
enum Failure {
    /// SIGSTOP: connections stay open, calls time out.
    Frozen,
    /// Killed: its port refuses connections.
    Dead,
}

/// One after the other (two clusters at once on a loaded machine would slow the healthy calls too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_or_dead_master_fails_only_its_own_shards_calls() {
    other_shards_keep_answering(Failure::Frozen).await;
    other_shards_keep_answering(Failure::Dead).await;
}

/// Every call's timeout here (both tests': the node calls' deadline is the process's shortest).
const TIMEOUT: Duration = Duration::from_millis(500);

/// A cluster of three masters, and a limiter on it with [`TIMEOUT`].
async fn cluster_and_limiter() -> (RedisCluster, Limiter) {
    let cluster = RedisCluster::start(3, 0);
    let options = StoreOptions::default().with_timeout(TIMEOUT);
    let store = Store::connect(&cluster.url(), &options).await.unwrap();
    (
        cluster,
        Limiter::with_store(store, LimiterOptions::default()).unwrap(),
    )
}

/// With every master dead, the calls meet outages only, and the store's breaker opens after a
/// timeout of them (then calls answer at once), as on one server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_with_every_master_dead_opens_the_breaker() {
    let (mut cluster, limiter) = cluster_and_limiter().await;
    let rules: Rules = "10/second".parse().unwrap();
    limiter.hit("k", &rules, 1).await.unwrap();
    for node in cluster.nodes_mut() {
        node.stop();
    }
    let started = Instant::now();
    let opened = loop {
        let failed = limiter.hit("k", &rules, 1).await.unwrap_err();
        assert!(failed.is_store_failure(), "{failed}");
        if limiter.breaker_state() == Some(BreakerState::Open) {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "the breaker never opened: {failed}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(
        opened >= TIMEOUT,
        "opened after {opened:?}, before a whole timeout of outages"
    );
}

/// Hits alternate between a key of the failed master and a key of another shard for 1.2 s (within the
/// cluster's node timeout of 2 s, so the cluster itself still serves every other slot): every hit on
/// the healthy shard must be answered, and the failed shard's hits must fail.
async fn other_shards_keep_answering(failure: Failure) {
    let (mut cluster, limiter) = cluster_and_limiter().await;
    let rules: Rules = "1000000/second".parse().unwrap();
    let failing = key_of(&cluster.nodes()[0], true);
    let healthy = key_of(&cluster.nodes()[0], false);
    limiter.hit(failing.as_str(), &rules, 1).await.unwrap();
    limiter.hit(healthy.as_str(), &rules, 1).await.unwrap();

    for node in &cluster.nodes()[1..] {
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query(&mut node.connection())
            .unwrap();
    }
    match failure {
        Failure::Frozen => cluster.nodes()[0].pause(),
        Failure::Dead => cluster.nodes_mut()[0].stop(),
    }
    let (mut failed, mut answered, mut refused) = (Vec::new(), 0, Vec::new());
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1200) {
        let asked = Instant::now();
        match limiter.hit(failing.as_str(), &rules, 1).await {
            Err(err) => failed.push((asked.elapsed(), err)),
            Ok(decision) => panic!("a call to the failed master was answered: {decision:?}"),
        }
        match limiter.hit(healthy.as_str(), &rules, 1).await {
            Ok(_) => answered += 1,
            Err(err) => refused.push(err.to_string()),
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The failed master's calls made the store check the server's code again (a few round trips to
    // the other masters, before the next call of any shard) after every one of them; now at most once
    // a second: in 1.2 s, at most two `COMMAND INFO` in all.
    let checks: u64 = cluster.nodes()[1..]
        .iter()
        .map(|node| node.calls_of("command|info"))
        .sum();
    if let Failure::Frozen = failure {
        cluster.nodes()[0].resume();
    }
    assert!(
        checks <= 2,
        "the store checked the server's code {checks} times in 1.2 s"
    );
    // Each an outage (the failure policy's to answer), never a configuration error; and after the
    // first (a frozen node's call waits out its timeout once), each within the timeout.
    assert!(
        failed.len() > 10,
        "only {} calls to the failed master",
        failed.len()
    );
    for (_, err) in &failed {
        assert!(err.is_store_failure(), "not an outage: {err}");
    }
    let slow: Vec<_> = failed[1..]
        .iter()
        .filter(|(waited, _)| *waited >= TIMEOUT)
        .collect();
    assert!(
        slow.is_empty(),
        "{} calls to the failed master took the timeout or more, first: {:?}",
        slow.len(),
        slow[0]
    );
    assert!(
        refused.is_empty(),
        "{} of {} calls to a healthy shard failed while another master was down, the first with: {}",
        refused.len(),
        refused.len() + answered,
        refused.first().map_or("", String::as_str)
    );
}
