//! Mutual TLS and TLS versions. A TLS Redis at its defaults asks every client for a certificate its CA
//! signed (`tls-auth-clients yes`). A store given one (`tls_client_cert`, `tls_client_key`) serves
//! limits, locks and a waiter's wake-up, over TLS 1.3 and over TLS 1.2 alone; a store given none, or
//! one another CA signed, is refused by the server's alert: a configuration error, raised whatever the
//! failure policy says (it was an outage, so `on_error = allow` admitted every call, degraded, for as
//! long as the setting stayed).

use std::time::Duration;

use ratelock::{FailurePolicy, Limiter, LimiterOptions, Rules, StoreOptions};
use ratelock_testkit::store_checks::serves_limits_and_locks;
use ratelock_testkit::tls::TestCertificates;
use ratelock_testkit::RedisServer;

/// A TLS server on a free port with `args` (made by `certificates` for that port).
fn tls_server(args: impl FnOnce(u16) -> Vec<String>) -> (RedisServer, String) {
    let tls_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let args = args(tls_port);
    let server = RedisServer::start_with(&args.iter().map(String::as_str).collect::<Vec<_>>());
    (server, format!("rediss://localhost:{tls_port}/"))
}

#[tokio::test]
async fn a_client_certificate_is_presented_to_a_server_that_asks_for_one() {
    for versions in ["", "TLSv1.2"] {
        let certificates = TestCertificates::make(&format!("mutual{versions}"));
        let (_server, url) = tls_server(|port| certificates.server_args_asking_clients(port, versions));
        let (certificate, key) = certificates.client_pem();
        let options = StoreOptions::default()
            .with_tls_root_ca(certificates.ca_pem())
            .with_tls_client_cert(certificate, key);
        serves_limits_and_locks(&url, &options, &format!("mutual TLS {versions}")).await;
    }
}

/// ratelock's TLS speaks TLS 1.2 as well as 1.3 (managed and older servers that offer 1.2 alone).
#[tokio::test]
async fn a_server_that_speaks_only_tls_1_2_is_served() {
    let certificates = TestCertificates::make("tls12");
    let (_server, url) = tls_server(|port| {
        let mut args = certificates.server_args(port);
        args.extend(["--tls-protocols".into(), "TLSv1.2".into()]);
        args
    });
    let options = StoreOptions::default().with_tls_root_ca(certificates.ca_pem());
    serves_limits_and_locks(&url, &options, "TLS 1.2 only").await;
}

#[tokio::test]
async fn a_server_that_asks_for_a_client_certificate_none_was_given_is_a_configuration_error() {
    let certificates = TestCertificates::make("no-client-certificate");
    let (_server, url) = tls_server(|port| certificates.server_args_asking_clients(port, ""));
    let options = StoreOptions::default().with_tls_root_ca(certificates.ca_pem());
    refused_whatever_the_policy(&url, options, "tls_client_cert").await;
}

/// Over TLS 1.2 the server refuses a client without a certificate during the handshake, by a handshake
/// failure: a configuration error naming the versions and the client certificate.
#[tokio::test]
async fn a_tls_1_2_server_that_asks_for_a_client_certificate_none_was_given_is_a_configuration_error() {
    let certificates = TestCertificates::make("no-client-certificate-tls12");
    let (_server, url) = tls_server(|port| certificates.server_args_asking_clients(port, "TLSv1.2"));
    let options = StoreOptions::default().with_tls_root_ca(certificates.ca_pem());
    refused_whatever_the_policy(&url, options, "tls-protocols").await;
}

#[tokio::test]
async fn a_client_certificate_another_ca_signed_is_a_configuration_error() {
    let certificates = TestCertificates::make("server-ca");
    let strangers = TestCertificates::make("stranger-ca");
    let (_server, url) = tls_server(|port| certificates.server_args_asking_clients(port, ""));
    let (certificate, key) = strangers.client_pem();
    let options = StoreOptions::default()
        .with_tls_root_ca(certificates.ca_pem())
        .with_tls_client_cert(certificate, key);
    refused_whatever_the_policy(&url, options, "tls_client_cert").await;
}

/// A certificate without its key, a key without its certificate, and a key that is not the
/// certificate's are refused when the store is made, each naming the option to fix.
#[test]
fn a_client_certificate_and_key_that_do_not_go_together_are_invalid_arguments() {
    let certificates = TestCertificates::make("mismatched");
    let (certificate, key) = certificates.client_pem();
    let (_, other_key) = TestCertificates::make("mismatched-other").client_pem();
    let url = "rediss://localhost:6380/";
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let named = |options: StoreOptions, name: &str| {
        let refused = ratelock::Store::new(url, &options).unwrap_err();
        assert!(refused.is_invalid_argument(), "{refused}");
        assert!(refused.to_string().contains(name), "{name}: {refused}");
        // The Redis store opened on its own checks the same.
        let refused = runtime
            .block_on(ratelock::store::RedisStore::connect(url, &options))
            .unwrap_err();
        assert!(
            refused.to_string().contains(name),
            "RedisStore::connect, {name}: {refused}"
        );
    };
    let mut alone = StoreOptions::default();
    alone.tls_client_cert = Some(certificate.clone());
    named(alone, "tls_client_key");
    let mut alone = StoreOptions::default();
    alone.tls_client_key = Some(key.clone());
    named(alone, "tls_client_cert");
    named(
        StoreOptions::default().with_tls_client_cert(certificate.clone(), other_key),
        "tls_client_key",
    );
    named(
        StoreOptions::default().with_tls_client_cert(b"no certificate".to_vec(), key.clone()),
        "tls_client_cert",
    );
    let given = StoreOptions::default().with_tls_client_cert(certificate, key.clone());
    assert!(ratelock::Store::new(url, &given).is_ok());
    // Options get logged: their Debug form never shows the private key.
    let shown = format!("{given:?}");
    assert!(
        shown.contains("<redacted>") && !shown.contains(&format!("{:?}", &key[..16])),
        "{shown}"
    );
    // A cluster or Sentinel URL with #insecure could not present it on every connection.
    let insecure =
        ratelock::Store::new("rediss+cluster://localhost:1,localhost:2#insecure", &given).unwrap_err();
    assert!(insecure.to_string().contains("tls_client_cert"), "{insecure}");
    // Only a TLS store reads it.
    let plain = ratelock::Store::new("redis://localhost:6379/", &given).unwrap_err();
    assert!(plain.to_string().contains("tls_client_cert"), "{plain}");
}

/// A key ratelock's TLS cannot load (ECDSA P-521: rustls with ring signs with RSA of 2048 to 4096 bits,
/// ECDSA P-256 and P-384, and Ed25519) is refused as that, not as a key that is not the certificate's.
#[test]
fn a_client_key_tls_cannot_load_is_named_as_such() {
    let certificates = TestCertificates::make("p521");
    let (certificate, key) =
        certificates.client_pem_keyed("p521", &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-521"]);
    let options = StoreOptions::default().with_tls_client_cert(certificate, key);
    let refused = ratelock::Store::new("rediss://localhost:6380/", &options).unwrap_err();
    assert!(refused.is_invalid_argument(), "{refused}");
    let text = refused.to_string();
    assert!(
        text.contains("tls_client_key") && text.contains("P-256") && !text.contains("is not the private key"),
        "{text}"
    );
    // A P-384 key is one it signs with.
    let (certificate, key) =
        certificates.client_pem_keyed("p384", &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"]);
    let options = StoreOptions::default().with_tls_client_cert(certificate, key);
    assert!(ratelock::Store::new("rediss://localhost:6380/", &options).is_ok());
}

/// Three hits under `on_error = allow` through `url` each raise a configuration error whose text holds
/// `named`: the first on the connection the alert closes, the next ones on fresh connections.
async fn refused_whatever_the_policy(url: &str, store: StoreOptions, named: &str) {
    let mut options = LimiterOptions::default().with_on_error(FailurePolicy::Allow);
    options.store = store;
    options.store.timeout = Duration::from_millis(1000);
    let limiter = Limiter::connect_with(url, options).await.unwrap();
    let rules: Rules = "2/minute".parse().unwrap();
    for call in 0..3 {
        let refused = limiter.hit("k", &rules, 1).await.unwrap_err();
        assert!(refused.is_configuration(), "call {call}: {refused}");
        assert!(refused.to_string().contains(named), "call {call}: {refused}");
    }
}
