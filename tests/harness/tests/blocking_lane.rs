//! The Redis store's blocking connection (`Limiter::try_hit_blocking`) against a real server: it opens
//! on first use within that call's timeout, answers on the calling thread when free, declines when busy,
//! never replays a timed-out hit, reloads the script after SCRIPT FLUSH, sends callers to the async path
//! while the server is down, and finds a connection the server closed (CLIENT KILL, an idle timeout)
//! before writing to it, so no call fails for it.

use std::time::{Duration, Instant};

use ratelock::{Limiter, LimiterOptions, Rules};
use ratelock_testkit::{eventually, RedisServer};

/// A limiter on `server` whose blocking connection is open (its first blocking call opens it).
async fn limiter(server: &RedisServer, timeout_ms: u64) -> Limiter {
    let mut options = LimiterOptions::default();
    options.store.timeout = Duration::from_millis(timeout_ms);
    let limiter = Limiter::connect_with(&server.url(), options).await.unwrap();
    let rules: Rules = "1/second".parse().unwrap();
    let asked = Instant::now();
    let first = limiter.try_peek_blocking("warm", &rules, 1, None);
    assert!(
        first.expect("the first call opens the lane").is_ok(),
        "the first call is answered"
    );
    assert!(
        asked.elapsed() < Duration::from_millis(timeout_ms),
        "opening stays within the call's timeout"
    );
    limiter
}

/// Makes the server sleep for `seconds` on another connection, from another thread, and returns once
/// it is asleep (a PING on a third connection goes unanswered).
fn server_sleeps(server: &RedisServer, seconds: f64) -> std::thread::JoinHandle<()> {
    let mut blocker = server.connection();
    let sleeper = std::thread::spawn(move || {
        let _: redis::RedisResult<()> = redis::cmd("DEBUG").arg("SLEEP").arg(seconds).query(&mut blocker);
    });
    eventually("the server falling asleep", || {
        let mut probe = std::net::TcpStream::connect(("127.0.0.1", server.port())).ok()?;
        probe.set_read_timeout(Some(Duration::from_millis(20))).ok()?;
        std::io::Write::write_all(&mut probe, b"PING\r\n").ok()?;
        let mut reply = [0u8; 7];
        std::io::Read::read(&mut probe, &mut reply).is_err().then_some(())
    });
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

    let sleeper = server_sleeps(&server, 0.8);
    let occupant = {
        let (limiter, rules) = (limiter.clone(), rules.clone());
        std::thread::spawn(move || limiter.try_hit_blocking("k", &rules, 1, None))
    };
    // The occupant's thread has started and taken the lane by then, on a loaded machine too.
    std::thread::sleep(Duration::from_millis(150));
    let asked = Instant::now();
    assert!(
        limiter.try_hit_blocking("k", &rules, 1, None).is_none(),
        "a busy lane must send the caller to the async path"
    );
    assert!(
        asked.elapsed() < Duration::from_millis(250),
        "declining must not wait (the lane stays busy some 600 ms more)"
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
async fn while_the_server_is_down_the_lane_answers_at_once_through_the_breaker() {
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
    // The closed connection is found before anything is written to it, and no new one can be opened:
    // the refused connect opens the breaker, and the lane answers the outage itself (nothing was sent,
    // so nothing is lost or doubled), as does the async path, which shares the breaker.
    let refused = limiter.try_hit_blocking("k", &rules, 1, None).unwrap();
    assert!(refused.unwrap_err().is_store_failure());
    let open = limiter.try_hit_blocking("k", &rules, 1, None).unwrap();
    assert!(open.unwrap_err().to_string().contains("circuit breaker open"));
    assert!(limiter.hit("k", &rules, 1).await.unwrap_err().is_store_failure());

    server.restart();
    let decision = eventually("the lane's reconnection", || {
        limiter.try_hit_blocking("k", &rules, 1, None)?.ok()
    });
    assert_eq!(decision.remaining, 99, "restarted without persistence");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_server_closes_fail_no_call_and_counts_stay_exact() {
    let server = RedisServer::start();
    let limiter = limiter(&server, 1_000).await;
    let rules: Rules = "1000/day".parse().unwrap();
    let (mut failed, mut admitted) = (0, 0);
    // Bounded: 60 kills, one call after each (and one before).
    for _ in 0..60 {
        match limiter.try_hit_blocking("killed", &rules, 1, None) {
            Some(Ok(decision)) => admitted += u64::from(decision.allowed),
            Some(Err(err)) => {
                eprintln!("failed: {err}");
                failed += 1
            }
            None => panic!("the lane must reconnect inline, not decline"),
        }
        server.kill_clients();
        // Let the close reach this side (it is the peer's FIN that the lane looks for).
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        failed, 0,
        "a closed connection must be found before a call is written to it"
    );
    let left = limiter
        .try_peek_blocking("killed", &rules, 1, None)
        .expect("the lane reconnects inline")
        .unwrap()
        .remaining;
    // A peek answers as if it spent its own cost.
    assert_eq!(1000 - left - 1, admitted, "every admitted call counted once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_timeout_of_the_server_fails_no_call() {
    let server = RedisServer::start_with(&["--timeout", "1"]);
    let limiter = limiter(&server, 1_000).await;
    let rules: Rules = "100/hour".parse().unwrap();
    for round in 0..3 {
        // Idle past the server's 1 s timeout: it closes the lane's connection.
        std::thread::sleep(Duration::from_millis(2_200));
        let decision = limiter
            .try_hit_blocking("idle", &rules, 1, None)
            .expect("the lane reconnects inline")
            .unwrap_or_else(|err| panic!("round {round}: {err}"));
        assert_eq!(decision.remaining, 99 - round);
    }
}
