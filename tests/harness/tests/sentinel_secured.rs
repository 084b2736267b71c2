//! ratelock through Redis Sentinel deployments secured as charts and managed offers set them up: one
//! password on the master and replica, on the sentinels, or on both, and TLS on every process
//! (`rediss+sentinel://`). Each setup must serve hits, locks and a lock waiter's wake-up
//! (the subscriber's own connection to the master), and a wrong password or an untrusted certificate
//! must be a configuration error, never an outage a failure policy could admit.

use std::time::Duration;

use ratelock::{Error, FailurePolicy, Limiter, LimiterOptions, Rules, StoreOptions};
use ratelock_testkit::sentinel::Secured;
use ratelock_testkit::store_checks::serves_limits_and_locks;
use ratelock_testkit::tls::TestCertificates;
use ratelock_testkit::RedisSentinels;

/// A hit through `url` fails as a configuration error even with `on_error = allow`.
async fn refuses_as_configuration(url: &str, mut options: StoreOptions, setup: &str) -> Error {
    options.timeout = Duration::from_secs(2);
    let mut limiter_options = LimiterOptions::default();
    limiter_options.store = options;
    limiter_options.on_error = FailurePolicy::Allow;
    let limiter = Limiter::connect_with(url, limiter_options).await.unwrap();
    let rules: Rules = "2/minute".parse().unwrap();
    let answer = limiter.hit("k", &rules, 1).await;
    match answer {
        Err(err) if err.is_configuration() => err,
        other => panic!("{setup}: expected a configuration error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_password_in_the_url_for_the_master_the_sentinels_or_both() {
    // (the master's password, the sentinels' password)
    let setups = [
        (Some("s3cret"), None),
        (Some("s3cret"), Some("s3cret")),
        (None, Some("s3cret")),
    ];
    for (password, sentinel_password) in setups {
        let setup = RedisSentinels::start_secured(Secured {
            password,
            sentinel_password,
            tls: None,
            asking_clients: false,
        });
        let name = format!("master {password:?}, sentinels {sentinel_password:?}");
        let url = setup.url_with_password(Some("s3cret"));
        serves_limits_and_locks(&url, &StoreOptions::default(), &name).await;
        let wrong = refuses_as_configuration(
            &setup.url_with_password(Some("wrong")),
            StoreOptions::default(),
            &name,
        )
        .await;
        assert!(wrong.to_string().contains("password"), "{name}: {wrong}");
        refuses_as_configuration(&setup.url_with_password(None), StoreOptions::default(), &name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_sentinel_over_tls_with_a_private_certificate_authority() {
    let certificates = TestCertificates::make("sentinel");
    let setup = RedisSentinels::start_secured(Secured {
        password: Some("s3cret"),
        sentinel_password: Some("s3cret"),
        tls: Some(&certificates),
        asking_clients: false,
    });
    let mut trusted = StoreOptions::default();
    trusted.tls_root_ca = Some(certificates.ca_pem());
    serves_limits_and_locks(&setup.url(), &trusted, "TLS, private CA").await;
    serves_limits_and_locks(
        &format!("{}#insecure", setup.url()),
        &StoreOptions::default(),
        "TLS, #insecure",
    )
    .await;
    let untrusted = refuses_as_configuration(&setup.url(), StoreOptions::default(), "TLS, untrusted").await;
    assert!(
        untrusted.to_string().contains("certificate"),
        "an unknown CA must be named: {untrusted}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sentinels_own_password_when_it_differs_from_the_masters() {
    let setup = RedisSentinels::start_secured(Secured {
        password: Some("m4ster"),
        sentinel_password: Some("s3ntinel"),
        tls: None,
        asking_clients: false,
    });
    let url = setup.url_with_password(Some("m4ster"));
    let name = "master m4ster, sentinels s3ntinel";
    let own = StoreOptions::default().with_sentinel_password("s3ntinel");
    serves_limits_and_locks(&url, &own, name).await;
    // The ACL user every server has, named: the username reaches the sentinels' AUTH.
    let user = own.clone().with_sentinel_username("default");
    serves_limits_and_locks(&url, &user, &format!("{name}, user default")).await;
    let unknown_user = own.clone().with_sentinel_username("nobody");
    refuses_as_configuration(&url, unknown_user, name).await;
    let wrong_password = StoreOptions::default().with_sentinel_password("wrong");
    let wrong = refuses_as_configuration(&url, wrong_password, name).await;
    assert!(
        wrong.to_string().contains("sentinel_password"),
        "the option is named: {wrong}"
    );
    // One password in the URL cannot serve both: neither side takes the other's.
    refuses_as_configuration(&url, StoreOptions::default(), name).await;
    // The master's password is still checked (the URL's credentials go to the master).
    let wrong_master = setup.url_with_password(Some("wrong"));
    refuses_as_configuration(&wrong_master, own, name).await;
}

/// A sentinel user that logs in but may not run what the sentinels are asked (`ROLE`, `SENTINEL`) is
/// named beside the URL's user: the error was "the ACL permissions of the URL's user" alone, whose
/// permissions were fine (redis-rs does not say which side refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_user_without_the_sentinel_commands_is_named() {
    let setup = RedisSentinels::start_secured(Secured {
        password: Some("m4ster"),
        sentinel_password: Some("s3ntinel"),
        tls: None,
        asking_clients: false,
    });
    setup.set_sentinel_user("limited", &["on", ">l1mited", "-@all", "+ping", "+hello"]);
    let url = setup.url_with_password(Some("m4ster"));
    let limited = StoreOptions::default()
        .with_sentinel_username("limited")
        .with_sentinel_password("l1mited");
    let refused = refuses_as_configuration(&url, limited, "a sentinel user without SENTINEL").await;
    let Error::Configuration { setting, reason } = &refused else {
        panic!("a configuration error: {refused:?}");
    };
    assert_eq!(
        *setting,
        ratelock::store::connection_core::SETTING_SENTINEL_ACL,
        "the sentinels' user is named beside the URL's: {refused}"
    );
    assert!(
        reason.contains("NOPERM"),
        "the server's reason is kept: {refused}"
    );
}

#[test]
fn sentinel_options_are_refused_where_no_sentinel_reads_them() {
    let own = StoreOptions::default().with_sentinel_password("s3ntinel");
    for url in [
        "redis://127.0.0.1:6379/",
        "memory://",
        "redlock://127.0.0.1:1,127.0.0.1:2",
    ] {
        let refused = ratelock::AnyLockStore::new(url, &own).unwrap_err();
        assert!(
            refused.is_invalid_argument() && refused.to_string().contains("sentinel_password"),
            "{url}: {refused}"
        );
    }
    let alone = StoreOptions::default().with_sentinel_username("app");
    let refused = ratelock::Store::new("redis+sentinel://127.0.0.1:1/m", &alone).unwrap_err();
    assert!(refused.to_string().contains("sentinel_password"), "{refused}");
    let empty = StoreOptions::default().with_sentinel_password("");
    let refused = ratelock::Store::new("redis+sentinel://127.0.0.1:1/m", &empty).unwrap_err();
    assert!(refused.to_string().contains("sentinel_password"), "{refused}");
    let empty_user = own.clone().with_sentinel_username("");
    let refused = ratelock::Store::new("redis+sentinel://127.0.0.1:1/m", &empty_user).unwrap_err();
    assert!(refused.to_string().contains("sentinel_username"), "{refused}");
    // Both given where neither is read: both are named, so one fix is enough.
    let both = own.clone().with_sentinel_username("app");
    let refused = ratelock::Store::new("redis://127.0.0.1:6379/", &both)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("sentinel_username") && refused.contains("sentinel_password"),
        "{refused}"
    );
    let shown = format!("{own:?}");
    assert!(
        shown.contains("<redacted>") && !shown.contains("s3ntinel"),
        "{shown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_sentinel_where_every_process_asks_for_a_client_certificate() {
    let certificates = TestCertificates::make("sentinel-mutual");
    let setup = RedisSentinels::start_secured(Secured {
        password: Some("s3cret"),
        sentinel_password: Some("s3cret"),
        tls: Some(&certificates),
        asking_clients: true,
    });
    let (certificate, key) = certificates.client_pem();
    let mutual = StoreOptions::default()
        .with_tls_root_ca(certificates.ca_pem())
        .with_tls_client_cert(certificate, key);
    // The sentinels, the master they name and the subscriber's own connection each see it.
    serves_limits_and_locks(&setup.url(), &mutual, "mutual TLS behind Sentinel").await;
    let trusted = StoreOptions::default().with_tls_root_ca(certificates.ca_pem());
    let refused = refuses_as_configuration(&setup.url(), trusted, "no client certificate").await;
    assert!(refused.to_string().contains("tls_client_cert"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_down_behind_sentinels_without_a_password_is_an_outage_not_a_refusal() {
    // The URL's password is the master's alone: the first ask, giving it to the sentinels too, is refused,
    // and the retry giving it to the master only met the master down. That outage was dropped and the
    // first refusal answered, a configuration error that on_error = allow could not admit.
    let mut setup = RedisSentinels::start_secured(Secured {
        password: Some("s3cret"),
        sentinel_password: None,
        tls: None,
        asking_clients: false,
    });
    let url = setup.url_with_password(Some("s3cret"));
    setup.master().stop();
    let mut options = LimiterOptions::default();
    options.store.timeout = Duration::from_secs(1);
    options.on_error = FailurePolicy::Allow;
    let limiter = Limiter::connect_with(&url, options).await.unwrap();
    let rules: Rules = "2/minute".parse().unwrap();
    match limiter.hit("k", &rules, 1).await {
        Ok(decision) => assert!(decision.allowed && decision.degraded, "{decision:?}"),
        Err(err) => panic!("expected the failure policy's answer, got {err:?}"),
    }
}
