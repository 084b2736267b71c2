//! The Redis store against a real server: script reload, timeouts without replay, reconnection,
//! failure policies, TTLs on every key, server time, ACL users, database numbers and TLS.

use std::time::{Duration, Instant};

use ratelock::{ClockSource, Error, FailurePolicy, Limiter, LimiterOptions, Rules};
use ratelock_testkit::tls::TestCertificates;
use ratelock_testkit::RedisServer;
use redis::Commands;

fn options(timeout_ms: u64) -> LimiterOptions {
    let mut options = LimiterOptions::default();
    options.store.timeout = Duration::from_millis(timeout_ms);
    options
}

#[tokio::test]
async fn script_is_reloaded_after_script_flush() {
    let server = RedisServer::start();
    let limiter = Limiter::connect(&server.url()).await.unwrap();
    let rules: Rules = "5/minute".parse().unwrap();
    assert_eq!(limiter.hit("k", &rules, 1).await.unwrap().remaining, 4);
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(limiter.hit("k", &rules, 1).await.unwrap().remaining, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_hit_is_not_replayed() {
    let server = RedisServer::start();
    let limiter = Limiter::connect_with(&server.url(), options(200)).await.unwrap();
    let rules: Rules = "10/minute".parse().unwrap();
    // Load the script first, so the timed-out call is the hit itself and not a NOSCRIPT round.
    assert_eq!(limiter.hit("k", &rules, 1).await.unwrap().remaining, 9);
    let mut blocker = server.connection();
    let sleeper = std::thread::spawn(move || {
        let _: redis::RedisResult<()> = redis::cmd("DEBUG").arg("SLEEP").arg("0.6").query(&mut blocker);
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let err = limiter.hit("k", &rules, 1).await.unwrap_err();
    assert!(err.is_timeout(), "expected a timeout, got {err:?}");
    sleeper.join().unwrap();
    // The command reached the server and ran once after the sleep; it must not have run twice.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match limiter.peek("k", &rules, 1).await {
            Ok(decision) => {
                // Taken: the warm-up hit and the timed-out one (once); peek answers as if taking one more.
                assert_eq!(decision.remaining, 7, "the timed-out hit must run exactly once");
                break;
            }
            Err(err) => assert!(Instant::now() < deadline, "store did not recover: {err}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn reconnects_after_the_server_restarts() {
    let mut server = RedisServer::start();
    let limiter = Limiter::connect_with(&server.url(), options(300)).await.unwrap();
    let rules: Rules = "100/minute".parse().unwrap();
    assert!(limiter.hit("k", &rules, 1).await.unwrap().allowed);
    server.restart();
    let started = Instant::now();
    let mut failures = 0;
    loop {
        match limiter.hit("k", &rules, 1).await {
            Ok(decision) => {
                assert_eq!(
                    decision.remaining, 99,
                    "restarted without persistence: state starts over"
                );
                break;
            }
            Err(err) => {
                assert!(err.is_store_failure(), "{err:?}");
                failures += 1;
                assert!(
                    started.elapsed() < Duration::from_secs(5),
                    "no reconnection after {failures} tries"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

#[tokio::test]
async fn failure_policies_raise_allow_or_deny() {
    let mut server = RedisServer::start();
    let url = server.url();
    let rules: Rules = "5/second".parse().unwrap();
    let mut limiters = Vec::new();
    for policy in [FailurePolicy::Raise, FailurePolicy::Allow, FailurePolicy::Deny] {
        let mut opts = options(200);
        opts.on_error = policy;
        limiters.push(Limiter::connect_with(&url, opts).await.unwrap());
    }
    server.stop();
    let raised = limiters[0].hit("k", &rules, 1).await.unwrap_err();
    assert!(raised.is_store_failure(), "{raised:?}");
    let allowed = limiters[1].hit("k", &rules, 1).await.unwrap();
    assert!(allowed.allowed && allowed.degraded);
    let denied = limiters[2].hit("k", &rules, 1).await.unwrap();
    assert!(!denied.allowed && denied.degraded);
    assert!(denied.retry_after > Duration::ZERO);
    // Misuse is never masked by the policy.
    let misuse = limiters[1].hit("k", &rules, 6).await.unwrap_err();
    assert!(misuse.is_cost_exceeds_capacity());
}

#[tokio::test]
async fn every_written_key_has_a_ttl() {
    let server = RedisServer::start();
    let limiter = Limiter::connect(&server.url()).await.unwrap();
    let rules: Rules = "5/second; 10/minute using token_bucket; 20/minute using leaky_bucket; \
                        30/hour using fixed_window; 40/hour using sliding_window; 50/day using sliding_log"
        .parse()
        .unwrap();
    for _ in 0..3 {
        assert!(limiter.hit("user:1", &rules, 1).await.unwrap().allowed);
    }
    let mut connection = server.connection();
    let keys: Vec<String> = connection.keys("*").unwrap();
    assert_eq!(keys.len(), 6, "{keys:?}");
    for key in keys {
        let ttl: i64 = connection.pttl(&key).unwrap();
        assert!(ttl > 0 && ttl <= 2 * 86_400_000, "{key} has PTTL {ttl}");
    }
}

#[tokio::test]
async fn the_server_clock_decides_by_default() {
    let server = RedisServer::start();
    let rule: ratelock::Rule = "10/second".parse().unwrap();
    let rules = Rules::from(rule.clone());
    let mut connection = server.connection();
    let server_now = || -> u64 {
        let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut server.connection()).unwrap();
        s * 1_000_000 + us
    };
    let limiter = Limiter::connect(&server.url()).await.unwrap();
    let before = server_now();
    limiter.hit("k", &rules, 1).await.unwrap();
    let key = ratelock::key::storage_key("rl", b"k", &rule);
    let tat: u64 = connection.get(&key[..]).unwrap();
    assert!(
        tat >= before + 100_000 && tat <= server_now() + 100_000,
        "TAT {tat} is not server time"
    );

    let mut local = LimiterOptions::default();
    local.clock = ClockSource::Local;
    local.prefix = "local".into();
    let limiter = Limiter::connect_with(&server.url(), local).await.unwrap();
    limiter.hit_at("k", &rules, 1, 5_000_000).await.unwrap();
    let key = ratelock::key::storage_key("local", b"k", &rule);
    let tat: u64 = connection.get(&key[..]).unwrap();
    assert_eq!(tat, 5_100_000, "an explicit now is used as given");
}

#[tokio::test]
async fn acl_user_password_and_database_number() {
    let server = RedisServer::start_with(&["--requirepass", "admin-secret"]);
    let mut admin = redis::Client::open(format!("redis://:admin-secret@127.0.0.1:{}/", server.port()))
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "limiter", "on", ">s3cret", "~*", "+@all"])
        .query(&mut admin)
        .unwrap();
    let url = format!("redis://limiter:s3cret@127.0.0.1:{}/3", server.port());
    let limiter = Limiter::connect(&url).await.unwrap();
    let rules: Rules = "1/minute".parse().unwrap();
    assert!(limiter.hit("k", &rules, 1).await.unwrap().allowed);
    let _: () = redis::cmd("SELECT").arg(3).query(&mut admin).unwrap();
    let in_db3: usize = redis::cmd("DBSIZE").query(&mut admin).unwrap();
    assert_eq!(in_db3, 1);

    // Lazy start: the wrong password shows on the first call (or a ping), as a configuration error
    // that names the setting, never as an outage a failure policy could cover.
    let wrong = format!("redis://limiter:wrong@127.0.0.1:{}/", server.port());
    let limiter = Limiter::connect(&wrong).await.unwrap();
    let err = limiter.ping().await.unwrap_err();
    assert!(err.is_configuration(), "{err:?}");
    assert!(limiter.hit("k", &rules, 1).await.unwrap_err().is_configuration());
}

#[tokio::test]
async fn rediss_with_a_private_certificate_authority() {
    let certificates = TestCertificates::make("store");
    let tls_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let args = certificates.server_args(tls_port);
    let server = RedisServer::start_with(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let url = format!("rediss://localhost:{tls_port}/");
    let mut opts = options(2_000);
    opts.store.tls_root_ca = Some(certificates.ca_pem());
    let limiter = Limiter::connect_with(&url, opts).await.unwrap();
    let rules: Rules = "2/minute".parse().unwrap();
    assert_eq!(limiter.hit("k", &rules, 1).await.unwrap().remaining, 1);
    // A connection the server closes while idle (an idle timeout, CLIENT KILL) is found before the next
    // call is written to it: that call goes out on a fresh connection (it failed as an outage).
    for round in 0..3 {
        server.kill_clients();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let answer = limiter.peek("k", &rules, 1).await;
        assert!(
            answer
                .as_ref()
                .is_ok_and(|decision| !decision.degraded && decision.allowed),
            "round {round}: {answer:?}"
        );
    }
    // Without trusting the private CA the handshake must fail, not silently downgrade.
    let untrusted = Limiter::connect_with(&url, options(2_000)).await.unwrap();
    let refused = untrusted.ping().await;
    assert!(
        refused.as_ref().is_err_and(Error::is_configuration),
        "a certificate from an unknown CA must be refused as a configuration error: {refused:?}"
    );
    // `#insecure` turns verification off (a server with a self-signed certificate, as some managed
    // services have): its connection is found closed while idle as well.
    let insecure = Limiter::connect_with(&format!("{url}#insecure"), options(2_000))
        .await
        .unwrap();
    assert_eq!(insecure.hit("k", &rules, 1).await.unwrap().remaining, 0);
    for round in 0..3 {
        server.kill_clients();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let answer = insecure.peek("k", &rules, 1).await;
        assert!(
            answer.as_ref().is_ok_and(|decision| !decision.degraded),
            "#insecure, round {round}: {answer:?}"
        );
    }
    // rediss:// to the plain port: redis-server reads the TLS hello as the start of a command and
    // waits. The connect runs out of time with nothing sent, and says so (not "may have run").
    let plain = format!("rediss://localhost:{}/", server.port());
    let mut opts = options(300);
    opts.store.tls_root_ca = Some(certificates.ca_pem());
    let stalled = Limiter::connect_with(&plain, opts).await.unwrap();
    let err = stalled.hit("k", &rules, 1).await.unwrap_err();
    assert!(
        matches!(err, Error::StoreUnavailable(_)) && err.is_store_failure(),
        "{err:?}"
    );
    let said = err.to_string();
    assert!(
        said.contains("connecting timed out after 300 ms; nothing was sent")
            && said.contains("does this port serve TLS?"),
        "{said}"
    );
    drop(server);
}

#[tokio::test]
async fn sliding_log_members_stay_unique_within_one_microsecond() {
    let server = RedisServer::start();
    let limiter = Limiter::connect(&server.url()).await.unwrap();
    let rule: ratelock::Rule = "10/minute using sliding_log".parse().unwrap();
    let rules = Rules::from(rule.clone());
    let now = 1_763_800_000_000_000;
    limiter.hit_at("k", &rules, 3, now).await.unwrap();
    limiter.hit_at("k", &rules, 1, now).await.unwrap();
    limiter.hit_at("k", &rules, 2, now).await.unwrap();
    let key = ratelock::key::storage_key("rl", b"k", &rule);
    let entries: usize = server.connection().zcard(&key[..]).unwrap();
    assert_eq!(entries, 6, "entries sharing a timestamp overwrote each other");
    assert!(limiter.peek_at("k", &rules, 4, now).await.unwrap().allowed);
    assert!(!limiter.peek_at("k", &rules, 5, now).await.unwrap().allowed);
}
