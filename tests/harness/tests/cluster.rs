//! ratelock on a real Redis Cluster (3 masters, 3 replicas, started by the harness): the shared vectors,
//! keys spread over many slots without CROSSSLOT for any public operation, NOSCRIPT on nodes that lost
//! their scripts (every lock kind included), connections the nodes closed while idle, a wrong password,
//! and lock exclusion with rising fencing tokens (a cluster over TLS: `cluster_tls.rs`).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use ratelock::{
    DistributedLock, FairLock, Limiter, LimiterOptions, LockOptions, ReadWriteLock, Rules, Semaphore, Store,
    StoreOptions,
};
use ratelock_testkit::failover::{GrantStream, HitStream};
use ratelock_testkit::slot::key_slot;
use ratelock_testkit::stores::take_turns;
use ratelock_testkit::vectors::{assert_store_matches, Via};
use ratelock_testkit::RedisCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_matches_the_vectors_and_never_meets_crossslot() {
    let cluster = RedisCluster::start(3, 1);
    let store = Store::connect(&cluster.url(), &StoreOptions::default())
        .await
        .unwrap();

    assert_store_matches(&store, Via::Async).await;

    // Keys that land on many slots, each hit with several rules at once (several keys per script call).
    let limiter = Limiter::with_store(store.clone(), LimiterOptions::default()).unwrap();
    let rules: Rules = "5/second; 100/hour using sliding_window; 50/minute using sliding_log"
        .parse()
        .unwrap();
    let mut slots = HashSet::new();
    for n in 0..300 {
        let key = format!("user:{n}");
        slots.insert(key_slot(key.as_bytes()));
        let decision = limiter.hit(&key, &rules, 1).await.unwrap();
        assert!(decision.allowed, "{key}: {decision:?}");
        limiter.reset(&key, &rules).await.unwrap();
    }
    assert!(slots.len() > 250, "keys spread over {} slots only", slots.len());

    // Every lock and semaphore operation, on names spread over the slots.
    for n in 0..30 {
        let lock = DistributedLock::new(&store, format!("job:{n}"), LockOptions::default()).unwrap();
        let guard = lock.acquire(Duration::from_secs(2)).await.unwrap();
        assert!(lock.is_locked().await.unwrap());
        assert!(guard.extend(Duration::from_secs(5)).await.is_ok());
        guard.release().await.unwrap();
        assert!(!lock.force_release().await.unwrap());
        let seats = Semaphore::new(&store, format!("seats:{n}"), 2, LockOptions::default()).unwrap();
        let permit = seats.acquire(Duration::from_secs(2)).await.unwrap();
        assert_eq!(seats.in_use().await.unwrap(), 1);
        permit.release().await.unwrap();
        let fair = FairLock::new(&store, format!("fair:{n}"), LockOptions::default()).unwrap();
        let held = fair.acquire(Duration::from_secs(2)).await.unwrap();
        assert!(fair.try_acquire().await.unwrap().is_none());
        assert_eq!(
            held.extend(Duration::from_secs(5)).await.unwrap(),
            ratelock::Extended::Extended
        );
        assert_eq!(held.release().await.unwrap(), ratelock::Released::Released);
        let rw = ReadWriteLock::new(&store, format!("rw:{n}"), LockOptions::default()).unwrap();
        let reading = rw.acquire_read(Duration::from_secs(2)).await.unwrap();
        assert!(rw.try_acquire_write().await.unwrap().is_none());
        assert_eq!(reading.release().await.unwrap(), ratelock::Released::Released);
        let writing = rw.acquire_write(Duration::from_secs(2)).await.unwrap();
        assert_eq!(rw.state().await.unwrap().writer_fence, writing.fencing_token());
        assert_eq!(writing.release().await.unwrap(), ratelock::Released::Released);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_nodes_closed_while_idle_fail_no_call() {
    let cluster = RedisCluster::start(3, 0);
    let limiter = Limiter::connect(&cluster.url()).await.unwrap();
    let rules: Rules = "10/minute using fixed_window".parse().unwrap();
    let keys: Vec<String> = (0..12).map(|n| format!("idle:{n}")).collect();
    for key in &keys {
        limiter.hit(key, &rules, 1).await.unwrap();
    }
    for round in 1..=3u64 {
        // Every node closes every client connection (as a server `timeout` or an idle-closing proxy does).
        for node in cluster.nodes() {
            node.kill_clients();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        for key in &keys {
            let decision = limiter.hit(key, &rules, 1).await;
            // Each hit counted once: nothing failed, nothing was sent twice.
            assert_eq!(decision.unwrap().remaining, 9 - round, "round {round}, {key}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_a_configuration_error_never_an_outage() {
    let cluster = RedisCluster::start(3, 0);
    for node in cluster.nodes() {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("requirepass")
            .arg("right")
            .query(&mut node.connection())
            .unwrap();
    }
    let url = cluster
        .url()
        .replace("redis+cluster://", "redis+cluster://:wrong@");
    // Stores connect on first use: the first call meets the refusal.
    let wrong = Limiter::connect(&url).await.unwrap();
    let refused = wrong.hit("k", &"1/minute".parse().unwrap(), 1).await;
    assert!(
        matches!(refused, Err(ratelock::Error::Configuration { .. })),
        "{refused:?}"
    );
    let right = cluster
        .url()
        .replace("redis+cluster://", "redis+cluster://:right@");
    let limiter = Limiter::connect(&right).await.unwrap();
    assert!(
        limiter
            .hit("k", &"1/minute".parse().unwrap(), 1)
            .await
            .unwrap()
            .allowed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_are_reloaded_on_nodes_that_lost_them() {
    let cluster = RedisCluster::start(3, 1);
    let limiter = Limiter::connect(&cluster.url()).await.unwrap();
    let rules: Rules = "10/minute".parse().unwrap();
    let keys: Vec<String> = (0..20).map(|n| format!("k{n}")).collect();
    for key in &keys {
        assert_eq!(limiter.hit(key, &rules, 1).await.unwrap().remaining, 9);
    }
    for node in cluster.nodes() {
        let _: () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query(&mut node.connection())
            .unwrap();
    }
    for key in &keys {
        assert_eq!(limiter.hit(key, &rules, 1).await.unwrap().remaining, 8, "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_on_the_cluster_has_one_holder_at_a_time() {
    let cluster = RedisCluster::start(3, 1);
    let store = Store::connect(&cluster.url(), &StoreOptions::default())
        .await
        .unwrap();
    take_turns(
        &store,
        "cluster:job",
        LockOptions::default(),
        8,
        10,
        Duration::from_secs(10),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hits_resume_within_two_seconds_of_a_forced_failover() {
    let cluster = RedisCluster::start(3, 1);
    let mut options = LimiterOptions::default();
    options.store.timeout = Duration::from_millis(500);
    let limiter = Limiter::connect_with(&cluster.url(), options).await.unwrap();
    let stream = HitStream::start(&limiter, 4);
    let grants = GrantStream::start(limiter.store(), 4, 2);
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A replica takes over its master's slots. FORCE still needs the masters' votes, which a loaded
    // machine can miss (the election then times out): ask again until the replica is promoted.
    let replica = &cluster.nodes()[3];
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut asked_at: Option<Instant> = None;
    let promoted_at = loop {
        if asked_at.is_none_or(|at| at.elapsed() > Duration::from_secs(5)) {
            let _: redis::RedisResult<()> = redis::cmd("CLUSTER")
                .arg("FAILOVER")
                .arg("FORCE")
                .query(&mut replica.connection());
            asked_at = Some(Instant::now());
        }
        let role: Vec<redis::Value> = redis::cmd("ROLE").query(&mut replica.connection()).unwrap();
        if matches!(role.first(), Some(redis::Value::BulkString(kind)) if kind == b"master") {
            break Instant::now();
        }
        assert!(Instant::now() < deadline, "the replica was not promoted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Past a stranded lease's end (see `GrantStream::assert_recovered`), so late waits are seen.
    tokio::time::sleep(Duration::from_secs(5)).await;
    stream.assert_recovered(promoted_at, "cluster failover").await;
    grants.assert_recovered(promoted_at, "cluster failover").await;
}
