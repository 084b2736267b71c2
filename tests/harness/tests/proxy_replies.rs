//! A proxy's error replies, sorted once for every path (tests/harness/src/answering_proxy.rs answers the
//! script calls): the listed outage replies of twemproxy and Envoy follow the failure policy; a code
//! nobody knows is a protocol error even under `on_error=allow`; a MOVED from a Cluster node named by a
//! plain URL is a configuration error naming redis+cluster://.

use ratelock::store::connection_core::PROXY_OUTAGES;
use ratelock::{FailurePolicy, Limiter, LimiterOptions};
use ratelock_testkit::answering_proxy::AnsweringProxy;
use ratelock_testkit::RedisServer;

async fn allowing(proxy: &AnsweringProxy) -> Limiter {
    let mut options = LimiterOptions::default();
    options.on_error = FailurePolicy::Allow;
    Limiter::connect_with(&proxy.url(), options).await.unwrap()
}

#[tokio::test]
async fn listed_proxy_outages_follow_the_failure_policy() {
    let server = RedisServer::start();
    let rules = "5/second".parse().unwrap();
    for reply in PROXY_OUTAGES {
        let proxy = AnsweringProxy::start(server.port(), &format!("-{reply}"));
        let decision = allowing(&proxy).await.hit("k", &rules, 1).await.unwrap();
        assert!(decision.allowed && decision.degraded, "{reply}: {decision:?}");
    }
}

#[tokio::test]
async fn an_unknown_reply_raises_whatever_the_policy() {
    let server = RedisServer::start();
    let rules = "5/second".parse().unwrap();
    for reply in [
        "-NEWCODE never seen",
        "-ERR upstream failure while decoding",
        "-ERR script timeout parameter",
    ] {
        let proxy = AnsweringProxy::start(server.port(), reply);
        let error = allowing(&proxy).await.hit("k", &rules, 1).await.unwrap_err();
        assert!(error.is_protocol(), "{reply}: {error}");
    }
}

#[tokio::test]
async fn moved_on_a_plain_url_names_the_cluster_url() {
    let server = RedisServer::start();
    let rules = "5/second".parse().unwrap();
    let proxy = AnsweringProxy::start(server.port(), "-MOVED 3999 127.0.0.1:6381");
    let error = allowing(&proxy).await.hit("k", &rules, 1).await.unwrap_err();
    assert!(error.is_configuration(), "{error}");
    assert!(error.to_string().contains("redis+cluster://"), "{error}");
}

#[tokio::test]
async fn an_unreadable_reply_stream_raises_on_every_call() {
    let server = RedisServer::start();
    let rules = "5/second".parse().unwrap();
    let proxy = AnsweringProxy::start(server.port(), "!!!garbage");
    let limiter = allowing(&proxy).await;
    for call in 0..6 {
        let error = limiter.hit("k", &rules, 1).await.unwrap_err();
        assert!(error.is_protocol(), "call {call}: {error}");
    }
}

/// A fair lock's waiter gives up (WaitTimeout) and its place must leave the queue. The proxy answers
/// only that removal (`withdraw`): an outage leaves the place to lapse and the wait's own error stands;
/// a reply nobody knows is the error returned, not dropped.
#[tokio::test]
async fn a_failed_withdrawal_is_reported_unless_it_is_an_outage() {
    use ratelock::{FairLock, LockOptions, ReadWriteLock, Store, StoreOptions};
    let server = RedisServer::start();
    let direct = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    for (reply, protocol) in [("-NEWCODE never seen", true), ("-ERR Connection refused", false)] {
        let proxy = AnsweringProxy::start_matching(server.port(), reply, "withdraw");
        let through = Store::connect(&proxy.url(), &StoreOptions::default())
            .await
            .unwrap();
        let wait = std::time::Duration::from_millis(150);

        let name = format!("withdraw-fair-{protocol}");
        let holder = FairLock::new(&direct, &name, LockOptions::default()).unwrap();
        let _held = holder.try_acquire().await.unwrap().unwrap();
        let error = FairLock::new(&through, &name, LockOptions::default())
            .unwrap()
            .acquire(wait)
            .await
            .unwrap_err();
        assert_eq!(error.is_protocol(), protocol, "fair lock, {reply}: {error}");
        assert_eq!(error.is_wait_timeout(), !protocol, "fair lock, {reply}: {error}");

        let name = format!("withdraw-rw-{protocol}");
        let reader = ReadWriteLock::new(&direct, &name, LockOptions::default()).unwrap();
        let _read = reader.try_acquire_read().await.unwrap().unwrap();
        let error = ReadWriteLock::new(&through, &name, LockOptions::default())
            .unwrap()
            .acquire_write(wait)
            .await
            .unwrap_err();
        assert_eq!(error.is_protocol(), protocol, "write side, {reply}: {error}");
    }
}

/// A crossed reply on a live connection (the proxy answers with the first call's reply, well formed
/// but another call's): a protocol error on every later call, never a decision, whatever the policy.
#[tokio::test]
async fn a_crossed_reply_on_a_live_connection_is_a_protocol_error() {
    use ratelock_testkit::answering_proxy::REPLAY_EARLIER_REPLY;
    let server = RedisServer::start();
    let rules = "5/second".parse().unwrap();
    let proxy = AnsweringProxy::start(server.port(), REPLAY_EARLIER_REPLY);
    let limiter = allowing(&proxy).await;
    assert!(
        !limiter.hit("k", &rules, 1).await.unwrap().degraded,
        "the first call is real"
    );
    for call in 1..5 {
        let error = limiter.hit("k", &rules, 1).await.unwrap_err();
        assert!(error.is_protocol(), "call {call}: {error}");
    }
}
