//! A dead master of a Redis Cluster costs the healthy masters no storm of slot-map refreshes.
//!
//! Each failed call made the cluster routing rebuild its slot map (`CLUSTER SLOTS` to a healthy node,
//! then a PING on every node's connection and a connect to the dead one), holding every shard's calls
//! while it ran: 780 `CLUSTER SLOTS` and 1,564 PINGs to the two healthy masters in 1.5 s, and the
//! healthy shard answered about half its calls. The healthy shard's throughput is printed (a figure of
//! this VM's moment, not asserted); the refreshes' questions are counted. In its own test binary: the
//! node calls' deadline is process-wide.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratelock::{Limiter, LimiterOptions, Rules, Store, StoreOptions};
use ratelock_testkit::cluster::key_of;
use ratelock_testkit::{RedisCluster, RedisServer};

/// What [`load`] saw of the healthy shard.
#[derive(Default)]
struct Healthy {
    answered: AtomicU64,
    failed: AtomicU64,
    /// The failed shard's calls made meanwhile.
    elsewhere: AtomicU64,
}

/// Eight tasks hitting `failing` and eight hitting `healthy` (keys of two shards) for `span`: what the
/// healthy shard answered.
async fn load(limiter: &Arc<Limiter>, failing: &str, healthy: &str, span: Duration) -> Arc<Healthy> {
    let seen = Arc::new(Healthy::default());
    let rules: Rules = "1000000/second".parse().unwrap();
    let until = Instant::now() + span;
    let mut tasks = Vec::new();
    for task in 0..16 {
        let on_healthy = task % 2 == 1;
        let key = if on_healthy { healthy } else { failing }.to_owned();
        let (limiter, rules, seen) = (limiter.clone(), rules.clone(), seen.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < until {
                let answered = limiter.hit(key.as_str(), &rules, 1).await.is_ok();
                match (on_healthy, answered) {
                    (true, true) => seen.answered.fetch_add(1, Ordering::Relaxed),
                    (true, false) => seen.failed.fetch_add(1, Ordering::Relaxed),
                    // The failed shard's calls fail as fast as its port refuses: a pause between them
                    // keeps this loop from taking the cores from the healthy shard's.
                    (false, _) => {
                        seen.elsewhere.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        0
                    }
                };
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    seen
}

/// The calls of `command` the masters after the first have served.
fn healthy_calls_of(cluster: &RedisCluster, command: &str) -> u64 {
    cluster.nodes()[1..]
        .iter()
        .map(|node| node.calls_of(command))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_master_makes_no_refresh_storm_on_the_others() {
    let mut cluster = RedisCluster::start(3, 0);
    let options = StoreOptions::default().with_timeout(Duration::from_millis(500));
    let store = Store::connect(&cluster.url(), &options).await.unwrap();
    let limiter = Arc::new(Limiter::with_store(store, LimiterOptions::default()).unwrap());
    let failing = key_of(&cluster.nodes()[0], true);
    let healthy = key_of(&cluster.nodes()[0], false);
    let span = Duration::from_millis(1500);

    let before = load(&limiter, &failing, &healthy, span).await;
    let (slot_maps, pings) = (
        healthy_calls_of(&cluster, "cluster|slots"),
        healthy_calls_of(&cluster, "ping"),
    );
    let moved_before: u64 = cluster.nodes()[1..].iter().map(RedisServer::moved_replies).sum();
    cluster.nodes_mut()[0].stop();
    let during = load(&limiter, &failing, &healthy, span).await;
    let slot_maps = healthy_calls_of(&cluster, "cluster|slots") - slot_maps;
    let pings = healthy_calls_of(&cluster, "ping") - pings;
    let moved = cluster.nodes()[1..]
        .iter()
        .map(RedisServer::moved_replies)
        .sum::<u64>()
        - moved_before;
    let (before, during) = (
        before.answered.load(Ordering::Relaxed),
        (
            during.answered.load(Ordering::Relaxed),
            during.failed.load(Ordering::Relaxed),
            during.elsewhere.load(Ordering::Relaxed),
        ),
    );
    eprintln!(
        "the healthy shard answered {} calls in {span:?} with a master dead, {:.2}x as many as before ({before}); \
         the healthy masters were asked {slot_maps} CLUSTER SLOTS and {pings} PINGs, and answered {moved} \
         MOVED to the dead master's {} calls (the routing sends a slot whose node it cannot reach to \
         another node)",
        during.0,
        during.0 as f64 / before as f64,
        during.2,
    );
    // Each node connection asks its node at most once per 100 ms (two healthy masters, 1.5 s: 30, and
    // a few more if the routing opens new connections meanwhile); it was ~600-800 a run.
    assert!(
        slot_maps <= 60,
        "{slot_maps} CLUSTER SLOTS to the healthy masters in {span:?}"
    );
    assert!(pings <= 60, "{pings} PINGs to the healthy masters in {span:?}");
    assert_eq!(
        during.1, 0,
        "calls to the healthy shard failed ({} answered)",
        during.0
    );
}

/// A master that comes back on its port (its cluster state kept in its directory) is used again within
/// the probe's longest pause (2 s) and a timeout, although its refused connects made it suspect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_that_comes_back_is_used_again_within_the_probes_pause() {
    let mut cluster = RedisCluster::start(3, 0);
    let options = StoreOptions::default().with_timeout(Duration::from_millis(500));
    let store = Store::connect(&cluster.url(), &options).await.unwrap();
    let limiter = Limiter::with_store(store, LimiterOptions::default()).unwrap();
    let rules: Rules = "1000000/second".parse().unwrap();
    let key = key_of(&cluster.nodes()[0], true);
    limiter.hit(key.as_str(), &rules, 1).await.unwrap();
    cluster.nodes_mut()[0].stop();
    // Long enough for the probe's pause to grow to its longest (50 ms doubled up to 2 s).
    let down_until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < down_until {
        assert!(limiter.hit(key.as_str(), &rules, 1).await.is_err());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.nodes_mut()[0].start_again();
    let back = Instant::now();
    loop {
        if limiter.hit(key.as_str(), &rules, 1).await.is_ok() {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(4),
            "the master that came back was not used again within 4 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("answered again {:?} after the master came back", back.elapsed());
}
