//! ratelock on a real Redis Cluster over TLS (`rediss+cluster://`, started by the harness with
//! certificates of a private CA). In its own test binary, run as one test in a fixed order: which CA the
//! node connections trust is one choice per process, made by the first TLS cluster store that connects
//! with a CA check, so each step below must meet the process in the state it names.

use std::collections::HashSet;
use std::time::Duration;

use ratelock::{
    DistributedLock, Error, FailurePolicy, Limiter, LimiterOptions, LockOptions, Rules, Store, StoreOptions,
};
use ratelock_testkit::slot::key_slot;
use ratelock_testkit::tls::TestCertificates;
use ratelock_testkit::RedisCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_over_tls_checks_every_node_against_one_choice_of_ca() {
    let certificates = TestCertificates::make("cluster");
    let cluster = RedisCluster::start_tls(3, 0, &certificates);
    let rules: Rules = "10/minute using fixed_window".parse().unwrap();
    let keys: Vec<String> = (0..12).map(|n| format!("tls:{n}")).collect();
    let slots: HashSet<u16> = keys.iter().map(|key| key_slot(key.as_bytes())).collect();
    assert!(slots.len() > 6, "the keys should spread over the nodes");

    // `#insecure` checks no certificate, on the nodes the seeds name too: no CA has been chosen yet, so
    // a node checked against the public roots would refuse the connection.
    let insecure = Limiter::connect(&format!("{}#insecure", cluster.tls_url()))
        .await
        .unwrap();
    // One explicit time for every hit: a minute's window that turned during the test (at a whole
    // minute of the wall clock) started the counts again, and round 3 read 9 left for 6.
    const AT: u64 = 1_763_800_000_000_000;
    for key in &keys {
        assert_eq!(
            insecure.hit_at(key, &rules, 1, AT).await.unwrap().remaining,
            9,
            "{key}"
        );
    }

    // Without the CA, the first seed's certificate is refused: a configuration error that says so.
    let untrusted = Limiter::connect(&cluster.tls_url()).await.unwrap();
    let refused = untrusted.hit("tls:0", &rules, 1).await.unwrap_err();
    assert!(is_certificate_refusal(&refused), "{refused:?}");

    // With it, every node serves; connections the nodes closed while idle fail no call; a lock waiter is
    // woken over TLS.
    let options = StoreOptions::default().with_tls_root_ca(certificates.ca_pem());
    let store = Store::connect(&cluster.tls_url(), &options).await.unwrap();
    let limiter = Limiter::with_store(store.clone(), LimiterOptions::default()).unwrap();
    for round in 1..=3u64 {
        for key in &keys {
            let decision = limiter.hit_at(key, &rules, 1, AT).await;
            assert_eq!(decision.unwrap().remaining, 9 - round, "round {round}, {key}");
        }
        for node in cluster.nodes() {
            node.kill_clients();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lock = DistributedLock::new(&store, "tls:job", LockOptions::default()).unwrap();
    let held = lock.acquire(Duration::from_secs(2)).await.unwrap();
    let waiter = {
        let lock = DistributedLock::new(&store, "tls:job", LockOptions::default()).unwrap();
        tokio::spawn(async move {
            lock.acquire(Duration::from_secs(5))
                .await
                .map(|g| g.fencing_token())
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let token = held.fencing_token();
    held.release().await.unwrap();
    assert!(waiter.await.unwrap().unwrap() > token);

    // Another CA for another cluster store of the process (here the same CA and one more in one PEM, so
    // that the first seed passes): refused, as the nodes would be checked against the first choice.
    let mut both = certificates.ca_pem();
    both.extend(TestCertificates::make("other").ca_pem());
    let other = StoreOptions::default().with_tls_root_ca(both);
    let store = Store::connect(&cluster.tls_url(), &other).await.unwrap();
    let refused = store.ping().await.unwrap_err();
    assert!(
        matches!(&refused, Error::Configuration { .. }) && refused.to_string().contains("one choice of CA"),
        "{refused:?}"
    );

    // A cluster whose certificates name `localhost` but not the address `CLUSTER SLOTS` gives: the
    // seeds pass, every node found from them refuses. A configuration error, never an outage, even
    // under `on_error = allow`.
    let named_only = certificates.sibling("named-only", "DNS:localhost");
    let misnamed = RedisCluster::start_tls(3, 0, &named_only);
    let store = Store::connect(&misnamed.tls_url(), &options).await.unwrap();
    let allow = LimiterOptions::default().with_on_error(FailurePolicy::Allow);
    let limiter = Limiter::with_store(store, allow).unwrap();
    let refused = limiter.hit("tls:0", &rules, 1).await.unwrap_err();
    assert!(is_certificate_refusal(&refused), "{refused:?}");
}

/// Whether `err` is the configuration error of a refused certificate.
fn is_certificate_refusal(err: &Error) -> bool {
    matches!(err, Error::Configuration { .. }) && err.to_string().to_lowercase().contains("certificate")
}
