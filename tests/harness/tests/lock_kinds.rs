//! FairLock and ReadWriteLock behaviour on both stores: first come first served, places that leave or
//! lapse, only the head woken, readers sharing and writers excluding everyone, writer preference, and
//! the lost signal.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use ratelock::algorithm::fair::FairCall;
use ratelock::key::FairLockKeys;
use ratelock::{Error, FairLock, LockKindStore, LockOptions, ReadWriteLock, Store, StoreOptions};
use ratelock_testkit::stores::on_both_stores;
use ratelock_testkit::{eventually_async, RedisServer};

const WAIT: Duration = Duration::from_secs(10);

fn options() -> LockOptions {
    LockOptions::default()
        .with_ttl(Duration::from_secs(5))
        .with_waiter_ttl(Duration::from_millis(400))
}

#[tokio::test]
async fn fair_lock_grants_in_arrival_order() {
    on_both_stores(async |store: Store| {
        let lock = FairLock::new(&store, "fifo", options()).unwrap();
        let first = lock.acquire(WAIT).await.unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for n in 0..5u64 {
            let (waiter, order) = (FairLock::new(&store, "fifo", options()).unwrap(), order.clone());
            waiters.push(tokio::spawn(async move {
                let guard = waiter.acquire(WAIT).await.unwrap();
                order.lock().unwrap().push((n, guard.fencing_token()));
                tokio::time::sleep(Duration::from_millis(2)).await;
                guard.release().await.unwrap();
            }));
            eventually_async("the waiter queues", async || {
                lock.state().await.unwrap().waiting == n + 1
            })
            .await;
        }
        // A try never cuts in, even though it arrives while the lock is changing hands.
        assert!(lock.try_acquire().await.unwrap().is_none());
        first.release().await.unwrap();
        for waiter in waiters {
            waiter.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        let arrivals: Vec<u64> = order.iter().map(|&(n, _)| n).collect();
        assert_eq!(arrivals, [0, 1, 2, 3, 4]);
        assert!(
            order.windows(2).all(|pair| pair[0].1 < pair[1].1),
            "tokens rise: {order:?}"
        );
        assert_eq!(lock.state().await.unwrap().waiting, 0);
    })
    .await;
}

#[tokio::test]
async fn fair_waiters_that_give_up_or_die_leave_the_queue() {
    on_both_stores(async |store: Store| {
        let lock = FairLock::new(&store, "leaving", options()).unwrap();
        let held = lock.acquire(WAIT).await.unwrap();
        // Timed out: withdrawn at once.
        let gave_up = lock.acquire(Duration::from_millis(50)).await.unwrap_err();
        assert!(matches!(gave_up, Error::WaitTimeout(_)), "{gave_up:?}");
        assert_eq!(lock.state().await.unwrap().waiting, 0);
        // Dropped while waiting: withdrawn in the background.
        let dropped = tokio::spawn({
            let lock = lock.clone();
            async move { lock.acquire(WAIT).await }
        });
        eventually_async("the waiter queues", async || {
            lock.state().await.unwrap().waiting == 1
        })
        .await;
        dropped.abort();
        eventually_async("the dropped waiter leaves", async || {
            lock.state().await.unwrap().waiting == 0
        })
        .await;
        // Dead (queued once, never renewed): the place lapses after waiter_ttl and the next one goes.
        let keys = FairLockKeys::new("rl", b"leaving");
        let ghost = FairCall::Acquire {
            id: "ghost",
            ttl_us: 5_000_000,
            waiter_ttl_us: 300_000,
            queue: true,
        };
        store.fair_lock(&keys, ghost, None).await.unwrap();
        let behind = tokio::spawn({
            let lock = lock.clone();
            async move { lock.acquire(WAIT).await.map(|g| (Instant::now(), g)) }
        });
        eventually_async("the live waiter queues", async || {
            lock.state().await.unwrap().waiting == 2
        })
        .await;
        let released = Instant::now();
        held.release().await.unwrap();
        let (granted, guard) = behind.await.unwrap().unwrap();
        assert!(
            granted - released < Duration::from_secs(2),
            "waited {:?}",
            granted - released
        );
        guard.release().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_fair_release_wakes_only_the_head_of_the_queue() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let lock = FairLock::new(&store, "herd", LockOptions::default()).unwrap();
    let held = lock.acquire(WAIT).await.unwrap();
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let lock = FairLock::new(&store, "herd", LockOptions::default()).unwrap();
            tokio::spawn(async move { lock.acquire(WAIT).await.unwrap().release().await.unwrap() })
        })
        .collect();
    eventually_async("four waiters queue", async || {
        lock.state().await.unwrap().waiting == 4
    })
    .await;
    let client = redis::Client::open(server.url()).unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub.psubscribe("rl:{herd}:wake:*").await.unwrap();
    held.release().await.unwrap();
    let mut messages = pubsub.on_message();
    let woken = tokio::time::timeout(Duration::from_secs(2), messages.next())
        .await
        .unwrap()
        .unwrap();
    let first_woken: String = woken.get_channel_name().to_owned();
    // Each later release wakes the next head; never two channels for one release.
    let mut channels = vec![first_woken];
    while let Ok(Some(message)) = tokio::time::timeout(Duration::from_millis(500), messages.next()).await {
        channels.push(message.get_channel_name().to_owned());
    }
    for waiter in waiters {
        waiter.await.unwrap();
    }
    assert_eq!(
        channels.len(),
        4,
        "one wake-up per release to a waiter: {channels:?}"
    );
    let distinct: std::collections::HashSet<_> = channels.iter().collect();
    assert_eq!(distinct.len(), 4, "each waiter woken once: {channels:?}");
}

#[tokio::test]
async fn readers_share_and_a_writer_excludes_everyone() {
    on_both_stores(async |store: Store| {
        let lock = ReadWriteLock::new(&store, "shared", options()).unwrap();
        let (readers, writers) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let most_readers = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..8)
            .map(|task| {
                let lock = lock.clone();
                let (readers, writers, most_readers) =
                    (readers.clone(), writers.clone(), most_readers.clone());
                tokio::spawn(async move {
                    for round in 0..12 {
                        if (task + round) % 4 == 0 {
                            let guard = lock.acquire_write(WAIT).await.unwrap();
                            assert_eq!(writers.fetch_add(1, Ordering::SeqCst), 0, "two writers");
                            assert_eq!(readers.load(Ordering::SeqCst), 0, "a writer among readers");
                            tokio::time::sleep(Duration::from_millis(1)).await;
                            writers.fetch_sub(1, Ordering::SeqCst);
                            guard.release().await.unwrap();
                        } else {
                            let guard = lock.acquire_read(WAIT).await.unwrap();
                            let now = readers.fetch_add(1, Ordering::SeqCst) + 1;
                            most_readers.fetch_max(now, Ordering::SeqCst);
                            assert_eq!(writers.load(Ordering::SeqCst), 0, "a reader beside a writer");
                            tokio::time::sleep(Duration::from_millis(2)).await;
                            readers.fetch_sub(1, Ordering::SeqCst);
                            guard.release().await.unwrap();
                        }
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert!(
            most_readers.load(Ordering::SeqCst) >= 2,
            "readers never shared the lock"
        );
        let state = lock.state().await.unwrap();
        assert_eq!(
            (state.readers, state.writer, state.waiting_writers),
            (0, false, 0)
        );
    })
    .await;
}

#[tokio::test]
async fn a_waiting_writer_holds_back_new_readers_unless_told_not_to() {
    on_both_stores(async |store: Store| {
        for prefer_writers in [true, false] {
            let name = format!("preference-{prefer_writers}");
            let lock =
                ReadWriteLock::new(&store, &name, options().with_prefer_writers(prefer_writers)).unwrap();
            let reading = lock.acquire_read(WAIT).await.unwrap();
            let writer = tokio::spawn({
                let lock = lock.clone();
                async move { lock.acquire_write(WAIT).await.unwrap() }
            });
            if prefer_writers {
                // The writer has tried once and marked itself waiting (a slow start would let the
                // late reader in before it).
                eventually_async("the writer marking itself waiting", async || {
                    lock.state().await.unwrap().waiting_writers == 1
                })
                .await;
            } else {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let late_reader = lock.try_acquire_read().await.unwrap();
            assert_eq!(
                late_reader.is_none(),
                prefer_writers,
                "prefer_writers = {prefer_writers}"
            );
            if let Some(late) = late_reader {
                late.release().await.unwrap();
            }
            reading.release().await.unwrap();
            let written = tokio::time::timeout(Duration::from_secs(2), writer)
                .await
                .unwrap()
                .unwrap();
            assert!(written.fencing_token() > 0);
            written.release().await.unwrap();
        }
        // A writer that gives up takes its mark with it: readers get in at once.
        let lock = ReadWriteLock::new(&store, "gave-up", options()).unwrap();
        let reading = lock.acquire_read(WAIT).await.unwrap();
        let gave_up = lock.acquire_write(Duration::from_millis(50)).await.unwrap_err();
        assert!(matches!(gave_up, Error::WaitTimeout(_)), "{gave_up:?}");
        assert_eq!(lock.state().await.unwrap().waiting_writers, 0);
        lock.try_acquire_read()
            .await
            .unwrap()
            .expect("no writer waits now")
            .release()
            .await
            .unwrap();
        reading.release().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn holds_that_vanish_raise_the_lost_signal() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let short = LockOptions::default().with_ttl(Duration::from_millis(300));
    let rw = ReadWriteLock::new(&store, "vanishing", short.clone()).unwrap();
    let fair = FairLock::new(&store, "vanishing", short).unwrap();
    let writing = rw.acquire_write(WAIT).await.unwrap();
    let holding = fair.acquire(WAIT).await.unwrap();
    let mut redis = server.connection();
    let _: () = redis::cmd("DEL")
        .arg("rl:{vanishing}:rw-writer")
        .arg("rl:{vanishing}:fair")
        .query(&mut redis)
        .unwrap();
    tokio::time::timeout(Duration::from_secs(2), writing.lost())
        .await
        .expect("write hold lost");
    tokio::time::timeout(Duration::from_secs(2), holding.lost())
        .await
        .expect("fair hold lost");
    assert_eq!(
        writing.release().await.unwrap(),
        ratelock::Released::NotHeld,
        "releasing a lost hold changes nothing"
    );
    assert_ne!(
        holding.extend(Duration::from_secs(1)).await.unwrap(),
        ratelock::Extended::Extended
    );
    // A renewed hold outlives its first lease.
    let reading = rw.acquire_read(WAIT).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!reading.is_lost());
    assert_eq!(rw.state().await.unwrap().readers, 1);
    assert_eq!(reading.release().await.unwrap(), ratelock::Released::Released);
}

#[tokio::test]
async fn a_zero_timeout_is_one_try_that_leaves_no_place_behind() {
    on_both_stores(async |store: Store| {
        let fair = FairLock::new(&store, "zero-fair", options()).unwrap();
        let held = fair
            .acquire(Duration::ZERO)
            .await
            .expect("a free lock grants the one try");
        let started = Instant::now();
        let gave_up = fair.acquire(Duration::ZERO).await.unwrap_err();
        assert!(matches!(gave_up, Error::WaitTimeout(_)), "{gave_up:?}");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "no wait: {:?}",
            started.elapsed()
        );
        assert_eq!(fair.state().await.unwrap().waiting, 0, "the try left the queue");
        held.release().await.unwrap();

        let rw = ReadWriteLock::new(&store, "zero-rw", options()).unwrap();
        let reading = rw.acquire_read(Duration::ZERO).await.unwrap();
        let gave_up = rw.acquire_write(Duration::ZERO).await.unwrap_err();
        assert!(matches!(gave_up, Error::WaitTimeout(_)), "{gave_up:?}");
        assert_eq!(
            rw.state().await.unwrap().waiting_writers,
            0,
            "no writer mark left"
        );
        let second = rw
            .acquire_read(Duration::ZERO)
            .await
            .expect("readers still get in");
        second.release().await.unwrap();
        reading.release().await.unwrap();
    })
    .await;
}
