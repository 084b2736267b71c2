//! Redlock over 5 independent redis-servers (`redlock://`): one holder at a time with the largest of
//! the servers' fencing tokens, still working with 2 of 5 stopped, a clean typed error with 3 of 5
//! stopped, the lost signal when a majority loses the lease, and a redlock:// URL refused where one
//! Redis is needed (a limiter given a Redlock store does not compile: see `AnyLockStore`'s docs);
//! a majority refusing for good is that error, and a failed attempt's grants are given back even
//! where a server answers only later; the holder counts its lease as ending at Redlock's validity time.

use std::time::{Duration, Instant};

use ratelock::key::LockKeys;
use ratelock::{AnyLockStore, DistributedLock, Store, StoreOptions};
use ratelock_testkit::stores::{lease_options, take_turns};
use ratelock_testkit::RedisServer;

fn servers() -> Vec<RedisServer> {
    (0..5).map(|_| RedisServer::start()).collect()
}

fn url(servers: &[RedisServer]) -> String {
    let hosts: Vec<String> = servers
        .iter()
        .map(|s| format!("127.0.0.1:{}", s.port()))
        .collect();
    format!("redlock://{}", hosts.join(","))
}

async fn store(servers: &[RedisServer]) -> AnyLockStore {
    let options = StoreOptions::default().with_timeout(Duration::from_millis(300));
    AnyLockStore::connect(&url(servers), &options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_holder_at_a_time_with_the_largest_token() {
    let servers = servers();
    let store = store(&servers).await;
    let tokens = take_turns(
        &store,
        "redlock:job",
        lease_options(5_000, true, false),
        6,
        8,
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(tokens.len(), 48);

    // The token is the largest of the servers' own tokens for that grant.
    let lock = DistributedLock::new(&store, "redlock:token", lease_options(5_000, false, false)).unwrap();
    let guard = lock.try_acquire().await.unwrap().expect("free");
    let keys = LockKeys::new("rl", b"redlock:token");
    let mut largest = 0u64;
    for server in &servers {
        let counter: u64 = redis::cmd("GET")
            .arg(&keys.fence)
            .query(&mut server.connection())
            .unwrap();
        largest = largest.max(counter);
    }
    assert_eq!(guard.fencing_token(), largest);
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_of_five_down_still_works_three_down_fails_cleanly() {
    let mut servers = servers();
    let store = store(&servers).await;
    let lock = DistributedLock::new(&store, "redlock:outage", lease_options(2_000, false, false)).unwrap();
    servers[0].stop();
    servers[1].stop();
    let guard = lock
        .try_acquire()
        .await
        .unwrap()
        .expect("a majority of 3 answers");
    assert!(guard.extend(Duration::from_secs(2)).await.is_ok());
    assert!(lock.is_locked().await.unwrap());
    guard.release().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());

    servers[2].stop();
    let started = Instant::now();
    let err = lock.try_acquire().await.unwrap_err();
    assert!(err.is_store_failure(), "{err:?}");
    assert!(err.to_string().contains("2 of 5 servers answered"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "a failed attempt must not hang"
    );
    let err = lock.acquire(Duration::from_millis(500)).await.unwrap_err();
    assert!(err.is_store_failure() || err.code() == "WAIT_TIMEOUT", "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_lease_ends_for_its_holder_at_its_validity_time() {
    // Redlock grants a lease only if the majority answered within its ttl less the clocks' drift (1%
    // plus 2 ms): the holder counts the lease as ending there too, not at the full ttl, since a
    // server with a fast clock may already have let it go. Not renewed, a 5 s lease ends 4.948 s after
    // its request was sent, which falls between `started` and `granted`. `is_lost` compares the clock
    // with that end, so no timer's wake-up is measured: asked just after it, the lease is lost (at the
    // full ttl it would not be yet); asked just before it (when the sleep woke in time), it is held.
    let servers = servers();
    let store = store(&servers).await;
    let lock = DistributedLock::new(&store, "redlock:validity", lease_options(5_000, false, false)).unwrap();
    let started = Instant::now();
    let guard = lock.try_acquire().await.unwrap().expect("free");
    let granted = Instant::now();
    let validity = Duration::from_millis(4_948);
    tokio::time::sleep_until((started + validity - Duration::from_millis(20)).into()).await;
    let asked = Instant::now();
    let lost_before = guard.is_lost();
    if asked < started + validity {
        assert!(
            !lost_before,
            "lost {:?} after the request, before its validity time",
            asked - started
        );
    }
    tokio::time::sleep_until((granted + validity + Duration::from_millis(2)).into()).await;
    let asked = Instant::now();
    assert!(
        guard.is_lost() || asked >= started + Duration::from_secs(5) + Duration::from_millis(50),
        "held {:?} after the grant: the lease runs to the full ttl, not to the validity time (4.948 s)",
        asked - granted
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lost_signal_fires_when_a_majority_loses_the_lease() {
    let servers = servers();
    let store = store(&servers).await;
    let lock = DistributedLock::new(&store, "redlock:lost", lease_options(600, true, false)).unwrap();
    let guard = lock.try_acquire().await.unwrap().expect("free");
    let keys = LockKeys::new("rl", b"redlock:lost");
    for server in &servers[..3] {
        let _: () = redis::cmd("DEL")
            .arg(&keys.lease)
            .query(&mut server.connection())
            .unwrap();
    }
    tokio::time::timeout(Duration::from_secs(3), guard.lost_signal().wait())
        .await
        .expect("the watchdog reports the loss");
    assert!(guard.is_lost());
}

#[tokio::test]
async fn a_redlock_url_is_refused_where_one_redis_is_needed() {
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let err = Store::connect(&url(&servers), &StoreOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT", "{err}");
    assert!(err.to_string().contains("distributed locks only"), "{err}");
    let err = AnyLockStore::connect("redlock://127.0.0.1:1,127.0.0.1:2", &StoreOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("at least 3 servers"), "{err}");
}

/// A majority refusing for good (an ACL without EVALSHA) is that configuration error, not "1 of 3
/// servers answered".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_majority_refusing_for_good_is_that_error() {
    use ratelock_testkit::answering_proxy::AnsweringProxy;
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let refusal = "-NOPERM this user has no permissions to run the 'evalsha' command";
    let proxies: Vec<AnsweringProxy> = servers[1..]
        .iter()
        .map(|server| AnsweringProxy::start(server.port(), refusal))
        .collect();
    let url = format!(
        "redlock://127.0.0.1:{},127.0.0.1:{},127.0.0.1:{}",
        servers[0].port(),
        proxies[0].port(),
        proxies[1].port()
    );
    let store = AnyLockStore::connect(&url, &StoreOptions::default())
        .await
        .unwrap();
    let lock = DistributedLock::new(&store, "redlock:noperm", lease_options(5_000, false, false)).unwrap();
    let error = lock.try_acquire().await.unwrap_err();
    assert!(error.is_configuration(), "{error}");
}

/// An attempt without a majority gives back what it took; a server that cannot be reached for that is
/// asked again until it answers, rather than left holding the lock for a whole lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minority_grant_is_given_back_once_its_server_answers_again() {
    use ratelock::store::ServerCode;
    use ratelock_testkit::answering_proxy::AnsweringProxy;
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let name = "redlock:minority";
    let ttl = lease_options(20_000, false, false);
    // Another owner holds the lock on servers 1 and 2: the attempt below gets only server 0.
    let mut others = Vec::new();
    for server in &servers[1..] {
        let single = Store::connect(&server.url(), &StoreOptions::default())
            .await
            .unwrap();
        let lock = DistributedLock::new(&single, name, ttl.clone()).unwrap();
        others.push((lock.try_acquire().await.unwrap().expect("free"), lock));
    }
    // Server 0's release (by EVALSHA of lock_release.lua) meets an outage while the proxy answers it.
    let release = ratelock::store::tagged_script(include_str!("../../../core/lua/lock_release.lua"));
    let release_sha = redis::Script::new(&release).get_hash().to_owned();
    let proxy = AnsweringProxy::start_matching(servers[0].port(), "-ERR Connection refused", &release_sha);
    let url = format!(
        "redlock://127.0.0.1:{},127.0.0.1:{},127.0.0.1:{}",
        proxy.port(),
        servers[1].port(),
        servers[2].port()
    );
    let options = StoreOptions::default().with_server_code(ServerCode::Scripts);
    let store = AnyLockStore::connect(&url, &options).await.unwrap();
    let lock = DistributedLock::new(&store, name, ttl.clone()).unwrap();
    assert!(lock.try_acquire().await.unwrap().is_none(), "no majority");

    let first = Store::connect(&servers[0].url(), &StoreOptions::default())
        .await
        .unwrap();
    let seen = DistributedLock::new(&first, name, ttl).unwrap();
    assert!(seen.is_locked().await.unwrap(), "server 0 granted the attempt");
    proxy.set_answering(false);
    freed_within(
        &seen,
        Duration::from_secs(3),
        "server 0 still holds the failed attempt's grant",
    )
    .await;
}

/// Waits until `seen` (one server's view of a lock) is free, failing with `still` after `limit`.
async fn freed_within(seen: &DistributedLock, limit: Duration, still: &str) {
    let until = Instant::now() + limit;
    while seen.is_locked().await.unwrap() {
        assert!(Instant::now() < until, "{still}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn giving_back_a_lost_hold_leaves_the_handles_newer_grant_alone() {
    // The release of a hold found lost forgot the handle's record of its newer grant (each server's own
    // token): that grant's extend and release then sent one token to every server, which only one
    // server knew, so the newer hold read as lost and stayed taken on a majority for its whole ttl.
    let servers = servers();
    let store = store(&servers).await;
    let lock = DistributedLock::new(&store, "redlock:newer", lease_options(10_000, false, false)).unwrap();
    let first = lock.try_acquire().await.unwrap().expect("free");
    let breaker = DistributedLock::new(&store, "redlock:newer", lease_options(10_000, false, false)).unwrap();
    assert!(breaker.force_release().await.unwrap());
    let second = lock.try_acquire().await.unwrap().expect("free again");
    let given_back = first.release().await.unwrap();
    assert_ne!(
        given_back,
        ratelock::Released::Released,
        "the first hold was lost"
    );
    assert_eq!(
        second.extend(Duration::from_secs(10)).await.unwrap(),
        ratelock::Extended::Extended
    );
    assert!(!second.is_lost());
    second.release().await.unwrap();
    let next = DistributedLock::new(&store, "redlock:newer", lease_options(10_000, false, false)).unwrap();
    next.try_acquire()
        .await
        .unwrap()
        .expect("given back on every server")
        .release()
        .await
        .unwrap();
}

/// A Redlock store over three servers, the first behind a proxy that answers the EVALSHA of `script`
/// (a lock script's file name) with `-ERR Connection refused` (nothing run) while it answers; and the
/// servers and the proxy.
async fn first_behind_a_refusing_proxy(
    script: &str,
) -> (
    AnyLockStore,
    Vec<RedisServer>,
    ratelock_testkit::answering_proxy::AnsweringProxy,
) {
    use ratelock::store::ServerCode;
    use ratelock_testkit::answering_proxy::AnsweringProxy;
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let path = format!("{}/../../core/lua/{script}", env!("CARGO_MANIFEST_DIR"));
    let text = ratelock::store::tagged_script(&std::fs::read_to_string(path).unwrap());
    let sha = redis::Script::new(&text).get_hash().to_owned();
    let proxy = AnsweringProxy::start_matching(servers[0].port(), "-ERR Connection refused", &sha);
    proxy.set_answering(false);
    let url = format!(
        "redlock://127.0.0.1:{},127.0.0.1:{},127.0.0.1:{}",
        proxy.port(),
        servers[1].port(),
        servers[2].port()
    );
    let options = StoreOptions::default().with_server_code(ServerCode::Scripts);
    let store = AnyLockStore::connect(&url, &options).await.unwrap();
    (store, servers, proxy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_release_never_sent_to_a_server_is_sent_there_later() {
    // Only a release that may have run was sent again: one its breaker kept from being sent (a server
    // that stalled) left that server's lease taken until its ttl. So did any release whose verdict was
    // not "released" (one server had let the lease go, so the hold read as lost).
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let store = store(&servers).await;
    let first = Store::connect(&servers[0].url(), &StoreOptions::default())
        .await
        .unwrap();
    for lost_on_one in [false, true] {
        let name = format!("redlock:resent:{lost_on_one}");
        let lock = DistributedLock::new(&store, &name, lease_options(20_000, false, false)).unwrap();
        let guard = lock.try_acquire().await.unwrap().expect("free");
        if lost_on_one {
            let keys = LockKeys::new("rl", name.as_bytes());
            let _: () = redis::cmd("DEL")
                .arg(&keys.lease)
                .query(&mut servers[2].connection())
                .unwrap();
        }
        servers[0].pause();
        // Calls that time out on server 0 until its breaker opens (the majority still answers them).
        for _ in 0..6 {
            let _ = lock.is_locked().await;
        }
        let verdict = guard.release().await.unwrap();
        let expected = match lost_on_one {
            false => ratelock::Released::Released,
            true => ratelock::Released::NotHeld,
        };
        assert_eq!(verdict, expected);
        servers[0].resume();
        let seen = DistributedLock::new(&first, &name, lease_options(20_000, false, false)).unwrap();
        let still = format!("server 0 still holds the given-back lease ({lost_on_one})");
        freed_within(&seen, Duration::from_secs(8), &still).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_a_server_in_an_outage_could_have_carried_is_an_outage_not_a_loss() {
    // One server extended, one had let the lease go, one could not be reached: the last could still
    // make the majority, and the hold read as lost at once.
    let (store, servers, proxy) = first_behind_a_refusing_proxy("lock_extend.lua").await;
    let lock = DistributedLock::new(&store, "redlock:open", lease_options(20_000, false, false)).unwrap();
    let guard = lock.try_acquire().await.unwrap().expect("free");
    let keys = LockKeys::new("rl", b"redlock:open");
    let _: () = redis::cmd("DEL")
        .arg(&keys.lease)
        .query(&mut servers[2].connection())
        .unwrap();
    proxy.set_answering(true);
    let open = guard.extend(Duration::from_secs(20)).await.unwrap_err();
    assert!(open.is_store_failure(), "{open:?}");
    assert!(!guard.is_lost());
    proxy.set_answering(false);
    // Retried once server 0's breaker lets calls through again, the renewal carries.
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        match guard.extend(Duration::from_secs(20)).await {
            Ok(extended) => {
                assert_eq!(extended, ratelock::Extended::Extended);
                break;
            }
            Err(err) if err.is_store_failure() && Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(err) => panic!("{err:?}"),
        }
    }
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_hears_a_release_made_on_servers_other_than_the_first() {
    // Waiters listened on the first server alone, and a release is published only where the lock was
    // granted: with the first server no part of the holder's grant, the waiter slept until the
    // holder's lease would have ended (10 s here).
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let name = "redlock:heard";
    // Another owner holds the lock on server 0 alone (for longer than the test).
    let single = Store::connect(&servers[0].url(), &StoreOptions::default())
        .await
        .unwrap();
    let elsewhere = DistributedLock::new(&single, name, lease_options(60_000, false, false)).unwrap();
    let _blocking = elsewhere.try_acquire().await.unwrap().expect("free");
    let store = store(&servers).await;
    let holder = DistributedLock::new(&store, name, lease_options(10_000, false, false)).unwrap();
    let held = holder
        .try_acquire()
        .await
        .unwrap()
        .expect("servers 1 and 2 grant it");
    let waiter = DistributedLock::new(&store, name, lease_options(10_000, false, false)).unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire(Duration::from_secs(20)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    held.release().await.unwrap();
    let granted = tokio::time::timeout(Duration::from_secs(3), waiting)
        .await
        .expect("the waiter is woken by the release")
        .unwrap()
        .unwrap();
    assert!(released.elapsed() < Duration::from_secs(3));
    granted.release().await.unwrap();
}
