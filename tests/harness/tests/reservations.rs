//! Reservations on a real redis-server: concurrent waiters are served in booking order, paced by the
//! rule, with one script call each (nobody polls); a dropped wait gives its booking back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ratelock::{FailurePolicy, Limiter, LimiterOptions};
use ratelock_testkit::module::command_calls;
use ratelock_testkit::redis_server::RedisServer;

/// Every call of `limit.lua`, whichever way the client sent it.
fn script_calls(server: &RedisServer) -> u64 {
    ["evalsha", "fcall", "eval"]
        .into_iter()
        .map(|command| command_calls(server, command))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_are_served_in_booking_order_with_one_call_each() {
    let server = RedisServer::start();
    let limiter = Arc::new(Limiter::connect(&server.url()).await.unwrap());
    let rules = Arc::new(limiter.rules("10/second burst 1").unwrap());
    limiter.ping().await.unwrap();
    let before = script_calls(&server);
    let started = Instant::now();
    let mut waiters = Vec::new();
    for _ in 0..6 {
        let (limiter, rules) = (limiter.clone(), rules.clone());
        waiters.push(tokio::spawn(async move {
            let decision = limiter
                .wait("partner", &rules, 1, Duration::from_secs(5))
                .await
                .unwrap();
            assert!(decision.allowed);
            (decision.retry_after, started.elapsed())
        }));
    }
    let mut served = Vec::new();
    for waiter in waiters {
        served.push(waiter.await.unwrap());
    }
    served.sort();
    // One slot every 100 ms, each booked once: the i-th to book waits the longest but i-th, and acts
    // no sooner than i slots after the start (a booking made late only waits less).
    for (i, (wait, acted)) in served.iter().enumerate() {
        assert!(
            *acted + Duration::from_millis(5) >= Duration::from_millis(100 * i as u64),
            "waiter {i} acted at {acted:?}, before its slot: {served:?}"
        );
        assert!(*wait <= Duration::from_millis(100 * i as u64), "{served:?}");
    }
    for pair in served.windows(2) {
        assert!(pair[1].1 >= pair[0].1, "served out of booking order: {served:?}");
    }
    assert_eq!(
        script_calls(&server) - before,
        6,
        "one round trip per waiter, no polling"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_wait_gives_its_booking_back() {
    let server = RedisServer::start();
    let limiter = Limiter::connect(&server.url()).await.unwrap();
    let rules = limiter.rules("1/second burst 1").unwrap();
    assert!(limiter.hit("job", &rules, 1).await.unwrap().allowed);
    // Booked a second ahead, then given up after 50 ms.
    let gave_up = tokio::time::timeout(
        Duration::from_millis(50),
        limiter.wait("job", &rules, 1, Duration::from_secs(5)),
    )
    .await;
    assert!(gave_up.is_err());
    // The refund runs on the runtime: the next booking gets the freed slot (under a second), not the
    // one after it (two seconds).
    let mut next = Duration::MAX;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let peeked = limiter.peek("job", &rules, 1).await.unwrap();
        next = peeked.retry_after;
        if next < Duration::from_secs(1) {
            break;
        }
    }
    assert!(
        next < Duration::from_secs(1),
        "the slot was not given back: {next:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_wait_booked_by_the_local_fallback_refunds_nothing_on_the_server() {
    // Booked in memory during an outage (on_error=local), then dropped once the server is back: its
    // refund went to the server, giving back a unit the server had never lent it.
    let server = RedisServer::start();
    let options = LimiterOptions::default()
        .with_on_error(FailurePolicy::Local)
        .with_timeout(Duration::from_millis(200));
    let limiter = Limiter::connect_with(&server.url(), options).await.unwrap();
    let rules = limiter.rules("12/minute burst 1").unwrap();
    let spent = limiter.hit("job", &rules, 1).await.unwrap();
    assert!(
        spent.allowed && !spent.degraded,
        "spent on the server: the next unit in 5 s"
    );
    server.pause();
    assert!(
        limiter.hit("job", &rules, 1).await.unwrap().degraded,
        "the local fallback answers"
    );
    let waiting = tokio::spawn({
        let limiter = limiter.clone();
        let rules = rules.clone();
        async move { limiter.wait("job", &rules, 1, Duration::from_secs(10)).await }
    });
    tokio::time::sleep(Duration::from_millis(400)).await; // booked locally, 5 s ahead
    server.resume();
    let recovery = limiter.rules("1000/second").unwrap();
    let started = std::time::Instant::now();
    while limiter
        .hit("recovery", &recovery, 1)
        .await
        .map_or(true, |d| d.degraded)
    {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the server is used again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    waiting.abort();
    let _ = waiting.await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let on_the_server = limiter.peek("job", &rules, 1).await.unwrap();
    assert!(!on_the_server.degraded);
    assert!(
        !on_the_server.allowed,
        "the server's unit was given back by a refund of a local booking"
    );
}
