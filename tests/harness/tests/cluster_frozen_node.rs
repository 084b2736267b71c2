//! A call to a frozen Redis Cluster node times out once and is never sent again (redis-rs's routing
//! retries what its connections report as I/O timeouts; ratelock's node connection reports a call that
//! may have run as an error it does not retry), and a frozen master the cluster failed over is left
//! behind within 2 s of its replica's promotion. In its own test binary: the cluster node connections'
//! deadline is the shortest timeout of the process's cluster stores, and this one is short.

use std::time::{Duration, Instant};

use ratelock::{Limiter, LimiterOptions, Rules, Store, StoreOptions};
use ratelock_testkit::cluster::key_of;
use ratelock_testkit::failover::{GrantStream, HitStream};
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

/// A master frozen (not gone: the kernel still completes connections to it, only its calls time out)
/// is failed over by the cluster to its replica; the hits on its slots must go there within 2 s of the
/// promotion, although the old master still holds its connections and was never named by a MOVED.
/// Until the cluster declares it failed, no call to another shard waits on the frozen node (a slot-map
/// refresh that checked it would hold every shard's calls).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hits_resume_after_the_promotion_when_the_old_master_is_frozen_not_gone() {
    let cluster = RedisCluster::start(3, 1);
    let options = StoreOptions::default().with_timeout(Duration::from_millis(300));
    let store = Store::connect(&cluster.url(), &options).await.unwrap();
    let limiter = Limiter::with_store(store, LimiterOptions::default()).unwrap();
    let stream = HitStream::start(&limiter, 2);
    let grants = GrantStream::start(limiter.store(), 2, 2);
    tokio::time::sleep(Duration::from_millis(300)).await;

    let master = &cluster.nodes()[0];
    let replica = cluster.nodes()[3..]
        .iter()
        .find(|node| replica_of(node) == Some(master.port()))
        .expect("the first master has a replica");
    // A replica still in its first sync is not allowed to take over: wait for its link to be up.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut replica.connection())
            .unwrap();
        if info.contains("master_link_status:up") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the replica never synced with its master"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let healthy = key_of(master, false);
    let healthy_rules: Rules = "1000000/second".parse().unwrap();
    master.pause();
    // Until the cluster itself declares the master failed (after its node timeout, 2 s here; then every
    // node answers CLUSTERDOWN until the promotion), calls to other shards answer at once: no refresh
    // or reconnect waits on the frozen node.
    let mut slowest = Duration::ZERO;
    let paused_at = Instant::now();
    while paused_at.elapsed() < Duration::from_millis(1500) {
        let started = Instant::now();
        let _ = limiter.hit(healthy.as_str(), &healthy_rules, 1).await;
        slowest = slowest.max(started.elapsed());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let promoted_at = loop {
        let role: Vec<redis::Value> = redis::cmd("ROLE").query(&mut replica.connection()).unwrap();
        if matches!(role.first(), Some(redis::Value::BulkString(kind)) if kind == b"master") {
            break Instant::now();
        }
        if Instant::now() > deadline {
            master.resume();
            panic!("the cluster did not promote the frozen master's replica");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Past a stranded lease's end (see `GrantStream::assert_recovered`), so late waits are seen.
    tokio::time::sleep(Duration::from_secs(5)).await;
    master.resume();
    assert!(
        slowest < Duration::from_millis(250),
        "a call to another shard waited {slowest:?} while a master was frozen (the timeout is 300 ms)"
    );
    stream
        .assert_recovered(promoted_at, "cluster failover from a frozen master")
        .await;
    grants
        .assert_recovered(promoted_at, "cluster failover from a frozen master")
        .await;
}

/// The port of the master `node` replicates, if it is a replica (`ROLE`).
fn replica_of(node: &ratelock_testkit::RedisServer) -> Option<u16> {
    let role: Vec<redis::Value> = redis::cmd("ROLE").query(&mut node.connection()).ok()?;
    match role.as_slice() {
        [redis::Value::BulkString(kind), _, redis::Value::Int(port), ..] if kind == b"slave" => {
            u16::try_from(*port).ok()
        }
        _ => None,
    }
}
