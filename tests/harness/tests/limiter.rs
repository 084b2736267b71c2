//! The Limiter API on both stores: peek never spends, reset forgets, multi-rule requests are all or
//! nothing, errors are typed, and the deciding rule is reported.

use std::time::Duration;

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
async fn the_memory_store_stays_within_its_key_bound() {
    let store = ratelock::store::MemoryStore::new(640);
    let limiter =
        Limiter::with_store(ratelock::Store::Memory(store.clone()), LimiterOptions::default()).unwrap();
    let rules: Rules = "5/hour".parse().unwrap();
    for i in 0..20_000 {
        assert!(limiter.hit(format!("user:{i}"), &rules, 1).await.unwrap().allowed);
    }
    assert!(store.len() <= 640, "{} keys kept", store.len());
    // Recent keys are still limited: the bound forgets, it does not corrupt.
    let again = limiter.hit("user:19999", &rules, 5).await.unwrap();
    assert!(!again.allowed);
}
