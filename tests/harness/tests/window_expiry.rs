//! A fixed or sliding window's key expires where its window ends (the next window's end, for a sliding
//! one), on every server path: the module, the Functions library and EVALSHA, through one rule (the
//! scripts' fast path) and several (their general path). The window's first hit sets that expiry and
//! later hits in the same window keep it; the first hit of the next window sets the next one. A key
//! that expired before its window ended would forget the window's count and admit too much.

use ratelock::store::{LimitRequest, LimitStore, ServerCode};
use ratelock::{Rules, Store, StoreOptions};
use ratelock_testkit::module::server_with_module;
use redis::Commands;

/// A minute boundary, in µs since the Unix epoch (the hits give their own times).
const MINUTE: u64 = 1_700_000_040_000_000;
const SECOND: u64 = 1_000_000;

/// A hit of `rules` on `key` at `now_us`.
async fn hit(store: &Store, key: &str, rules: &Rules, now_us: u64) {
    let request = LimitRequest {
        prefix: "exp",
        key: key.as_bytes(),
        rules,
        cost: 1,
        spend: true,
        max_wait_us: None,
        now_us: Some(now_us),
    };
    let verdict = store.check(&request).await.unwrap();
    assert!(verdict.outcomes.iter().all(|o| o.allowed), "{verdict:?}");
}

/// The PTTL in seconds (rounded) of each rule's key of `key`, in rule order.
fn ttl_seconds(connection: &mut redis::Connection, key: &str, rules: &Rules) -> Vec<i64> {
    rules
        .iter()
        .map(|rule| {
            let stored = ratelock::key::storage_key("exp", key.as_bytes(), rule);
            let ms: i64 = connection.pttl(&stored[..]).unwrap();
            (ms + 500) / 1000
        })
        .collect()
}

#[tokio::test]
async fn a_window_key_expires_where_its_window_ends_on_every_path() {
    let server = server_with_module(&[]);
    let mut connection = server.connection();
    let fixed: Rules = "10/minute using fixed_window".parse().unwrap();
    let sliding: Rules = "10/minute using sliding_window".parse().unwrap();
    let both: Rules = "10/minute using fixed_window; 20/minute using sliding_window"
        .parse()
        .unwrap();
    for code in [ServerCode::Module, ServerCode::Lua, ServerCode::Scripts] {
        let options = StoreOptions::default().with_server_code(code);
        let store = Store::connect(&server.url(), &options).await.unwrap();
        for (name, rules, windows) in [("fixed", &fixed, [1]), ("sliding", &sliding, [2])]
            .iter()
            .map(|(name, rules, windows)| (*name, *rules, windows.to_vec()))
            .chain([("both", &both, vec![1, 2])])
        {
            let key = format!("{code:?}:{name}");
            // The window's first hit, 59 s before its end.
            hit(&store, &key, rules, MINUTE + SECOND).await;
            let first: Vec<i64> = windows.iter().map(|w| w * 60 - 1).collect();
            assert_eq!(
                ttl_seconds(&mut connection, &key, rules),
                first,
                "{code:?} {name}: first hit"
            );
            // Another hit 1.5 s before the window ends: the expiry stands (it would read 2 s, or 62 s
            // for the sliding window, were it set again from this hit).
            hit(&store, &key, rules, MINUTE + 58 * SECOND + SECOND / 2).await;
            assert_eq!(
                ttl_seconds(&mut connection, &key, rules),
                first,
                "{code:?} {name}: same window"
            );
            // The next window's first hit, 30 s into it: its own end.
            hit(&store, &key, rules, MINUTE + 90 * SECOND).await;
            let next: Vec<i64> = windows.iter().map(|w| w * 60 - 30).collect();
            assert_eq!(
                ttl_seconds(&mut connection, &key, rules),
                next,
                "{code:?} {name}: next window"
            );
        }
    }
}
