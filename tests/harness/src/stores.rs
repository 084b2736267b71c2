//! Running one test body against both stores (a fresh memory store, then a store over a fresh
//! redis-server, stopped when the body is done), and lock contention shared by the store tests.

use std::time::Duration;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ratelock::{AnyLockStore, DistributedLock, LockOptions, Store, StoreOptions};

use crate::RedisServer;

/// Runs `check` on the memory store, then on Redis.
pub async fn on_both_stores(check: impl AsyncFn(Store)) {
    check(
        Store::connect("memory://", &StoreOptions::default())
            .await
            .unwrap(),
    )
    .await;
    let server = RedisServer::start();
    check(
        Store::connect(&server.url(), &StoreOptions::default())
            .await
            .unwrap(),
    )
    .await;
}

/// Lock or semaphore options with a lease of `ttl_ms`.
pub fn lease_options(ttl_ms: u64, auto_renew: bool, reentrant: bool) -> LockOptions {
    LockOptions::default()
        .with_ttl(Duration::from_millis(ttl_ms))
        .with_auto_renew(auto_renew)
        .with_reentrant(reentrant)
}

/// `workers` tasks, each with its own handle on lock `name`, take it `rounds` times in turn (waiting up
/// to `wait`). Panics if two ever hold it at once or if the fencing tokens do not rise in grant order;
/// returns the tokens.
pub async fn take_turns(
    store: impl Into<AnyLockStore>,
    name: &str,
    options: LockOptions,
    workers: usize,
    rounds: usize,
    wait: Duration,
) -> Vec<u64> {
    let store: AnyLockStore = store.into();
    let inside = Arc::new(AtomicUsize::new(0));
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let lock = DistributedLock::new(&store, name, options.clone()).unwrap();
            let (inside, tokens) = (inside.clone(), tokens.clone());
            tokio::spawn(async move {
                for _ in 0..rounds {
                    let guard = lock.acquire(wait).await.unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                    tokens.lock().unwrap().push(guard.fencing_token());
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    guard.release().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let tokens = tokens.lock().unwrap().clone();
    assert_eq!(tokens.len(), workers * rounds);
    assert!(
        tokens.windows(2).all(|pair| pair[0] < pair[1]),
        "fencing tokens rise in grant order"
    );
    tokens
}
