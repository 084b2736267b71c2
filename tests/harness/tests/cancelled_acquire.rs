//! An acquire whose caller stops waiting mid-call (a timeout around it, a cancelled task) leaves
//! nothing taken. The try's script may run after the caller has gone: here the server holds every
//! write for a moment (`CLIENT PAUSE ... WRITE`) while a 50 ms timeout drops the acquire, and the
//! script grants the hold when the pause ends. That grant is given back at once, for every kind of
//! lock; it used to stay taken, with no guard anywhere, until its lease ran out.

use std::future::Future;
use std::time::{Duration, Instant};

use ratelock::{DistributedLock, FairLock, LockOptions, ReadWriteLock, Semaphore, Store, StoreOptions};
use ratelock_testkit::RedisServer;

/// Much longer than the test: a hold still taken at its end was never given back.
const TTL: Duration = Duration::from_secs(30);

/// Holds every client's writes on `server` for `ms`.
fn pause_writes(server: &RedisServer, ms: u64) {
    let mut connection = server.connection();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(ms)
        .arg("WRITE")
        .query(&mut connection)
        .unwrap();
}

/// Polls `taken` until it answers false, for at most 3 s; whether it did.
async fn freed<F: Future<Output = bool>>(taken: impl Fn() -> F) -> bool {
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        if !taken().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Drops `acquire` after 50 ms, while the server holds writes for 300 ms.
async fn abandon<T>(server: &RedisServer, acquire: impl Future<Output = ratelock::Result<T>>) {
    pause_writes(server, 300);
    let waited = tokio::time::timeout(Duration::from_millis(50), acquire).await;
    assert!(waited.is_err(), "the acquire ended within the pause");
}

#[tokio::test]
async fn an_abandoned_acquire_gives_back_what_it_was_granted_on_every_lock_kind() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let options = LockOptions::default().with_ttl(TTL);
    let wait = Duration::from_secs(5);

    let lock = DistributedLock::new(&store, "cancel:lock", options.clone()).unwrap();
    lock.try_acquire()
        .await
        .unwrap()
        .unwrap()
        .release()
        .await
        .unwrap();
    abandon(&server, lock.acquire(wait)).await;
    assert!(freed(|| async { lock.is_locked().await.unwrap() }).await, "lock");

    let permits = Semaphore::new(&store, "cancel:permits", 1, options.clone()).unwrap();
    permits
        .try_acquire()
        .await
        .unwrap()
        .unwrap()
        .release()
        .await
        .unwrap();
    abandon(&server, permits.acquire(wait)).await;
    assert!(
        freed(|| async { permits.in_use().await.unwrap() > 0 }).await,
        "permit"
    );

    let fair = FairLock::new(&store, "cancel:fair", options.clone()).unwrap();
    fair.try_acquire()
        .await
        .unwrap()
        .unwrap()
        .release()
        .await
        .unwrap();
    abandon(&server, fair.acquire(wait)).await;
    assert!(
        freed(|| async { fair.is_locked().await.unwrap() }).await,
        "fair lock"
    );

    let rw = ReadWriteLock::new(&store, "cancel:rw", options.clone()).unwrap();
    rw.try_acquire_write()
        .await
        .unwrap()
        .unwrap()
        .release()
        .await
        .unwrap();
    abandon(&server, rw.acquire_write(wait)).await;
    assert!(
        freed(|| async { rw.state().await.unwrap().writer }).await,
        "write hold"
    );
    abandon(&server, rw.acquire_read(wait)).await;
    assert!(
        freed(|| async { rw.state().await.unwrap().readers > 0 }).await,
        "read hold"
    );
}
