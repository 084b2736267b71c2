//! Bounds on user input: keys and lock names above 64 KiB are rejected before any store work, with an
//! `InvalidArgument` naming `key` or `name`; keys up to the bound are served.

use ratelock::{Error, Limiter};

const BOUND: usize = ratelock::MAX_KEY_BYTES;

fn named<T>(result: Result<T, Error>) -> (&'static str, String) {
    match result {
        Err(err @ Error::InvalidArgument { name, .. }) => (name, err.to_string()),
        Err(other) => panic!("expected an invalid-argument error, got {other:?}"),
        Ok(_) => panic!("expected an invalid-argument error, got Ok"),
    }
}

fn assert_too_long<T>(result: Result<T, Error>, argument: &str) {
    let (name, message) = named(result);
    assert_eq!(name, argument);
    assert!(
        message.contains("65536"),
        "the message names the bound: {message}"
    );
    assert!(
        message.len() < 200,
        "the message does not echo the key: {} bytes",
        message.len()
    );
}

#[tokio::test]
async fn limiter_keys_are_bounded() {
    assert_eq!(BOUND, 64 * 1024);
    let limiter = Limiter::memory();
    let rules = limiter.rules("10/second").unwrap();
    let at_bound = vec![b'k'; BOUND];
    let over = vec![b'k'; BOUND + 1];
    assert!(limiter.hit(&at_bound, &rules, 1).await.unwrap().allowed);
    assert_too_long(limiter.hit(&over, &rules, 1).await, "key");
    assert_too_long(limiter.peek(&over, &rules, 1).await, "key");
    assert_too_long(limiter.hit_at(&over, &rules, 1, 1_000_000).await, "key");
    assert_too_long(limiter.reset(&over, &rules).await, "key");
    let blocking = limiter.try_hit_blocking(&over, &rules, 1, None);
    assert_too_long(blocking.expect("memory answers at once"), "key");
}

#[cfg(feature = "runtime")]
#[test]
fn lock_names_are_bounded() {
    use ratelock::{DistributedLock, FairLock, LockOptions, ReadWriteLock, Semaphore};
    let store = Limiter::memory().store().clone();
    let over = vec![b'n'; BOUND + 1];
    let options = LockOptions::default();
    assert!(DistributedLock::new(&store, vec![b'n'; BOUND], options.clone()).is_ok());
    assert_too_long(DistributedLock::new(&store, &over, options.clone()), "name");
    assert_too_long(Semaphore::new(&store, &over, 2, options.clone()), "name");
    assert_too_long(FairLock::new(&store, &over, options.clone()), "name");
    assert_too_long(ReadWriteLock::new(&store, &over, options), "name");
}

#[cfg(feature = "runtime")]
#[tokio::test]
async fn concurrency_limiter_keys_are_bounded() {
    use ratelock::{ConcurrencyLimiter, LockOptions};
    let store = Limiter::memory().store().clone();
    let limiter = ConcurrencyLimiter::new(&store, 2, LockOptions::default()).unwrap();
    let over = vec![b'k'; BOUND + 1];
    assert_too_long(limiter.try_acquire(&over).await, "key");
    assert_too_long(limiter.in_flight(&over).await, "key");
    assert!(limiter.try_acquire(vec![b'k'; BOUND]).await.unwrap().is_some());
}

#[cfg(feature = "redis")]
#[test]
fn wire_commands_bound_the_key() {
    let limiter = Limiter::memory();
    let rules = limiter.rules("10/second").unwrap();
    assert_too_long(
        limiter.wire_command(&vec![b'k'; BOUND + 1], &rules, 1, None, true),
        "key",
    );
}
