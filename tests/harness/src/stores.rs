//! Running one test body against both stores: a fresh memory store, then a store over a fresh
//! redis-server (stopped when the body is done).

use std::time::Duration;

use ratelock::{LockOptions, Store, StoreOptions};

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
