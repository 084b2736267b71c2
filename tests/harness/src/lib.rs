//! ratelock's test kit: real `redis-server` processes for tests and benchmarks, the shared vectors,
//! and Redis Cluster slot arithmetic. Used by the integration tests in `tests/` and by `bench/`.

#![allow(missing_docs)]

pub mod cluster;
pub mod failover;
pub mod redis_server;
pub mod sentinel;
pub mod slot;
pub mod stores;
pub mod vectors;

pub use cluster::RedisCluster;
pub use redis_server::RedisServer;
pub use sentinel::RedisSentinels;

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
