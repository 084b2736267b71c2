//! A token bucket under an override counts in fields of its own in the rule's hash (`t:<id>`,
//! `l:<id>`), beside the rule's own `t` and `l`. The hash must live as long as the longer of the two
//! buckets needs: a write of one bucket may lengthen the key's expiry, never shorten it. Shortened, the
//! other bucket's live state went with the key, and Redis forgot a limit the memory store keeps. On
//! every server path: the module, the Functions library and EVALSHA, through one rule (the scripts'
//! fast path) and two (their general path).

use ratelock::algorithm::overrides::Overrides;
use ratelock::store::{LimitRequest, LimitStore, OverrideChange, ServerCode};
use ratelock::{Rules, Store, StoreOptions};
use ratelock_testkit::module::server_with_module;
use redis::Commands;

/// Some time in µs since the Unix epoch (the hits give their own times).
const NOW: u64 = 1_795_700_000_000_000;

/// A hit of `cost` on `key` at `NOW`, allowed.
async fn hit(store: &Store, key: &str, rules: &Rules, cost: u64) {
    let request = LimitRequest {
        prefix: "tbx",
        key: key.as_bytes(),
        rules,
        cost,
        spend: true,
        max_wait_us: None,
        now_us: Some(NOW),
    };
    let verdict = store.check(&request).await.unwrap();
    assert!(verdict.outcomes.iter().all(|o| o.allowed), "{verdict:?}");
}

/// Puts `rules` as `key`'s override, or takes it away.
async fn put_override(store: &Store, key: &str, rules: Option<&str>) {
    let overrides = rules.map(|text| Overrides::new(text.parse().unwrap()));
    let change = OverrideChange {
        prefix: "tbx",
        key: key.as_bytes(),
        overrides: overrides.as_ref(),
        for_us: None,
        now_us: None,
    };
    store.set_override(&change).await.unwrap();
}

/// The PTTL in whole seconds (rounded) of the key of `rules`' first rule.
fn ttl_seconds(connection: &mut redis::Connection, key: &str, rules: &Rules) -> i64 {
    let stored = ratelock::key::storage_key("tbx", key.as_bytes(), rules.iter().next().unwrap());
    let ms: i64 = connection.pttl(&stored[..]).unwrap();
    (ms + 500) / 1000
}

#[tokio::test]
async fn one_buckets_write_never_shortens_the_others_expiry_on_every_path() {
    let server = server_with_module(&[]);
    let mut connection = server.connection();
    let one: Rules = "100/hour using token_bucket".parse().unwrap();
    let two: Rules = "100/hour using token_bucket; 1000/day".parse().unwrap();
    for code in [ServerCode::Module, ServerCode::Lua, ServerCode::Scripts] {
        let options = StoreOptions::default().with_server_code(code);
        let store = Store::connect(&server.url(), &options).await.unwrap();
        for (name, rules) in [("one", &one), ("two", &two)] {
            let key = format!("{code:?}:{name}");
            // The rule's own bucket: 50 of 100 spent, full again in 30 minutes.
            hit(&store, &key, rules, 50).await;
            assert_eq!(
                ttl_seconds(&mut connection, &key, rules),
                1800,
                "{code:?} {name}: own"
            );
            // Its override's bucket: 1 of 10 spent, full again in 6 minutes. The rule's own bucket
            // still needs its 30.
            put_override(&store, &key, Some("10/hour using token_bucket")).await;
            hit(&store, &key, rules, 1).await;
            assert_eq!(
                ttl_seconds(&mut connection, &key, rules),
                1800,
                "{code:?} {name}: the override's write"
            );
            // The override's bucket: 8 more spent, full again in 54 minutes; then the rule's own
            // bucket spends 1 more (full again in 30.6 minutes): the override's bucket still needs its
            // 54 should it come back.
            hit(&store, &key, rules, 8).await;
            assert_eq!(
                ttl_seconds(&mut connection, &key, rules),
                3240,
                "{code:?} {name}: drained"
            );
            put_override(&store, &key, None).await;
            hit(&store, &key, rules, 1).await;
            assert_eq!(
                ttl_seconds(&mut connection, &key, rules),
                3240,
                "{code:?} {name}: the rule's own write"
            );
        }
    }
}
