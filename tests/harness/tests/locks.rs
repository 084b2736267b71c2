//! DistributedLock on both stores: fencing, owner checks, re-entry, extension that never re-acquires,
//! the watchdog and the lost signal, waiting woken by releases, and fencing across a Redis restart.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ratelock::{DistributedLock, Extended, LockOptions, Released, Store, StoreOptions};
use ratelock_testkit::stores::{lease_options, on_both_stores};
use ratelock_testkit::{eventually, RedisServer};
use redis::Commands;

#[tokio::test]
async fn grants_are_exclusive_and_fencing_tokens_rise() {
    on_both_stores(async |store| {
        let a = DistributedLock::new(&store, "orders:42", LockOptions::default()).unwrap();
        let b = DistributedLock::new(&store, "orders:42", LockOptions::default()).unwrap();
        assert_ne!(a.owner_token(), b.owner_token());
        let mut last = 0;
        for _ in 0..5 {
            let guard = a.try_acquire().await.unwrap().expect("free");
            assert!(guard.fencing_token() > last);
            last = guard.fencing_token();
            assert!(b.try_acquire().await.unwrap().is_none());
            assert_eq!(b.fencing_token().await.unwrap(), Some(last));
            assert!(b.remaining_ttl().await.unwrap().unwrap() > Duration::from_secs(29));
            assert_eq!(guard.release().await.unwrap(), Released::Released);
            assert!(!a.is_locked().await.unwrap());
        }
        // Another name is another lock.
        let c = DistributedLock::new(&store, "orders:43", LockOptions::default()).unwrap();
        let other = c.try_acquire().await.unwrap().expect("independent");
        other.release().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_lost_holder_changes_nothing_and_is_told() {
    on_both_stores(async |store| {
        let a = DistributedLock::new(&store, "job", lease_options(60, false, false)).unwrap();
        let b = DistributedLock::new(&store, "job", LockOptions::default()).unwrap();
        let first = a.try_acquire().await.unwrap().unwrap();
        let lost = first.lost_signal();
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert!(lost.is_lost(), "without auto-renew the lease's end is a loss");
        // Extending never re-acquires an expired lock.
        assert_eq!(
            first.extend(Duration::from_secs(5)).await.unwrap(),
            Extended::Expired
        );
        assert!(!a.is_locked().await.unwrap());
        let second = b.try_acquire().await.unwrap().unwrap();
        assert!(second.fencing_token() > first.fencing_token());
        assert_eq!(
            first.extend(Duration::from_secs(5)).await.unwrap(),
            Extended::HeldByOther
        );
        assert_eq!(first.release().await.unwrap(), Released::HeldByOther);
        assert_eq!(b.fencing_token().await.unwrap(), Some(second.fencing_token()));
        assert_eq!(second.release().await.unwrap(), Released::Released);
        // Release is idempotent: nothing held, nothing changed.
        let third = b.try_acquire().await.unwrap().unwrap();
        assert_eq!(third.release().await.unwrap(), Released::Released);
        assert!(!b.is_locked().await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn reentry_keeps_the_token_and_counts_holds() {
    on_both_stores(async |store| {
        let lock = DistributedLock::new(&store, "tree", lease_options(5_000, true, true)).unwrap();
        let outer = lock.try_acquire().await.unwrap().unwrap();
        let inner = lock.try_acquire().await.unwrap().unwrap();
        assert_eq!(inner.fencing_token(), outer.fencing_token());
        assert_eq!(inner.holds(), 2);
        let other = DistributedLock::new(&store, "tree", LockOptions::default()).unwrap();
        assert!(other.try_acquire().await.unwrap().is_none());
        assert_eq!(inner.release().await.unwrap(), Released::StillHeld { holds: 1 });
        assert!(lock.is_locked().await.unwrap());
        assert_eq!(outer.release().await.unwrap(), Released::Released);
        // Without re-entry, the same handle waits like anyone else.
        let plain = DistributedLock::new(&store, "tree", LockOptions::default()).unwrap();
        let held = plain.try_acquire().await.unwrap().unwrap();
        assert!(plain.try_acquire().await.unwrap().is_none());
        held.release().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_forcibly_deleted_lock_fires_the_lost_signal_within_a_third_of_the_ttl() {
    on_both_stores(async |store| {
        let lock = DistributedLock::new(&store, "deleted", lease_options(900, true, false)).unwrap();
        let guard = lock.try_acquire().await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(lock.force_release().await.unwrap());
        let deleted_at = Instant::now();
        tokio::time::timeout(Duration::from_millis(300 + 150), guard.lost())
            .await
            .expect("lost signal within ttl/3");
        assert!(deleted_at.elapsed() <= Duration::from_millis(450));
        assert_eq!(guard.release().await.unwrap(), Released::NotHeld);
    })
    .await;
}

#[tokio::test]
async fn a_waiter_past_its_deadline_gets_a_typed_timeout() {
    on_both_stores(async |store| {
        let holder = DistributedLock::new(&store, "busy", LockOptions::default()).unwrap();
        let waiter = DistributedLock::new(&store, "busy", LockOptions::default()).unwrap();
        let guard = holder.try_acquire().await.unwrap().unwrap();
        let started = Instant::now();
        let err = waiter.acquire(Duration::from_millis(200)).await.unwrap_err();
        assert!(err.is_wait_timeout(), "{err:?}");
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(200) && waited < Duration::from_millis(600),
            "{waited:?}"
        );
        guard.release().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_waiters_get_the_lock_in_turn_woken_by_releases() {
    on_both_stores(async |store| {
        // A long lease: if waiters relied on it instead of release messages, hand-offs would take 10 s.
        let name = "queue";
        let first = DistributedLock::new(&store, name, lease_options(10_000, true, false)).unwrap();
        let guard = first.try_acquire().await.unwrap().unwrap();
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for _ in 0..16 {
            let (store, log) = (store.clone(), log.clone());
            waiters.push(tokio::spawn(async move {
                let lock = DistributedLock::new(&store, name, lease_options(10_000, true, false)).unwrap();
                let guard = lock
                    .acquire(Duration::from_secs(30))
                    .await
                    .expect("acquire in turn");
                let entered = Instant::now();
                tokio::time::sleep(Duration::from_millis(5)).await;
                let left = Instant::now();
                log.lock().unwrap().push((guard.fencing_token(), entered, left));
                guard.release().await.unwrap();
            }));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let released_at = Instant::now();
        guard.release().await.unwrap();
        for waiter in waiters {
            waiter.await.unwrap();
        }
        let mut holds = log.lock().unwrap().clone();
        assert_eq!(holds.len(), 16);
        holds.sort_by_key(|&(_, entered, _)| entered);
        let mut previous_exit = released_at;
        let mut previous_fence = 0;
        for (fence, entered, left) in holds {
            assert!(entered >= previous_exit, "two holders at once");
            let stall = entered - previous_exit;
            assert!(
                stall < Duration::from_millis(500),
                "a waiter stalled {stall:?} after a release"
            );
            assert!(
                fence > previous_fence,
                "fencing tokens must rise with every grant"
            );
            previous_exit = left;
            previous_fence = fence;
        }
    })
    .await;
}

#[tokio::test]
async fn a_one_second_lease_renewed_for_five_seconds_stays_held_and_stops_after_release() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let lock = DistributedLock::new(&store, "long-job", lease_options(1_000, true, false)).unwrap();
    let rival = DistributedLock::new(&store, "long-job", LockOptions::default()).unwrap();
    let guard = lock.try_acquire().await.unwrap().unwrap();
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            rival.try_acquire().await.unwrap().is_none(),
            "the renewed lease lapsed"
        );
        assert!(!guard.is_lost());
    }
    let key = ratelock::key::LockKeys::new("rl", b"long-job").lease;
    let ttl: i64 = server.connection().pttl(&key).unwrap();
    assert!(ttl > 0 && ttl <= 1_000, "PTTL {ttl}");
    guard.release().await.unwrap();
    // No renewal may outlive the guard: the lease stays gone.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let exists: bool = server.connection().exists(&key).unwrap();
        assert!(!exists, "a renewal recreated the lease after release");
    }
    // Dropping a held guard releases it in the background.
    let dropped = lock.try_acquire().await.unwrap().unwrap();
    drop(dropped);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!lock.is_locked().await.unwrap());
}

#[tokio::test]
async fn fencing_tokens_keep_rising_across_a_restart_without_persistence() {
    let mut server = RedisServer::start();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let lock = DistributedLock::new(&store, "ledger", LockOptions::default()).unwrap();
    let before = lock.try_acquire().await.unwrap().unwrap();
    let token = before.fencing_token();
    before.release().await.unwrap();
    server.restart();
    let deadline = Instant::now() + Duration::from_secs(5);
    let after = loop {
        match lock.try_acquire().await {
            Ok(guard) => break guard.expect("the restarted server is empty"),
            Err(err) => assert!(Instant::now() < deadline, "no reconnection: {err}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let exists: bool = server
        .connection()
        .exists(ratelock::key::LockKeys::new("rl", b"ledger").fence)
        .unwrap();
    assert!(exists, "the counter starts over on the restarted server");
    assert!(
        after.fencing_token() > token,
        "{} <= {token}",
        after.fencing_token()
    );
    after.release().await.unwrap();
}

#[tokio::test]
async fn lock_keys_share_one_slot_and_only_the_counter_has_no_ttl() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let lock = DistributedLock::new(&store, "a}b{c", LockOptions::default()).unwrap();
    let guard = lock.try_acquire().await.unwrap().unwrap();
    let keys = ratelock::key::LockKeys::new("rl", b"a}b{c");
    let slot = ratelock_testkit::slot::key_slot(&keys.lease);
    assert_eq!(ratelock_testkit::slot::key_slot(&keys.fence), slot);
    assert_eq!(ratelock_testkit::slot::key_slot(&keys.channel), slot);
    let mut connection = server.connection();
    let lease_ttl: i64 = connection.pttl(&keys.lease).unwrap();
    let counter_ttl: i64 = connection.pttl(&keys.fence).unwrap();
    assert!(lease_ttl > 0);
    assert_eq!(counter_ttl, -1);
    guard.release().await.unwrap();
}

#[tokio::test]
async fn an_expired_grant_cannot_act_on_the_same_handles_newer_grant() {
    on_both_stores(async |store| {
        let lock = DistributedLock::new(&store, "regranted", lease_options(80, false, false)).unwrap();
        let rival = DistributedLock::new(&store, "regranted", LockOptions::default()).unwrap();
        let old = lock.try_acquire().await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(120)).await;
        let new = lock.try_acquire().await.unwrap().expect("the old lease ended");
        assert!(new.fencing_token() > old.fencing_token());
        assert_eq!(
            old.extend(Duration::from_secs(5)).await.unwrap(),
            Extended::HeldByOther
        );
        assert_eq!(old.release().await.unwrap(), Released::HeldByOther);
        assert!(
            rival.try_acquire().await.unwrap().is_none(),
            "the old guard released the new grant"
        );
        assert_eq!(lock.fencing_token().await.unwrap(), Some(new.fencing_token()));
        assert_eq!(new.release().await.unwrap(), Released::Released);
    })
    .await;
}

#[tokio::test]
async fn a_shortened_lease_is_reported_lost_at_its_new_end() {
    on_both_stores(async |store| {
        let lock = DistributedLock::new(&store, "shortened", lease_options(3_000, false, false)).unwrap();
        let guard = lock.try_acquire().await.unwrap().unwrap();
        assert_eq!(
            guard.extend(Duration::from_millis(50)).await.unwrap(),
            Extended::Extended
        );
        tokio::time::timeout(Duration::from_millis(400), guard.lost())
            .await
            .expect("the lost signal follows the shortened lease");
        guard.release().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_stuck_on_a_stalled_server_is_lost_at_the_lease_end() {
    let server = RedisServer::start();
    let store = Store::connect(
        &server.url(),
        &StoreOptions::default().with_timeout(Duration::from_secs(3)),
    )
    .await
    .unwrap();
    let lock = DistributedLock::new(&store, "stalled", lease_options(600, true, false)).unwrap();
    let guard = lock.try_acquire().await.unwrap().unwrap();
    let acquired = Instant::now();
    let mut blocker = server.connection();
    let stall = std::thread::spawn(move || {
        let _: redis::RedisResult<()> = redis::cmd("DEBUG").arg("SLEEP").arg("2").query(&mut blocker);
    });
    tokio::time::timeout(Duration::from_millis(1_200), guard.lost())
        .await
        .expect("lost at the lease end, not after the store timeout");
    assert!(
        acquired.elapsed() >= Duration::from_millis(550),
        "lost before the lease could end"
    );
    stall.join().unwrap();
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_waits_unsubscribe_and_a_dropped_store_closes_its_subscriber() {
    let server = RedisServer::start();
    let mut connection = server.connection();
    let channel = ratelock::key::LockKeys::new("rl", b"contended").channel;
    let subscribers = |connection: &mut redis::Connection| -> i64 {
        let counts: Vec<(Vec<u8>, i64)> = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(&channel)
            .query(connection)
            .unwrap();
        counts[0].1
    };
    {
        let store = Store::connect(&server.url(), &StoreOptions::default())
            .await
            .unwrap();
        let holder = DistributedLock::new(&store, "contended", LockOptions::default()).unwrap();
        let waiter = DistributedLock::new(&store, "contended", LockOptions::default()).unwrap();
        let guard = holder.try_acquire().await.unwrap().unwrap();
        let cancelled = tokio::time::timeout(
            Duration::from_millis(200),
            waiter.acquire(Duration::from_secs(10)),
        )
        .await;
        assert!(
            cancelled.is_err(),
            "the wait should still be running when cancelled"
        );
        // Given up in the background: polled until done (a leak never gets there, and fails at 5 s).
        eventually("a cancelled wait's unsubscribe", || {
            (subscribers(&mut connection) == 0).then_some(())
        });
        guard.release().await.unwrap();
    }
    let clients = eventually("the dropped store's connections closing", || {
        let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut connection).unwrap();
        (clients.lines().count() == 1).then_some(clients)
    });
    assert_eq!(clients.lines().count(), 1, "{clients}");
}

/// A waiter whose user may not SUBSCRIBE cannot be woken by releases: that is a configuration error,
/// returned at once, not a wait that silently sleeps whole leases (or runs out).
#[tokio::test]
async fn a_waiter_refused_the_release_channel_gets_a_configuration_error() {
    let server = RedisServer::start();
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "nosub",
            "on",
            ">secret",
            "~*",
            "&*",
            "+@all",
            "-subscribe",
        ])
        .query(&mut server.connection())
        .unwrap();
    let direct = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let limited_url = format!("redis://nosub:secret@127.0.0.1:{}/", server.port());
    let limited = Store::connect(&limited_url, &StoreOptions::default())
        .await
        .unwrap();
    let holder = DistributedLock::new(&direct, "acl:subscribe", LockOptions::default()).unwrap();
    let _held = holder.try_acquire().await.unwrap().expect("free");
    let waiter = DistributedLock::new(&limited, "acl:subscribe", LockOptions::default()).unwrap();
    let started = Instant::now();
    let error = waiter.acquire(Duration::from_secs(3)).await.unwrap_err();
    assert!(error.is_configuration(), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "refused after {:?}",
        started.elapsed()
    );
}

/// A release that finds the lease gone says how it was lost: expired (nobody holds it) or taken.
#[tokio::test]
async fn a_release_that_finds_the_lease_gone_says_how_it_was_lost() {
    on_both_stores(async |store| {
        let options = LockOptions::default().with_auto_renew(false);
        let lock = DistributedLock::new(&store, "released:gone", options.clone()).unwrap();
        let mut guard = lock.try_acquire().await.unwrap().expect("free");
        assert!(lock.force_release().await.unwrap());
        assert_eq!(guard.try_release().await.unwrap(), Released::NotHeld);
        assert_eq!(guard.lost_reason(), Some(ratelock::LostReason::Expired));

        let mut guard = lock.try_acquire().await.unwrap().expect("free");
        assert!(lock.force_release().await.unwrap());
        let other = DistributedLock::new(&store, "released:gone", options).unwrap();
        let _theirs = other.try_acquire().await.unwrap().expect("free");
        assert_eq!(guard.try_release().await.unwrap(), Released::HeldByOther);
        assert_eq!(guard.lost_reason(), Some(ratelock::LostReason::Taken));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_longer_than_the_ttl_is_not_cut_back_by_the_watchdog() {
    // extend(3 s) on a lock of 300 ms: the next renewal (at a third of the ttl) set the lease back to
    // 300 ms, so a holder that stalled after extending lost the time it had asked for.
    on_both_stores(async |store| {
        let options = LockOptions::default().with_ttl(Duration::from_millis(300));
        let lock = DistributedLock::new(&store, "extended:long", options).unwrap();
        let guard = lock.try_acquire().await.unwrap().expect("free");
        assert_eq!(
            guard.extend(Duration::from_secs(3)).await.unwrap(),
            Extended::Extended
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let left = lock.remaining_ttl().await.unwrap().expect("held");
        assert!(
            left > Duration::from_secs(2),
            "the watchdog cut the extension back: {left:?} left"
        );
        // Nor was the hold given up meanwhile.
        assert!(!guard.is_lost());
        guard.release().await.unwrap();
    })
    .await;
}
