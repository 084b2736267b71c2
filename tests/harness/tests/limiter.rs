//! The Limiter API on both stores: peek never spends, reset forgets, multi-rule requests are all or
//! nothing, errors are typed, and the deciding rule is reported.

use std::time::Duration;

use ratelock::store::WhenFull;
use ratelock::{Algorithm, Error, Limiter, LimiterOptions, Rules};
use ratelock_testkit::stores::on_both_stores;

async fn both_stores(check: impl AsyncFn(Limiter)) {
    on_both_stores(async |store| check(Limiter::with_store(store, LimiterOptions::default()).unwrap()).await)
        .await;
}

#[tokio::test]
async fn peek_answers_like_hit_without_spending() {
    both_stores(async |limiter| {
        let rules: Rules = "3/minute".parse().unwrap();
        for _ in 0..5 {
            let peeked = limiter.peek("k", &rules, 1).await.unwrap();
            assert!(peeked.allowed);
            assert_eq!(peeked.remaining, 2);
        }
        limiter.hit("k", &rules, 3).await.unwrap();
        let peeked = limiter.peek("k", &rules, 1).await.unwrap();
        assert!(!peeked.allowed);
        assert!(peeked.retry_after > Duration::from_secs(19));
    })
    .await;
}

#[tokio::test]
async fn reset_forgets_every_rule_of_the_key() {
    both_stores(async |limiter| {
        let rules: Rules = "1/minute; 1/hour using sliding_log".parse().unwrap();
        assert!(limiter.hit("k", &rules, 1).await.unwrap().allowed);
        assert!(!limiter.hit("k", &rules, 1).await.unwrap().allowed);
        limiter.reset("k", &rules).await.unwrap();
        assert!(limiter.hit("k", &rules, 1).await.unwrap().allowed);
    })
    .await;
}

#[tokio::test]
async fn a_denial_by_one_rule_spends_nothing_on_the_others() {
    both_stores(async |limiter| {
        let rules: Rules = "10/second; 2/minute using fixed_window".parse().unwrap();
        limiter.hit("k", &rules, 2).await.unwrap();
        for _ in 0..20 {
            let denied = limiter.hit("k", &rules, 1).await.unwrap();
            assert!(!denied.allowed);
            assert_eq!(denied.rule_index, 1);
            assert_eq!(
                denied.rule(0).unwrap().remaining,
                8,
                "the per-second rule must not be spent"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn errors_are_typed() {
    both_stores(async |limiter| {
        let rules: Rules = "5/second burst 2".parse().unwrap();
        let too_big = limiter.hit("k", &rules, 3).await.unwrap_err();
        assert!(
            matches!(
                too_big,
                Error::CostExceedsCapacity {
                    cost: 3,
                    capacity: 2,
                    ..
                }
            ),
            "{too_big:?}"
        );
        assert!(limiter
            .hit("k", &rules, 0)
            .await
            .unwrap_err()
            .is_invalid_argument());
        assert!(limiter.rules("5/lightyear").unwrap_err().is_invalid_rule());
    })
    .await;
}

#[tokio::test]
async fn rule_text_takes_the_limiters_default_algorithm() {
    let mut options = LimiterOptions::default();
    options.default_algorithm = Algorithm::SlidingLog;
    let limiter = Limiter::connect_with("memory://", options).await.unwrap();
    let rules = limiter.rules("2/second; 5/minute using gcra").unwrap();
    assert_eq!(rules[0].algorithm(), Algorithm::SlidingLog);
    assert_eq!(rules[1].algorithm(), Algorithm::Gcra);
}

#[tokio::test]
async fn unsupported_urls_are_clear_errors() {
    let err = Limiter::connect("mysql://localhost").await.unwrap_err();
    assert!(err.is_invalid_argument());
    assert!(err.to_string().contains("mysql://"), "{err}");
}

#[test]
fn the_memory_store_is_exact_under_many_threads() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let limiter = Limiter::memory();
    let rules: Rules = "1000/hour; 700/hour using sliding_log".parse().unwrap();
    let threads: Vec<_> = (0..32)
        .map(|_| {
            let (limiter, rules) = (limiter.clone(), rules.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
                (0..100)
                    .filter(|_| rt.block_on(limiter.hit("shared", &rules, 1)).unwrap().allowed)
                    .count()
            })
        })
        .collect();
    let admitted: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(admitted, 700);
    drop(runtime);
}

#[tokio::test]
async fn a_key_flood_never_makes_the_default_memory_store_forget_a_live_limit() {
    // The default memory store (Limiter::memory): once bounded at a million keys, evicting the nearest
    // expiry, so a flood of keys that expire later than the victims' reset the victims' limits.
    let limiter = Limiter::memory();
    let rules: Rules = "5/hour".parse().unwrap();
    let flood_rules: Rules = "5/day".parse().unwrap();
    for victim in 0..2_000 {
        let spent = limiter.hit(format!("victim:{victim}"), &rules, 5).await.unwrap();
        assert!(spent.allowed);
    }
    for flood in 0..1_100_000 {
        limiter
            .hit(format!("flood:{flood}"), &flood_rules, 5)
            .await
            .unwrap();
    }
    let mut allowed_again = 0;
    for victim in 0..2_000 {
        allowed_again += usize::from(
            limiter
                .hit(format!("victim:{victim}"), &rules, 1)
                .await
                .unwrap()
                .allowed,
        );
    }
    assert_eq!(
        allowed_again, 0,
        "{allowed_again} victims' used-up limits came back after a flood of other keys"
    );
}

#[tokio::test]
async fn expired_keys_are_reclaimed_as_the_memory_store_grows() {
    let store = ratelock::store::MemoryStore::unbounded();
    let limiter =
        Limiter::with_store(ratelock::Store::Memory(store.clone()), LimiterOptions::default()).unwrap();
    let rules: Rules = "5/second".parse().unwrap();
    let start = 1_763_800_000_000_000u64;
    // 100 waves of 2,000 keys, each wave a minute after the last: only about one wave is ever live.
    for wave in 0..100u64 {
        for key in 0..2_000 {
            let now = start + wave * 60_000_000;
            limiter
                .hit_at(format!("w{wave}:{key}"), &rules, 1, now)
                .await
                .unwrap();
        }
    }
    assert!(
        store.len() <= 6_000,
        "{} keys kept: expired keys were not reclaimed",
        store.len()
    );
}

#[tokio::test]
async fn a_full_bounded_store_refuses_or_evicts_as_chosen_and_counts_evictions() {
    let rules: Rules = "5/hour".parse().unwrap();
    let refusing = ratelock::store::MemoryStore::bounded(640, WhenFull::Refuse);
    let limiter = Limiter::with_store(
        ratelock::Store::Memory(refusing.clone()),
        LimiterOptions::default(),
    )
    .unwrap();
    let mut refused = 0;
    for i in 0..20_000 {
        match limiter.hit(format!("user:{i}"), &rules, 1).await {
            Ok(decision) => assert!(decision.allowed),
            Err(error) => {
                assert!(
                    error.is_store_failure() && error.to_string().contains("memory store is full"),
                    "{error}"
                );
                refused += 1;
            }
        }
    }
    assert!(
        refusing.len() <= 640 && refused > 0,
        "{} keys, {refused} refused",
        refusing.len()
    );
    assert!(
        !limiter.hit("user:0", &rules, 5).await.unwrap().allowed,
        "a kept limit is never forgotten"
    );

    let evicting = ratelock::store::MemoryStore::bounded(640, WhenFull::Evict);
    let limiter = Limiter::with_store(
        ratelock::Store::Memory(evicting.clone()),
        LimiterOptions::default(),
    )
    .unwrap();
    for i in 0..20_000 {
        assert!(limiter.hit(format!("user:{i}"), &rules, 1).await.unwrap().allowed);
    }
    assert!(evicting.len() <= 640, "{} keys kept", evicting.len());
    assert!(
        evicting.evictions() >= 19_000,
        "{} evictions counted",
        evicting.evictions()
    );
    assert!(
        !limiter.hit("user:19999", &rules, 5).await.unwrap().allowed,
        "recent keys stay limited"
    );
}

/// A hit on a bounded memory store, on a thread of its own: `None` when it has not returned within
/// 5 s (it would hold its shard's lock meanwhile).
fn hit_within_seconds(
    store: &ratelock::store::MemoryStore,
    key: &str,
    rules: &str,
) -> Option<Result<bool, Error>> {
    let (store, key, rules) = (store.clone(), key.to_owned(), rules.parse::<Rules>().unwrap());
    let (answered, answer) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let limiter = Limiter::with_store(ratelock::Store::Memory(store), LimiterOptions::default()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let decision = runtime.block_on(limiter.hit(key, &rules, 1));
        let _ = answered.send(decision.map(|decision| decision.allowed));
    });
    answer.recv_timeout(Duration::from_secs(5)).ok()
}

#[test]
fn a_request_with_more_rules_than_a_bounded_shard_holds_is_a_configuration_error() {
    // 10 keys over 64 shards: one key per shard, and the request needs two. Evicting went on forever on
    // an empty shard (its lock held); refusing said "full" of an empty store.
    for when_full in [WhenFull::Evict, WhenFull::Refuse] {
        let store = ratelock::store::MemoryStore::bounded(10, when_full);
        let answer = hit_within_seconds(&store, "k", "1/second; 10/minute")
            .unwrap_or_else(|| panic!("{when_full:?}: the hit did not return within 5 s"));
        let error = answer.expect_err("two keys in a shard that holds one");
        assert!(error.is_configuration(), "{when_full:?}: {error}");
        assert!(error.to_string().contains("max_keys"), "{error}");
        assert_eq!(store.len(), 0, "nothing kept of a refused request");
    }
}

#[tokio::test]
async fn a_bounded_store_keeps_its_bound_under_requests_of_several_rules() {
    // Two keys per shard; each user first hits one rule, then two: making room must not evict the
    // user's own key and then put it back past the bound.
    let store = ratelock::store::MemoryStore::bounded(128, WhenFull::Evict);
    let limiter =
        Limiter::with_store(ratelock::Store::Memory(store.clone()), LimiterOptions::default()).unwrap();
    let (one, two): (Rules, Rules) = ("10/hour".parse().unwrap(), "10/hour; 100/day".parse().unwrap());
    for user in 0..200 {
        let key = format!("user:{user}");
        for rules in [&one, &two] {
            assert!(limiter.hit(&key, rules, 1).await.unwrap().allowed, "{key}");
        }
    }
    assert!(
        store.len() <= 128,
        "{} keys held against a bound of 128",
        store.len()
    );
}

#[tokio::test]
async fn a_full_bounded_store_reclaims_expired_keys_before_refusing_or_evicting() {
    // One key per shard. Each shard is filled with a key of an hour, the store cleared, and refilled
    // with keys of a second: ten seconds on, every held key has expired, and a new key must find
    // room. The sweep waited for the cleared keys' hour (refusing, or evicting, meanwhile).
    let (hour, second): (Rules, Rules) = ("1/hour".parse().unwrap(), "1/second".parse().unwrap());
    let start = 1_763_800_000_000_000u64;
    for when_full in [WhenFull::Refuse, WhenFull::Evict] {
        let store = ratelock::store::MemoryStore::bounded(64, when_full);
        let limiter =
            Limiter::with_store(ratelock::Store::Memory(store.clone()), LimiterOptions::default()).unwrap();
        for i in 0..2_000 {
            let _ = limiter.hit_at(format!("hour:{i}"), &hour, 1, start).await;
        }
        store.clear();
        for i in 0..2_000 {
            let _ = limiter.hit_at(format!("second:{i}"), &second, 1, start).await;
        }
        let evicted = store.evictions();
        let mut admitted = 0;
        for i in 0..2_000 {
            let later = limiter
                .hit_at(format!("later:{i}"), &second, 1, start + 10_000_000)
                .await;
            admitted += u32::from(later.is_ok_and(|decision| decision.allowed));
        }
        assert!(
            admitted >= 64,
            "{when_full:?}: {admitted} new keys admitted where every shard held an expired key"
        );
        if when_full == WhenFull::Evict {
            // A shard's first new key finds its expired key swept; only the ones after it evict.
            assert!(
                store.evictions() - evicted <= 2_000 - 64,
                "{} evictions: expired keys were evicted as live ones",
                store.evictions() - evicted
            );
        }
    }
}

#[tokio::test]
async fn a_memory_store_refuses_a_time_or_a_ban_past_its_range() {
    let store = ratelock::store::MemoryStore::unbounded();
    let rules: Rules = "5/second".parse().unwrap();
    let request = ratelock::store::LimitRequest {
        prefix: "rl",
        key: b"k",
        rules: &rules,
        cost: 1,
        now_us: Some(u64::MAX - 5),
        spend: true,
        max_wait_us: None,
    };
    let error = store.check(&request).expect_err("a time past 2^52 µs");
    assert!(error.to_string().contains("now"), "{error}");
    // A span built directly, past 366 days: refused as the Lua script refuses it (it overflowed).
    let limiter = Limiter::with_store(ratelock::Store::Memory(store), LimiterOptions::default()).unwrap();
    let ban = ratelock::algorithm::standing::StandingCall::Set {
        standing: ratelock::algorithm::standing::Standing::Banned,
        for_us: u64::MAX,
    };
    let error = limiter
        .stand("k", ban, Some(1_000_000))
        .await
        .expect_err("a ban of u64::MAX µs");
    assert!(matches!(error, Error::InvalidArgument { .. }), "{error}");
}

/// `redis+unix://PATH` reaches a server on its Unix socket (the documented URL form).
#[tokio::test]
async fn a_unix_socket_url_reaches_the_server() {
    let dir = std::env::temp_dir().join(format!("ratelock-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("redis.sock").display().to_string();
    let server = ratelock_testkit::redis_server::RedisServer::start_with(&["--unixsocket", &socket]);
    let limiter = Limiter::connect(&format!("redis+unix://{socket}")).await.unwrap();
    let rules: Rules = "1/minute".parse().unwrap();
    assert!(limiter.hit("over-unix", &rules, 1).await.unwrap().allowed);
    assert!(!limiter.hit("over-unix", &rules, 1).await.unwrap().allowed);
    limiter.ping().await.unwrap();
    // A connection the server closes while idle is found before the next call is written to it: that
    // call goes out on a fresh connection (it failed as an outage, "broken pipe").
    for round in 0..3 {
        server.kill_clients();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let answer = limiter.peek("over-unix", &rules, 1).await;
        assert!(
            answer
                .as_ref()
                .is_ok_and(|decision| !decision.degraded && !decision.allowed),
            "round {round}: {answer:?}"
        );
    }
}

/// A wrong password or db index over a connection redis-rs opens (`redis+unix://`, `rediss://`) is a
/// configuration error under every failure policy, also with a timeout shorter than redis-rs's own
/// retries of a refused AUTH would take (they once ran past it, and the call became an outage that
/// `on_error = allow` let through).
#[tokio::test]
async fn a_wrong_password_over_a_unix_socket_is_never_an_outage() {
    let dir = std::env::temp_dir().join(format!("ratelock-unix-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("redis.sock").display().to_string();
    let _server = ratelock_testkit::redis_server::RedisServer::start_with(&[
        "--unixsocket",
        &socket,
        "--requirepass",
        "secret",
    ]);
    let rules: Rules = "5/second".parse().unwrap();
    for url in [
        format!("redis+unix://{socket}?pass=wrong"),
        format!("redis+unix://{socket}?pass=secret&db=77"),
    ] {
        let mut options = LimiterOptions::default().with_on_error(ratelock::FailurePolicy::Allow);
        options.store.timeout = Duration::from_millis(300);
        let limiter = Limiter::connect_with(&url, options).await.unwrap();
        for _ in 0..3 {
            let answer = limiter.hit("k", &rules, 1).await;
            assert!(
                answer.as_ref().is_err_and(Error::is_configuration),
                "{url}: {answer:?}"
            );
        }
    }
    drop(_server);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_limiter_in_shadow_refuses_a_banning_rule_and_bans_nobody() {
    on_both_stores(async |store| {
        let options = LimiterOptions::default();
        let rollout = Limiter::with_store(store.clone(), options.clone().with_shadow(true)).unwrap();
        let serving = Limiter::with_store(store, options).unwrap();
        let banning: Rules = "2/minute block 1 hour".parse().unwrap();
        for _ in 0..3 {
            let refused = rollout.hit("user", &banning, 1).await.unwrap_err();
            assert_eq!(refused.code(), "INVALID_RULE", "{refused}");
            assert!(refused.to_string().contains("shadow cannot block"), "{refused}");
        }
        assert!(rollout.peek("user", &banning, 1).await.is_err());
        // What the rollout would have written (a ban on the key) would deny here for real.
        let other: Rules = "100/minute".parse().unwrap();
        let decision = serving.hit("user", &other, 1).await.unwrap();
        assert!(decision.allowed, "{decision:?}");
        // Without block, the same limit rolls out in shadow.
        let trial: Rules = "2/minute".parse().unwrap();
        for _ in 0..3 {
            assert!(rollout.hit("user", &trial, 1).await.unwrap().allowed);
        }
        assert!(rollout.hit("user", &trial, 1).await.unwrap().would_deny);
    })
    .await;
}
