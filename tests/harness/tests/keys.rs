//! Hostile user keys (braces, colons, empty, 10 KB, binary, UTF-8) can neither collide with another
//! key nor break the hash tag, on the memory store and on Redis.

use std::collections::HashSet;

use ratelock::key::storage_key;
use ratelock::{Limiter, Rules};
use ratelock_testkit::slot::key_slot;
use ratelock_testkit::RedisServer;
use redis::Commands;

fn hostile_keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = [
        "",
        "{",
        "}",
        "{}",
        "}{",
        "a}b",
        "{a}",
        "a",
        "a:b",
        "a:",
        ":a",
        ":",
        "%",
        "%7D",
        "%7B",
        "%25",
        "%%",
        "}:g1/1000",
        "user:42}:x{",
        "ключ",
        "🚦 limit",
        "a\0b",
        "\r\n",
        " ",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    keys.push("k".repeat(10 * 1024).into_bytes());
    keys.push((0..=255u8).collect());
    keys.push(vec![0xff, 0xfe, b'{', 0x80, b'}']);
    keys
}

fn rules() -> Rules {
    "1/minute; 5/hour using fixed_window; 9/day using sliding_log"
        .parse()
        .unwrap()
}

#[test]
fn storage_keys_never_collide_and_keep_one_slot_per_user_key() {
    let rules = rules();
    let mut seen = HashSet::new();
    for key in hostile_keys() {
        let stored: Vec<Vec<u8>> = rules.iter().map(|rule| storage_key("rl", &key, rule)).collect();
        let slot = key_slot(&stored[0]);
        for full in &stored {
            assert!(
                seen.insert(full.clone()),
                "collision on {:?}",
                String::from_utf8_lossy(full)
            );
            assert_eq!(key_slot(full), slot, "rules of one key in different slots");
            // The hash tag is exactly the escaped user key: it closes at our brace, never earlier.
            let open = full.iter().position(|&b| b == b'{').unwrap();
            let close = open + 1 + full[open + 1..].iter().position(|&b| b == b'}').unwrap();
            assert!(close > open + 1, "empty hash tag");
            assert_eq!(&full[close + 1..close + 2], b":");
            assert!(
                full[close + 2..].starts_with(b"g1/")
                    || full[close + 2..].starts_with(b"fw")
                    || full[close + 2..].starts_with(b"sl")
            );
        }
    }
}

async fn each_key_has_its_own_allowance(limiter: &Limiter) {
    let rules = rules();
    for key in hostile_keys() {
        let first = limiter.hit(&key, &rules, 1).await.unwrap();
        assert!(
            first.allowed,
            "first hit on {:?} was denied: shares state",
            String::from_utf8_lossy(&key)
        );
    }
    for key in hostile_keys() {
        let second = limiter.hit(&key, &rules, 1).await.unwrap();
        assert!(
            !second.allowed,
            "second hit on {:?} allowed",
            String::from_utf8_lossy(&key)
        );
    }
}

#[tokio::test]
async fn hostile_keys_are_independent_on_the_memory_store() {
    each_key_has_its_own_allowance(&Limiter::memory()).await;
}

#[tokio::test]
async fn hostile_keys_are_independent_on_redis() {
    let server = RedisServer::start();
    let limiter = Limiter::connect(&server.url()).await.unwrap();
    each_key_has_its_own_allowance(&limiter).await;
    let stored: HashSet<Vec<u8>> = server.connection().keys("*").unwrap();
    let expected: HashSet<Vec<u8>> = hostile_keys()
        .iter()
        .flat_map(|key| {
            rules()
                .iter()
                .map(|rule| storage_key("rl", key, rule))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(stored, expected);
}

#[tokio::test]
async fn a_prefix_with_braces_is_rejected() {
    let mut options = ratelock::LimiterOptions::default();
    options.prefix = "app{1}".into();
    let err = Limiter::connect_with("memory://", options).await.unwrap_err();
    assert!(err.is_invalid_argument());
    assert!(err.to_string().contains("prefix"));
}
