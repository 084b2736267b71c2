//! An acquire whose answer never came (the store timed out after the request was written) may still
//! have been granted on the server. Nobody holds a guard over that grant. It used to keep the lock
//! taken until its lease ran out, and the handle's own next try waited on its own owner token. Here the
//! fault proxy throws the replies away while the server runs the scripts: the grant is given back
//! soon after the store answers again (a lock, a permit, a fair lock's hold, a write hold), and a hold
//! the handle's live guard (or another owner) has is never touched.

use std::future::Future;
use std::time::{Duration, Instant};

use ratelock::{
    DistributedLock, FairLock, Guard, Lease, LockOptions, ReadWriteLock, Semaphore, Store, StoreOptions,
};
use ratelock_testkit::fault::{Fault, FaultProxy};
use ratelock_testkit::RedisServer;

/// Much longer than the test: a hold still taken at its end was never given back.
const TTL: Duration = Duration::from_secs(30);

/// The server, a proxy in front of it, a store through the proxy (short timeout) and one straight
/// to the server, which sees the truth.
struct Setup {
    _server: RedisServer,
    proxy: FaultProxy,
    through: Store,
    direct: Store,
}

async fn setup() -> Setup {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 11);
    let options = StoreOptions::default().with_timeout(Duration::from_millis(300));
    let through = Store::connect(&proxy.url(0), &options).await.unwrap();
    let direct = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    Setup {
        _server: server,
        proxy,
        through,
        direct,
    }
}

/// Runs `call` with every reply thrown away, and answers its error once the store answers again
/// (its breaker opened on the timeout).
async fn unanswered<T: std::fmt::Debug>(
    setup: &Setup,
    call: impl Future<Output = ratelock::Result<T>>,
) -> ratelock::Error {
    setup.proxy.set(0, Fault::DROP_REPLIES);
    let answer = call.await;
    setup.proxy.set(0, Fault::default());
    let probe = DistributedLock::new(&setup.through, "unanswered:probe", options()).unwrap();
    assert!(
        soon(|| async { probe.state().await.is_ok() }).await,
        "the store never answered again"
    );
    answer.expect_err("answered although every reply was thrown away")
}

/// Polls `done` until it answers true, for at most 5 s; whether it did.
async fn soon<F: Future<Output = bool>>(done: impl Fn() -> F) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if done().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Takes once and gives back: the connection made and the scripts loaded before any fault.
async fn take_once<L: Lease>(taken: impl Future<Output = ratelock::Result<Option<Guard<L>>>>) {
    taken.await.unwrap().expect("free").release().await.unwrap();
}

fn options() -> LockOptions {
    LockOptions::default().with_ttl(TTL)
}

#[tokio::test]
async fn a_lock_granted_to_an_unanswered_acquire_is_given_back_and_the_handle_takes_it_again() {
    let setup = setup().await;
    let lock = DistributedLock::new(&setup.through, "unanswered:lock", options()).unwrap();
    let seen = DistributedLock::new(&setup.direct, "unanswered:lock", options()).unwrap();
    // Scripts loaded and the connection made before the fault.
    take_once(lock.try_acquire()).await;

    let err = unanswered(&setup, lock.try_acquire()).await;
    assert!(err.is_store_failure(), "{err}");
    assert!(
        soon(|| async { !seen.is_locked().await.unwrap() }).await,
        "the grant nobody heard of still holds the lock: {:?}",
        seen.state().await.unwrap()
    );
    let again = lock.acquire(Duration::from_secs(5)).await.unwrap();
    again.release().await.unwrap();
}

#[tokio::test]
async fn a_handles_live_guard_and_another_owners_hold_are_left_alone() {
    let setup = setup().await;
    let lock = DistributedLock::new(&setup.through, "unanswered:held", options()).unwrap();
    let seen = DistributedLock::new(&setup.direct, "unanswered:held", options()).unwrap();

    let guard = lock.try_acquire().await.unwrap().unwrap();
    let err = unanswered(&setup, lock.try_acquire()).await;
    assert!(err.is_store_failure(), "{err}");
    // Long enough for a give-back to have run (its first look comes at once once the store answers).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let state = seen.state().await.unwrap();
    assert!(
        state.held && state.holder_fence == guard.fencing_token(),
        "the live guard's hold was taken: {state:?}"
    );
    guard.release().await.unwrap();

    let other = seen.try_acquire().await.unwrap().unwrap();
    let err = unanswered(&setup, lock.try_acquire()).await;
    assert!(err.is_store_failure(), "{err}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let state = seen.state().await.unwrap();
    assert!(
        state.held && state.holder_fence == other.fencing_token(),
        "another owner's hold was taken: {state:?}"
    );
    other.release().await.unwrap();
}

#[tokio::test]
async fn a_permit_granted_to_an_unanswered_try_is_given_back() {
    let setup = setup().await;
    let permits = Semaphore::new(&setup.through, "unanswered:permits", 2, options()).unwrap();
    let seen = Semaphore::new(&setup.direct, "unanswered:permits", 2, options()).unwrap();
    take_once(permits.try_acquire()).await;

    let err = unanswered(&setup, permits.try_acquire()).await;
    assert!(err.is_store_failure(), "{err}");
    assert!(
        soon(|| async { seen.in_use().await.unwrap() == 0 }).await,
        "the permit nobody heard of is still in use"
    );

    // Within a wait, the next try asks for the same permit and is granted it: that one is kept.
    setup.proxy.set(0, Fault::DROP_REPLIES);
    let clear = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        setup.proxy.set(0, Fault::default());
    };
    let (held, ()) = tokio::join!(permits.acquire(Duration::from_secs(10)), clear);
    let held = held.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(seen.in_use().await.unwrap(), 1, "the waited-for permit");
    held.release().await.unwrap();
    assert_eq!(seen.in_use().await.unwrap(), 0);
}

#[tokio::test]
async fn a_fair_or_write_hold_granted_to_an_unanswered_try_is_given_back() {
    let setup = setup().await;
    let fair = FairLock::new(&setup.through, "unanswered:fair", options()).unwrap();
    let fair_seen = FairLock::new(&setup.direct, "unanswered:fair", options()).unwrap();
    take_once(fair.try_acquire()).await;
    let err = unanswered(&setup, fair.try_acquire()).await;
    assert!(err.is_store_failure(), "{err}");
    assert!(
        soon(|| async { !fair_seen.is_locked().await.unwrap() }).await,
        "the fair hold nobody heard of still holds the lock"
    );
    // A wait whose every answer is lost ends in the outage, and its grant is given back too.
    let err = unanswered(&setup, fair.acquire(Duration::from_millis(800))).await;
    assert!(err.is_store_failure(), "{err}");
    assert!(
        soon(|| async { !fair_seen.is_locked().await.unwrap() }).await,
        "the waited-for fair hold nobody heard of still holds the lock"
    );
    fair.acquire(Duration::from_secs(5))
        .await
        .unwrap()
        .release()
        .await
        .unwrap();

    let rw = ReadWriteLock::new(&setup.through, "unanswered:rw", options()).unwrap();
    let rw_seen = ReadWriteLock::new(&setup.direct, "unanswered:rw", options()).unwrap();
    let err = unanswered(&setup, rw.try_acquire_write()).await;
    assert!(err.is_store_failure(), "{err}");
    assert!(
        soon(|| async { !rw_seen.state().await.unwrap().writer }).await,
        "the write hold nobody heard of still holds the lock"
    );
}

/// Runs `wait` while replies are thrown away for its first 500 ms, then heard again.
async fn with_a_lost_answer_first<T>(setup: &Setup, wait: impl Future<Output = T>) -> T {
    setup.proxy.set(0, Fault::DROP_REPLIES);
    let hear_again = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        setup.proxy.set(0, Fault::default());
    };
    tokio::join!(wait, hear_again).0
}

#[tokio::test]
async fn a_fair_or_write_wait_whose_first_answer_was_lost_gets_its_grant() {
    // Every try of a wait asks for one id. The first try's answer is lost but the server granted it:
    // the next try found its own id holding the lock and waited on it until the wait gave up, leaving
    // the grant to its 30 s lease.
    let setup = setup().await;
    let fair = FairLock::new(&setup.through, "unanswered:fair-wait", options()).unwrap();
    take_once(fair.try_acquire()).await;
    let held = with_a_lost_answer_first(&setup, fair.acquire(Duration::from_secs(5)))
        .await
        .expect("the fair wait gets the lock once the store answers");
    held.release().await.unwrap();

    let rw = ReadWriteLock::new(&setup.through, "unanswered:write-wait", options()).unwrap();
    let held = with_a_lost_answer_first(&setup, rw.acquire_write(Duration::from_secs(5)))
        .await
        .expect("the write wait gets the lock once the store answers");
    held.release().await.unwrap();
}

#[tokio::test]
async fn a_fair_wait_whose_first_answer_was_lost_keeps_its_place_ahead_of_later_waiters() {
    // The grant a lost answer made is the waiter's turn. Giving it back freed the lock for a waiter who
    // came later, and sent this one to the back of the queue: a fair lock served out of order.
    let setup = setup().await;
    let fair = FairLock::new(&setup.through, "unanswered:fair-place", options()).unwrap();
    let later = FairLock::new(&setup.direct, "unanswered:fair-place", options()).unwrap();
    take_once(fair.try_acquire()).await;
    setup.proxy.set(0, Fault::DROP_REPLIES);
    let first = tokio::spawn({
        let fair = fair.clone();
        async move { fair.acquire(Duration::from_secs(10)).await }
    });
    assert!(
        soon(|| async { later.is_locked().await.unwrap() }).await,
        "the first waiter's try never reached the server"
    );
    let granted = later.state().await.unwrap().holder_fence;
    let second = tokio::spawn({
        let later = later.clone();
        async move {
            let guard = later.acquire(Duration::from_secs(20)).await.unwrap();
            (guard.fencing_token(), Instant::now())
        }
    });
    assert!(
        soon(|| async { later.state().await.unwrap().waiting == 1 }).await,
        "the later waiter never queued: {:?}",
        later.state().await.unwrap()
    );
    setup.proxy.set(0, Fault::default());
    let held = first.await.unwrap().expect("the first waiter is served");
    assert_eq!(
        held.fencing_token(),
        granted,
        "the first waiter holds the grant its lost answer made, not one after the later waiter's"
    );
    assert!(!second.is_finished(), "the later waiter was served first");
    let released = Instant::now();
    held.release().await.unwrap();
    let (fence, served) = second.await.unwrap();
    assert!(fence > granted);
    assert!(
        served - released < Duration::from_secs(2),
        "the later waiter waited {:?} after the release",
        served - released
    );
}

#[tokio::test]
async fn a_wait_dropped_after_a_lost_answer_gives_its_grant_back() {
    let setup = setup().await;
    let permits = Semaphore::new(&setup.through, "unanswered:dropped", 2, options()).unwrap();
    let seen = Semaphore::new(&setup.direct, "unanswered:dropped", 2, options()).unwrap();
    take_once(permits.try_acquire()).await;
    let dropped = unanswered_for(
        &setup,
        tokio::time::timeout(Duration::from_secs(1), permits.acquire(Duration::from_secs(10))),
    )
    .await;
    assert!(dropped.is_err(), "the wait ended before it was dropped");
    assert!(
        soon(|| async { seen.in_use().await.unwrap() == 0 }).await,
        "the dropped wait's permit is still in use"
    );

    let fair = FairLock::new(&setup.through, "unanswered:dropped-fair", options()).unwrap();
    let fair_seen = FairLock::new(&setup.direct, "unanswered:dropped-fair", options()).unwrap();
    let dropped = unanswered_for(
        &setup,
        tokio::time::timeout(Duration::from_secs(1), fair.acquire(Duration::from_secs(10))),
    )
    .await;
    assert!(dropped.is_err(), "the wait ended before it was dropped");
    assert!(
        soon(|| async { !fair_seen.is_locked().await.unwrap() }).await,
        "the dropped fair wait's grant still holds the lock"
    );
}

/// Runs `call` with every reply thrown away, and answers what it answered.
async fn unanswered_for<T>(setup: &Setup, call: impl Future<Output = T>) -> T {
    setup.proxy.set(0, Fault::DROP_REPLIES);
    let answer = call.await;
    setup.proxy.set(0, Fault::default());
    answer
}
