//! The shared vectors against the memory store and against limit.lua on a real Redis (explicit now),
//! over both of the Redis store's connections: all must give exactly the recorded decisions.

use ratelock::store::MemoryStore;
use ratelock::{Store, StoreOptions};
use ratelock_testkit::vectors::{assert_store_matches, load_all, Via};
use ratelock_testkit::RedisServer;

#[tokio::test]
async fn memory_store_matches_the_vectors() {
    let store = Store::Memory(MemoryStore::unbounded());
    assert_store_matches(&store, Via::Async).await;
}

#[tokio::test]
async fn lua_on_redis_matches_the_vectors() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    assert_store_matches(&store, Via::Async).await;
}

#[tokio::test]
async fn lua_on_redis_through_the_blocking_connection_matches_the_vectors() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    assert_store_matches(&store, Via::Blocking).await;
}

#[test]
fn every_algorithm_has_at_least_ten_scenarios() {
    for (name, file) in load_all() {
        if name != "multi_rule.json" {
            assert!(
                file.scenarios.len() >= 10,
                "{name} has {} scenarios",
                file.scenarios.len()
            );
        }
    }
}

#[test]
fn leaky_bucket_decides_like_gcra() {
    let files = load_all();
    let find = |n: &str| files.iter().find(|(name, _)| name == n).unwrap().1.clone();
    let (gcra, leaky) = (find("gcra.json"), find("leaky_bucket.json"));
    for (g, l) in gcra.scenarios.iter().zip(&leaky.scenarios) {
        // Only time running backwards may differ: the funnel keeps its last-update time.
        if g.name == "time_goes_backwards" {
            continue;
        }
        for (i, (gs, ls)) in g.steps.iter().zip(&l.steps).enumerate() {
            assert_eq!(gs.expect, ls.expect, "{} step {i}", g.name);
        }
    }
}
