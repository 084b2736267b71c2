//! The Redis store's blocking connection (`Limiter::try_hit_blocking`) against a real server: it opens
//! on first use without delaying that call, answers on the calling thread when free, declines when busy,
//! never replays a timed-out hit, reloads the script after SCRIPT FLUSH, and sends callers to the async
//! path while the server is down.

use std::time::{Duration, Instant};

use ratelock::{Limiter, LimiterOptions, Rules};
use ratelock_testkit::{eventually, RedisServer};

/// A limiter on `server` whose blocking connection is open (its first blocking call only starts it).
async fn limiter(server: &RedisServer, timeout_ms: u64) -> Limiter {
    let mut options = LimiterOptions::default();
    options.store.timeout = Duration::from_millis(timeout_ms);
    let limiter = Limiter::connect_with(&server.url(), options).await.unwrap();
    let rules: Rules = "1/second".parse().unwrap();
    let asked = Instant::now();
    assert!(
        limiter.try_peek_blocking("warm", &rules, 1, None).is_none(),
        "the lane opens on first use"
    );
    assert!(
        asked.elapsed() < Duration::from_millis(50),
        "opening must not delay the call"
    );
    wait_for_lane(&limiter);
    limiter
}

fn wait_for_lane(limiter: &Limiter) -> ratelock::Decision {
    let rules: Rules = "1/second".parse().unwrap();
    eventually("opening the lane", || {
        limiter.try_peek_blocking("warm", &rules, 1, None)?.ok()
    })
}

/// Makes the server sleep for `seconds` on another connection, from another thread.
fn server_sleeps(server: &RedisServer, seconds: f64) -> std::thread::JoinHandle<()> {
    let mut blocker = server.connection();
    let sleeper = std::thread::spawn(move || {
        let _: redis::RedisResult<()> = redis::cmd("DEBUG").arg("SLEEP").arg(seconds).query(&mut blocker);
    });
    std::thread::sleep(Duration::from_millis(50));
    sleeper
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_free_lane_answers_and_a_busy_one_declines_at_once() {
    let server = RedisServer::start();
    let limiter = limiter(&server, 2_000).await;
    let rules: Rules = "10/minute".parse().unwrap();
    let first = limiter
        .try_hit_blocking("k", &rules, 1, None)
        .expect("the lane is free");
    assert_eq!(first.unwrap().remaining, 9);

    let sleeper = server_sleeps(&server, 0.5);
    let occupant = {
        let (limiter, rules) = (limiter.clone(), rules.clone());
        std::thread::spawn(move || limiter.try_hit_blocking("k", &rules, 1, None))
    };
    std::thread::sleep(Duration::from_millis(50));
    let asked = Instant::now();
    assert!(
        limiter.try_hit_blocking("k", &rules, 1, None).is_none(),
        "a busy lane must send the caller to the async path"
    );
    assert!(
        asked.elapsed() < Duration::from_millis(100),
        "declining must not wait"
    );
    let occupied = occupant.join().unwrap().expect("the occupant had the lane");
    assert_eq!(occupied.unwrap().remaining, 8);
    sleeper.join().unwrap();
    // The async path and the lane share one state.
    assert_eq!(limiter.hit("k", &rules, 1).await.unwrap().remaining, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_blocking_hit_runs_once_and_the_lane_recovers() {
    let server = RedisServer::start();
    let limiter = limiter(&server, 200).await;
    let rules: Rules = "10/minute".parse().unwrap();
    let warm = limiter.try_hit_blocking("k", &rules, 1, None).unwrap();
    assert_eq!(warm.unwrap().remaining, 9);

    let sleeper = server_sleeps(&server, 0.6);
    let err = limiter
        .try_hit_blocking("k", &rules, 1, None)
        .expect("the lane was free")
        .unwrap_err();
    assert!(err.is_timeout(), "expected a timeout, got {err:?}");
    sleeper.join().unwrap();

    let decision = eventually("the lane's recovery", || {
        limiter.try_peek_blocking("k", &rules, 1, None)?.ok()
    });
    assert_eq!(decision.remaining, 7, "the timed-out hit must run exactly once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lane_reloads_the_script_after_script_flush() {
    let server = RedisServer::start();
    let limiter = limiter(&server, 1_000).await;
    let rules: Rules = "5/minute; 100/hour using sliding_log".parse().unwrap();
    assert_eq!(
        limiter
            .try_hit_blocking("k", &rules, 2, None)
            .unwrap()
            .unwrap()
            .remaining,
        3
    );
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(
        limiter
            .try_hit_blocking("k", &rules, 2, None)
            .unwrap()
            .unwrap()
            .remaining,
        1
    );
    let over = limiter
        .try_hit_blocking("k", &rules, 9, None)
        .unwrap()
        .unwrap_err();
    assert_eq!(over.code(), "COST_EXCEEDS_CAPACITY", "{over:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_the_server_is_down_callers_go_to_the_async_path() {
    let mut server = RedisServer::start();
    let limiter = limiter(&server, 300).await;
    let rules: Rules = "100/minute".parse().unwrap();
    assert!(
        limiter
            .try_hit_blocking("k", &rules, 1, None)
            .unwrap()
            .unwrap()
            .allowed
    );
    server.stop();
    // The open connection breaks: that call fails (it may have been sent), the next cannot connect.
    let broken = limiter
        .try_hit_blocking("k", &rules, 1, None)
        .expect("the lane was open");
    assert!(broken.unwrap_err().is_store_failure());
    assert!(limiter.try_hit_blocking("k", &rules, 1, None).is_none());
    assert!(limiter.hit("k", &rules, 1).await.unwrap_err().is_store_failure());

    server.restart();
    let decision = eventually("the lane's reconnection", || {
        limiter.try_hit_blocking("k", &rules, 1, None)?.ok()
    });
    assert_eq!(decision.remaining, 99, "restarted without persistence");
}
