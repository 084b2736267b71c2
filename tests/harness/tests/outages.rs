//! Outages on a real redis-server: a limiter boots while the server is down (no I/O before the first
//! call), its calls follow the failure policy through the circuit breaker while the server is stopped
//! or frozen (SIGSTOP), recover when it returns, fall back to local limits under `local`, and a wrong
//! password or a missing ACL permission raise whatever the policy says. Every loop is bounded.

use std::time::{Duration, Instant};

use ratelock::store::connection_core::BreakerState;
use ratelock::{
    DistributedLock, FailurePolicy, Limiter, LimiterOptions, LockOptions, Rules, Store, StoreOptions,
};
use ratelock_testkit::RedisServer;

fn options(policy: FailurePolicy, timeout_ms: u64) -> LimiterOptions {
    LimiterOptions::default()
        .with_on_error(policy)
        .with_timeout(Duration::from_millis(timeout_ms))
}

/// Sets a password on the running server and closes every client's connection (this one's included).
fn set_a_password_and_drop_the_clients(server: &RedisServer) {
    let mut admin = server.connection();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "requirepass", "sekret"][..])
        .query(&mut admin)
        .unwrap();
    let _: redis::Value = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal"][..])
        .query(&mut admin)
        .unwrap();
}

/// Hits until a decision is not degraded (the server is used again), within `budget`.
async fn until_recovered(limiter: &Limiter, rules: &Rules, budget: Duration) -> Duration {
    let started = Instant::now();
    while started.elapsed() < budget {
        if let Ok(decision) = limiter.hit("recovery", rules, 1).await {
            if !decision.degraded {
                return started.elapsed();
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not recovered within {budget:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limiter_boots_while_the_server_is_down_and_uses_it_once_it_is_up() {
    let mut server = RedisServer::start();
    server.stop();
    let limiter = Limiter::connect_with(&server.url(), options(FailurePolicy::Allow, 1000))
        .await
        .expect("no I/O while building a limiter");
    let rules: Rules = "100/minute".parse().unwrap();
    assert_eq!(limiter.breaker_state(), Some(BreakerState::Closed));
    for _ in 0..20 {
        let decision = limiter.hit("boot", &rules, 1).await.unwrap();
        assert!(decision.allowed && decision.degraded);
    }
    assert_ne!(
        limiter.breaker_state(),
        Some(BreakerState::Closed),
        "the refused connect opened it"
    );
    assert!(
        limiter.ping().await.unwrap_err().is_store_failure(),
        "ping reports the outage"
    );
    server.start_again();
    until_recovered(&limiter, &rules, Duration::from_secs(5)).await;
    assert_eq!(limiter.breaker_state(), Some(BreakerState::Closed));
    limiter.ping().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_under_load_follow_the_policy_while_the_server_is_stopped_and_started_again() {
    let mut server = RedisServer::start();
    let limiter = Limiter::connect_with(&server.url(), options(FailurePolicy::Deny, 1000))
        .await
        .unwrap();
    let rules: Rules = "1000000/minute".parse().unwrap();
    let load = |limiter: Limiter, rules: Rules| async move {
        let (mut decided, mut degraded, mut errors) = (0u32, 0u32, Vec::new());
        for _ in 0..400 {
            match limiter.hit("load", &rules, 1).await {
                Ok(decision) => {
                    decided += 1;
                    degraded += u32::from(decision.degraded);
                    assert!(!decision.degraded || !decision.allowed, "deny policy");
                }
                Err(err) => errors.push(err.to_string()),
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        (decided, degraded, errors)
    };
    let tasks: Vec<_> = (0..4)
        .map(|_| tokio::spawn(load(limiter.clone(), rules.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.stop();
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.start_again();
    let mut degraded_total = 0;
    for task in tasks {
        let (decided, degraded, errors) = task.await.unwrap();
        assert!(errors.is_empty(), "every call answered by the policy: {errors:?}");
        assert_eq!(decided, 400);
        degraded_total += degraded;
    }
    assert!(degraded_total > 0, "the outage was seen");
    until_recovered(&limiter, &rules, Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_opens_the_breaker_after_one_timeout_and_closes_it_after_sigcont() {
    let server = RedisServer::start();
    let limiter = Limiter::connect_with(&server.url(), options(FailurePolicy::Allow, 200))
        .await
        .unwrap();
    let rules: Rules = "100/minute".parse().unwrap();
    assert!(!limiter.hit("frozen", &rules, 1).await.unwrap().degraded);
    server.pause();
    let first = limiter.hit("frozen", &rules, 1).await.unwrap();
    assert!(first.degraded, "the timed-out call follows the policy");
    assert_ne!(
        limiter.breaker_state(),
        Some(BreakerState::Closed),
        "a timeout opens it"
    );
    for _ in 0..50 {
        assert!(limiter.hit("frozen", &rules, 1).await.unwrap().degraded);
    }
    server.resume();
    until_recovered(&limiter, &rules, Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_fallback_admits_this_process_share_and_hands_back_to_the_server() {
    let mut server = RedisServer::start();
    let limiter = Limiter::connect_with(
        &server.url(),
        options(FailurePolicy::Local, 500).with_instances(2),
    )
    .await
    .unwrap();
    let rules: Rules = "10/minute".parse().unwrap();
    assert!(!limiter.hit("shared", &rules, 1).await.unwrap().degraded);
    server.stop();
    let mut admitted = 0;
    for _ in 0..30 {
        let decision = limiter.hit("shared", &rules, 1).await.unwrap();
        assert!(decision.degraded, "local decisions say so");
        admitted += u32::from(decision.allowed);
    }
    // GCRA 10/minute, burst 10: this process's share is a burst of 5 over twice the period.
    assert_eq!(admitted, 5, "one process of two gets half the burst");
    server.start_again();
    until_recovered(&limiter, &rules, Duration::from_secs(5)).await;
    // The server was restarted empty: its own count starts over, and the local state was dropped.
    let decision = limiter.hit("shared", &rules, 1).await.unwrap();
    assert!(!decision.degraded && decision.allowed && decision.remaining == 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_a_missing_permission_and_a_bad_db_raise_under_allow() {
    let server = RedisServer::start_with(&["--requirepass", "right"]);
    let rules: Rules = "10/second".parse().unwrap();
    let port = server.port();
    let wrong = format!("redis://:wrong@127.0.0.1:{port}/");
    let limiter = Limiter::connect_with(&wrong, options(FailurePolicy::Allow, 1000))
        .await
        .unwrap();
    let err = limiter.hit("k", &rules, 1).await.unwrap_err();
    assert!(err.is_configuration(), "{err}");
    assert!(err.to_string().contains("password"), "names the setting: {err}");
    assert_eq!(
        limiter.breaker_state(),
        Some(BreakerState::Closed),
        "not an outage"
    );

    let mut admin = redis::Client::open(format!("redis://:right@127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "reader", "on", ">pw", "~*", "+@read", "+ping"][..])
        .query(&mut admin)
        .unwrap();
    let reader = format!("redis://reader:pw@127.0.0.1:{port}/");
    let limiter = Limiter::connect_with(&reader, options(FailurePolicy::Allow, 1000))
        .await
        .unwrap();
    let err = limiter.hit("k", &rules, 1).await.unwrap_err();
    assert!(err.is_configuration(), "{err}");
    assert!(err.to_string().contains("ACL"), "names the setting: {err}");

    let far = format!("redis://:right@127.0.0.1:{port}/99");
    let limiter = Limiter::connect_with(&far, options(FailurePolicy::Allow, 1000))
        .await
        .unwrap();
    let err = limiter.hit("k", &rules, 1).await.unwrap_err();
    assert!(
        err.is_configuration() && err.to_string().contains("db index"),
        "{err}"
    );
    assert!(limiter.ping().await.unwrap_err().is_configuration());
}

/// A password set on a running server (its clients dropped) is a configuration error on every call
/// after, under `allow`, on the blocking lane and on the pipelined connection. Redis answers a long
/// command from a client that has not authenticated with `ERR Protocol error: unauthenticated ...`
/// and closes the connection: the error names the password, and the connection is not used again (a
/// call written on it before its close shows would fail as an outage, and be admitted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_set_on_a_running_server_is_never_an_outage() {
    let rules: Rules = "1000/second".parse().unwrap();
    // Several rounds of the concurrent case: the races it guards (a call queued as the reader fails
    // the rest, a write failing before the refusal is read) show in some runs only.
    let rounds = [
        (true, 0),
        (false, 0),
        (false, 1),
        (false, 2),
        (false, 3),
        (false, 4),
        (false, 5),
    ];
    for (blocking, round) in rounds {
        let server = RedisServer::start();
        let limiter = Limiter::connect_with(&server.url(), options(FailurePolicy::Allow, 300))
            .await
            .unwrap();
        let hit = || async {
            if blocking {
                limiter.try_hit_blocking("k", &rules, 1, None).unwrap()
            } else {
                limiter.hit("k", &rules, 1).await
            }
        };
        assert!(!hit().await.unwrap().degraded);
        set_a_password_and_drop_the_clients(&server);
        if !blocking {
            // Calls pipelined together on the fresh connection: the server refuses the first and
            // never reads the rest; they fail alike instead of as an outage.
            let answers = futures_util::future::join_all((0..8).map(|_| hit())).await;
            for (call, answer) in answers.iter().enumerate() {
                assert!(
                    answer.as_ref().is_err_and(|err| err.is_configuration()),
                    "round {round}, pipelined call {call}: {answer:?}"
                );
            }
        }
        for call in 0..20 {
            let answer = hit().await;
            assert!(
                answer
                    .as_ref()
                    .is_err_and(|err| err.is_configuration() && err.to_string().contains("password")),
                "call {call}, blocking {blocking}: {answer:?}"
            );
        }
    }
}

/// The same over a Unix socket, where redis-rs's reconnecting connection carries the calls: a
/// connection that was answered `ERR Protocol error` is dropped for a fresh one, so the call after
/// is never written to the socket the server is closing (it failed as an outage, and was admitted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_set_on_a_running_server_is_never_an_outage_over_a_unix_socket() {
    let dir = std::env::temp_dir().join(format!("ratelock-unix-pass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("redis.sock").display().to_string();
    let rules: Rules = "1000/second".parse().unwrap();
    for round in 0..5 {
        let server = RedisServer::start_with(&["--unixsocket", &socket]);
        let limiter = Limiter::connect_with(
            &format!("redis+unix://{socket}"),
            options(FailurePolicy::Allow, 300),
        )
        .await
        .unwrap();
        assert!(!limiter.hit("k", &rules, 1).await.unwrap().degraded);
        set_a_password_and_drop_the_clients(&server);
        for call in 0..20 {
            let answer = limiter.hit("k", &rules, 1).await;
            assert!(
                answer
                    .as_ref()
                    .is_err_and(|err| err.is_configuration() && err.to_string().contains("password")),
                "round {round}, call {call}: {answer:?}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_wait_rides_out_an_outage_and_try_acquire_fails_fast() {
    let mut server = RedisServer::start();
    let store = Store::connect(
        &server.url(),
        &StoreOptions::default().with_timeout(Duration::from_millis(300)),
    )
    .await
    .unwrap();
    let lock = DistributedLock::new(&store, "outage", LockOptions::default()).unwrap();
    lock.try_acquire()
        .await
        .unwrap()
        .unwrap()
        .release()
        .await
        .unwrap();
    server.stop();
    let err = lock.try_acquire().await.unwrap_err();
    assert!(err.is_store_failure(), "{err}");
    let waiting = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.acquire(Duration::from_secs(8)).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.start_again();
    let guard = tokio::time::timeout(Duration::from_secs(9), waiting)
        .await
        .expect("bounded")
        .unwrap()
        .expect("granted once the server is back, within the wait's budget");
    assert!(guard.fencing_token() > 0);
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_url_builds_with_no_sentinel_up_and_follows_the_policy() {
    let mut sentinel = RedisServer::start();
    sentinel.stop();
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster", sentinel.port());
    let limiter = Limiter::connect_with(&url, options(FailurePolicy::Allow, 300))
        .await
        .expect("no I/O while building a limiter, behind Sentinel too");
    let rules: Rules = "10/second".parse().unwrap();
    let decision = limiter.hit("sentinel", &rules, 1).await.unwrap();
    assert!(decision.allowed && decision.degraded);
    assert!(limiter.ping().await.unwrap_err().is_store_failure());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limiter_in_shadow_lets_a_degraded_denial_through_and_says_it_would_deny() {
    let mut server = RedisServer::start();
    server.stop();
    let limiter = Limiter::connect_with(&server.url(), options(FailurePolicy::Deny, 500).with_shadow(true))
        .await
        .expect("no I/O while building a limiter");
    let rules: Rules = "100/minute".parse().unwrap();
    for _ in 0..3 {
        let decision = limiter.hit("shadowed outage", &rules, 1).await.unwrap();
        assert!(decision.degraded, "the failure policy answered");
        assert!(
            decision.allowed && decision.would_deny,
            "shadow lets the policy's denial through and says so: {decision:?}"
        );
    }
}
