//! The async Redis path through connections the server closes: `CLIENT KILL` in a bounded loop and a
//! server `timeout 1` fail no hit, peek or lock call (the close is found before a call is written), the
//! counts stay exact (nothing that may have run is sent again), a lock wait survives its waiter's
//! connections being killed, a release that fails on the transport keeps the guard, and calls written
//! directly and through the writer task keep their order.

use std::time::Duration;

use ratelock::{DistributedLock, Limiter, LimiterOptions, LockOptions, Rules, Store, StoreOptions};
use ratelock_testkit::RedisServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hits_and_locks_fail_nothing_when_the_server_kills_their_connections() {
    let server = RedisServer::start();
    let limiter = Limiter::connect(&server.url()).await.unwrap();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let lock = DistributedLock::new(&store, "killed", LockOptions::default()).unwrap();
    let rules: Rules = "1000/day".parse().unwrap();
    let (mut failed, mut admitted) = (Vec::new(), 0u64);
    // Bounded: 50 kills, a hit and a lock round after each.
    for round in 0..50 {
        match limiter.hit("killed", &rules, 1).await {
            Ok(decision) => admitted += u64::from(decision.allowed),
            Err(err) => failed.push(format!("hit {round}: {err}")),
        }
        match lock.try_acquire().await {
            Ok(Some(guard)) => {
                if let Err(err) = guard.release().await {
                    failed.push(format!("release {round}: {err}"));
                }
            }
            Ok(None) => failed.push(format!("lock {round}: busy")),
            Err(err) => failed.push(format!("lock {round}: {err}")),
        }
        server.kill_clients();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(failed.is_empty(), "{} failed calls: {failed:?}", failed.len());
    let left = limiter.peek("killed", &rules, 1).await.unwrap().remaining;
    // A peek answers as if it spent its own cost.
    assert_eq!(1000 - left - 1, admitted, "every admitted hit counted once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_timeout_of_the_server_fails_no_call() {
    let server = RedisServer::start_with(&["--timeout", "1"]);
    let limiter = Limiter::connect(&server.url()).await.unwrap();
    let rules: Rules = "100/hour".parse().unwrap();
    for round in 0..2u64 {
        tokio::time::sleep(Duration::from_millis(2_200)).await;
        let decision = limiter
            .hit("idle", &rules, 1)
            .await
            .unwrap_or_else(|err| panic!("round {round}: {err}"));
        assert_eq!(decision.remaining, 99 - round);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_wait_survives_its_connections_being_killed() {
    let server = RedisServer::start();
    let holder_store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let waiter_store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let holder = DistributedLock::new(&holder_store, "waited", LockOptions::default()).unwrap();
    let waiter = DistributedLock::new(&waiter_store, "waited", LockOptions::default()).unwrap();
    let held = holder.try_acquire().await.unwrap().expect("free");
    let waiting = tokio::spawn(async move { waiter.acquire(Duration::from_secs(8)).await });
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        server.kill_clients();
    }
    // The holder's own connection was killed too: its release goes out on a fresh one.
    held.release().await.unwrap();
    let granted = tokio::time::timeout(Duration::from_secs(9), waiting)
        .await
        .expect("the wait ends within its budget")
        .unwrap()
        .expect("granted after the release, despite the killed connections");
    assert!(granted.fencing_token() > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_that_fails_on_the_transport_keeps_the_guard() {
    let mut server = RedisServer::start();
    let mut options = StoreOptions::default();
    options.timeout = Duration::from_millis(300);
    let store = Store::connect(&server.url(), &options).await.unwrap();
    let lock = DistributedLock::new(&store, "kept", LockOptions::default()).unwrap();
    let mut guard = lock.try_acquire().await.unwrap().expect("free");
    server.stop();
    let failed = guard.try_release().await.unwrap_err();
    assert!(failed.is_store_failure(), "{failed}");
    server.restart();
    // Restarted without persistence: the lease is gone, so the retried release finds nothing to
    // release; the point is that the guard was still there to retry with. The first retries may still
    // meet the open circuit breaker (the server failed a moment ago): they keep the guard too.
    let mut again = guard.try_release().await;
    for _ in 0..100 {
        match &again {
            Err(err) if err.is_store_failure() => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                again = guard.try_release().await;
            }
            _ => break,
        }
    }
    assert_eq!(again.unwrap(), ratelock::Released::NotHeld);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_larger_than_the_socket_takes_at_once_goes_out_whole_and_in_order() {
    // A lone caller writes its call itself; calls made while it waits go through the writer task. With
    // the server paused, a call at the key-size bound and the calls made meanwhile all arrive whole and
    // in order, and every count stays exact. (A call the socket takes only in part is the pipelined
    // connection's own unit test.)
    let server = RedisServer::start();
    let options = LimiterOptions::default().with_timeout(Duration::from_secs(5));
    let store = Store::connect(&server.url(), &options.store).await.unwrap();
    let limiter = Limiter::with_store(store, options).unwrap();
    let big_key = "k".repeat(ratelock::MAX_KEY_BYTES);
    let (big_rules, small): (Rules, Rules) = ("1000/hour".parse().unwrap(), "1000/day".parse().unwrap());
    // Bounded: 3 rounds of one big call (first, alone) and 8 small ones, the server paused meanwhile.
    for round in 0..3u64 {
        limiter.hit("small", &small, 1).await.unwrap();
        server.pause();
        let big = limiter.hit(&big_key, &big_rules, 1);
        let smalls = futures_util::future::join_all((0..8).map(|_| limiter.hit("small", &small, 1)));
        let resume = async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            server.resume();
        };
        let (big, smalls, ()) = tokio::join!(big, smalls, resume);
        let big = big.unwrap_or_else(|err| panic!("round {round}: {err}"));
        assert_eq!(big.remaining, 999 - round, "round {round}");
        for decision in smalls {
            assert!(decision.unwrap().allowed, "round {round}");
        }
    }
    let left = limiter.peek("small", &small, 1).await.unwrap().remaining;
    assert_eq!(left, 1000 - 27 - 1, "every small hit counted once");
}

/// A server that takes the connection and the preamble (AUTH, SELECT) but never answers it, or
/// closes without answering: the call was never sent, and every path says so ("nothing was sent" or
/// "nothing else was sent"), never "the command may have run". The listener answers no byte; each
/// connection is held for 1.5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preamble_without_an_answer_is_a_connect_failure_not_a_call_that_may_have_run() {
    for closes in [false, true] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let held = std::thread::spawn(move || {
            let mut kept = Vec::new();
            listener.set_nonblocking(true).unwrap();
            // Both limiters' connects come within their 300 ms timeouts.
            let until = std::time::Instant::now() + Duration::from_millis(1500);
            while std::time::Instant::now() < until {
                match listener.accept() {
                    Ok((mut socket, _)) => {
                        let mut preamble = [0u8; 64];
                        socket.set_nonblocking(false).unwrap();
                        let _ = std::io::Read::read(&mut socket, &mut preamble);
                        if closes {
                            drop(socket);
                        } else {
                            kept.push(socket);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        let url = format!("redis://:pw@127.0.0.1:{port}/3?server_code=lua");
        let options = LimiterOptions::default().with_timeout(Duration::from_millis(300));
        let limiter = Limiter::connect_with(&url, options).await.unwrap();
        let rules: Rules = "10/second".parse().unwrap();
        let blocking = limiter.try_hit_blocking("k", &rules, 1, None).unwrap();
        // A second limiter: the first one's breaker is open now.
        let options = LimiterOptions::default().with_timeout(Duration::from_millis(300));
        let other = Limiter::connect_with(&url, options).await.unwrap();
        let pipelined = other.hit("k", &rules, 1).await;
        for (path, answer) in [("blocking lane", blocking), ("pipelined", pipelined)] {
            let err = answer.unwrap_err();
            let said = err.to_string();
            assert!(
                matches!(err, ratelock::Error::StoreUnavailable(_))
                    && said.contains("nothing")
                    && !said.contains("may have run"),
                "closes {closes}, {path}: {err:?}"
            );
        }
        held.join().unwrap();
    }
}
