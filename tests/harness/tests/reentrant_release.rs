//! A dropped re-entrant guard's background release is sent once. Its first try can time out after it
//! ran (the server held it); sent again, it took the outer guard's hold too: the lock was freed under
//! a holder that still believed it held it, and another process took it.

use std::time::Duration;

use ratelock::{DistributedLock, LockOptions, Store, StoreOptions};
use ratelock_testkit::RedisServer;

/// A re-entrant lock taken twice on a fresh server, through a store whose calls time out at 200 ms.
struct Reentered {
    server: RedisServer,
    store: Store,
    lock: DistributedLock,
    outer: ratelock::LockGuard,
    inner: ratelock::LockGuard,
}

impl Reentered {
    async fn take(name: &str) -> Reentered {
        let server = RedisServer::start();
        let timeout = StoreOptions::default().with_timeout(Duration::from_millis(200));
        let store = Store::connect(&server.url(), &timeout).await.unwrap();
        let options = LockOptions::default()
            .with_ttl(Duration::from_secs(30))
            .with_reentrant(true);
        let lock = DistributedLock::new(&store, name, options).unwrap();
        let outer = lock.try_acquire().await.unwrap().expect("free");
        let inner = lock.try_acquire().await.unwrap().expect("re-entered");
        Reentered {
            server,
            store,
            lock,
            outer,
            inner,
        }
    }
}

/// `server` holds every write for 600 ms (a release sent now times out, and runs after).
fn pause_writes(server: &RedisServer) {
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(600)
        .arg("WRITE")
        .query(&mut server.connection())
        .unwrap();
}

/// `lock`'s try_acquire, tried again while the store's breaker (opened by the timeout) refuses it, for
/// up to 3 s.
async fn try_past_the_breaker(lock: &DistributedLock) -> ratelock::Result<Option<ratelock::LockGuard>> {
    let mut taken = lock.try_acquire().await;
    for _ in 0..60 {
        if taken.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        taken = lock.try_acquire().await;
    }
    taken
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_inner_guard_gives_back_its_own_hold_only_even_when_its_release_timed_out() {
    let Reentered {
        server,
        store,
        lock,
        outer,
        inner,
    } = Reentered::take("reentrant:replay").await;
    assert_eq!(inner.holds(), 2);
    pause_writes(&server);
    drop(inner); // its release waits out the pause: a timeout, though it runs when the pause ends
    tokio::time::sleep(Duration::from_secs(3)).await;
    let other = DistributedLock::new(&store, "reentrant:replay", LockOptions::default()).unwrap();
    let taken = try_past_the_breaker(&other).await;
    assert!(
        taken.unwrap().is_none(),
        "the outer guard's hold was given back too: another holder took the lock"
    );
    assert!(!outer.is_lost());
    outer.release().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inner_guard_whose_release_timed_out_is_not_released_again() {
    // The explicit release times out after it ran; the guard, dropped after it, sent the release
    // again (and a retry would too): the outer guard's hold went with it.
    let Reentered {
        server,
        store,
        outer,
        mut inner,
        ..
    } = Reentered::take("reentrant:retried").await;
    pause_writes(&server);
    assert!(
        inner.try_release().await.is_err(),
        "timed out (it runs when the pause ends)"
    );
    assert!(
        inner.try_release().await.is_ok(),
        "a retry sends nothing: the hold is left to its lease"
    );
    drop(inner);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let other = DistributedLock::new(&store, "reentrant:retried", LockOptions::default()).unwrap();
    let taken = try_past_the_breaker(&other).await;
    assert!(
        taken.unwrap().is_none(),
        "the outer guard's hold was given back too: another holder took the lock"
    );
    outer.release().await.unwrap();
}
