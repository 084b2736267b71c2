//! A Redis Cluster over TLS whose nodes ask every client for a certificate (`tls-auth-clients yes`,
//! Redis's default): the store's client certificate is presented on the seed connection and on every
//! node connection the routing opens. In its own test binary: which CA and certificate the node
//! connections use is one choice per process, made by the first TLS cluster store that connects.

use ratelock::{Limiter, LimiterOptions, Rules, Store, StoreOptions};
use ratelock_testkit::slot::key_slot;
use ratelock_testkit::store_checks::serves_limits_and_locks;
use ratelock_testkit::tls::TestCertificates;
use ratelock_testkit::RedisCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_of_a_tls_cluster_that_asks_is_shown_the_client_certificate() {
    let certificates = TestCertificates::make("cluster-mutual");
    let cluster = RedisCluster::start_tls_asking_clients(3, 0, &certificates);
    let (certificate, key) = certificates.client_pem();
    let mutual = StoreOptions::default()
        .with_tls_root_ca(certificates.ca_pem())
        .with_tls_client_cert(certificate, key);
    serves_limits_and_locks(&cluster.tls_url(), &mutual, "mutual TLS cluster").await;

    // Keys on every master: each node connection presents it.
    let store = Store::connect(&cluster.tls_url(), &mutual).await.unwrap();
    let limiter = Limiter::with_store(store, LimiterOptions::default()).unwrap();
    let rules: Rules = "5/minute using fixed_window".parse().unwrap();
    let keys: Vec<String> = (0..12).map(|n| format!("mutual:{n}")).collect();
    let slots: std::collections::HashSet<u16> = keys.iter().map(|key| key_slot(key.as_bytes())).collect();
    assert!(slots.len() > 6, "the keys should spread over the nodes");
    for key in &keys {
        assert_eq!(limiter.hit(key, &rules, 1).await.unwrap().remaining, 4, "{key}");
    }

    // Another choice in the same process (no client certificate) is refused as configuration, never
    // an outage a failure policy could admit.
    let trusted = StoreOptions::default().with_tls_root_ca(certificates.ca_pem());
    let mut options = LimiterOptions::default().with_on_error(ratelock::FailurePolicy::Allow);
    options.store = trusted;
    let other = Limiter::connect_with(&cluster.tls_url(), options).await.unwrap();
    let refused = other.hit("mutual:0", &rules, 1).await.unwrap_err();
    assert!(refused.is_configuration(), "{refused:?}");
}
