//! ratelock's test kit: real `redis-server` processes for tests and benchmarks, the shared vectors,
//! and Redis Cluster slot arithmetic. Used by the integration tests in `tests/` and by `bench/`.

#![allow(missing_docs)]

pub mod answering_proxy;
pub mod cluster;
pub mod failover;
pub mod fault;
pub mod history;
pub mod http_vectors;
pub mod kit_process;
pub mod module;
pub mod redis_server;
pub mod sentinel;
pub mod slot;
pub mod store_checks;
pub mod stores;
pub mod tls;
pub mod vectors;

pub use cluster::RedisCluster;
pub use redis_server::RedisServer;
pub use sentinel::RedisSentinels;

/// Calls `attempt` every 5 ms until it gives `Some`, for at most 5 s (then panics naming `what`):
/// for things that happen soon but not at once, such as a connection opening in the background.
pub fn eventually<T>(what: &str, mut attempt: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        if let Some(value) = attempt() {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not happen within 5 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The async twin of [`eventually`]: awaits `check` every 5 ms until it is true, for at most 10 s
/// (processes starting on a loaded machine need the margin), then panics naming `what`.
pub async fn eventually_async(what: &str, check: impl AsyncFn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !check().await {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not happen within 10 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// The Rust examples of the documentation guide's pages, compiled and run as doctests.
#[cfg(doctest)]
pub mod guide_doctests {
    #[doc = include_str!("../../../docs/guide/rust.md")]
    pub struct Rust;
    #[doc = include_str!("../../../docs/guide/locks.md")]
    pub struct Locks;
    #[doc = include_str!("../../../docs/guide/hooks.md")]
    pub struct Hooks;
    #[doc = include_str!("../../../docs/guide/policies.md")]
    pub struct Policies;
    #[doc = include_str!("../../../docs/guide/calendar.md")]
    pub struct Calendar;
    #[doc = include_str!("../../../docs/guide/reservations.md")]
    pub struct Reservations;
    #[doc = include_str!("../../../docs/guide/overrides.md")]
    pub struct Overrides;
    #[doc = include_str!("../../../docs/guide/operations.md")]
    pub struct Operations;
}
