//! A TLS Redis at its defaults asks every client for a certificate (`tls-auth-clients yes`); ratelock
//! presents none, so the server refuses every connection with a TLS alert. That is a configuration
//! error, raised whatever the failure policy says: it was an outage, so `on_error = allow` admitted
//! every call (degraded) for as long as the setting stayed.

use std::time::Duration;

use ratelock::{FailurePolicy, Limiter, LimiterOptions, Rules};
use ratelock_testkit::tls::TestCertificates;
use ratelock_testkit::RedisServer;

#[tokio::test]
async fn a_server_that_asks_for_a_client_certificate_is_a_configuration_error() {
    refused_whatever_the_policy(&[], "tls-auth-clients").await;
}

/// Over TLS 1.2 only, the server refuses ratelock's TLS (1.3 only) by its version alert: a
/// configuration error naming the server's TLS versions.
#[tokio::test]
async fn a_server_that_speaks_only_tls_1_2_is_a_configuration_error() {
    refused_whatever_the_policy(&["--tls-protocols", "TLSv1.2"], "tls-protocols").await;
}

/// A TLS server asking clients for a certificate (with `extra` arguments): three hits under
/// `on_error = allow` each raise a configuration error whose text holds `named`.
async fn refused_whatever_the_policy(extra: &[&str], named: &str) {
    let certificates = TestCertificates::make(named);
    let tls_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut args = certificates.server_args(tls_port);
    let asks = args.iter().position(|arg| arg == "--tls-auth-clients").unwrap();
    args[asks + 1] = "yes".into();
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let _server = RedisServer::start_with(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let mut options = LimiterOptions::default().with_on_error(FailurePolicy::Allow);
    options.store.timeout = Duration::from_millis(1000);
    options.store.tls_root_ca = Some(certificates.ca_pem());
    let limiter = Limiter::connect_with(&format!("rediss://localhost:{tls_port}/"), options)
        .await
        .unwrap();
    let rules: Rules = "2/minute".parse().unwrap();
    // The first call (on the connection the alert closes) and the next ones (on fresh connections).
    for call in 0..3 {
        let refused = limiter.hit("k", &rules, 1).await.unwrap_err();
        assert!(refused.is_configuration(), "call {call}: {refused}");
        assert!(refused.to_string().contains(named), "call {call}: {refused}");
    }
}
