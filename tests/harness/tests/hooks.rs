//! The decision hook on both stores: every limiter answer passes every hook (decisions, degraded
//! decisions and errors alike, with the call's time), a hook may change the answer or give it before
//! the store is asked, and every wait, grant, release and loss of a hold passes the lock's hooks.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratelock::hook::{Answered, Hook, LimitCall, LockEvent};
use ratelock::{
    Decision, DistributedLock, FailurePolicy, Limiter, LimiterOptions, LockOptions, Store, StoreOptions,
};
use ratelock_testkit::stores::on_both_stores;

/// Writes down what it sees, as text.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
}

impl Recorder {
    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Hook for Recorder {
    fn on_decision(&self, call: &LimitCall<'_>, answer: &mut ratelock::Result<Decision>, how: Answered) {
        let what = match answer {
            Ok(decision) if decision.degraded => "degraded".to_owned(),
            Ok(decision) => format!("allowed={}", decision.allowed),
            Err(error) => format!("error {}", error.code()),
        };
        let how = match how {
            Answered::ByStore { elapsed: Some(_), .. } => "store, timed".to_owned(),
            Answered::ByStore { elapsed: None, .. } => "store".to_owned(),
            Answered::ByHook => "hook".to_owned(),
            Answered::ByPolicy { error } => format!("policy, {error}"),
            _ => "other".to_owned(),
        };
        let key = String::from_utf8_lossy(call.key);
        self.seen.lock().unwrap().push(format!(
            "{key} cost={} spend={} {what} ({how})",
            call.cost, call.spend
        ));
    }

    fn on_lock_event(&self, event: &LockEvent<'_>) {
        let line = match event {
            LockEvent::Waited { what, error, .. } => {
                format!(
                    "waited {what}: {}",
                    error.map_or("granted".to_owned(), |e| e.code().to_owned())
                )
            }
            LockEvent::Acquired { what, fencing_token } => {
                format!("acquired {what} token={}", fencing_token.is_some())
            }
            LockEvent::Released { what, .. } => format!("released {what}"),
            LockEvent::Lost { what, reason, .. } => format!("lost {what}: {}", reason.kind()),
            _ => "other".to_owned(),
        };
        self.seen.lock().unwrap().push(line);
    }
}

/// Lets every denial through, saying so in `retry_after = 0` (a stand-in for shadow mode).
struct LetThrough;

impl Hook for LetThrough {
    fn on_decision(&self, _call: &LimitCall<'_>, answer: &mut ratelock::Result<Decision>, _how: Answered) {
        if let Ok(decision) = answer {
            decision.allowed = true;
        }
    }
}

/// Answers every call itself: the store is never asked.
struct AnswersFirst;

impl Hook for AnswersFirst {
    fn before_decision(&self, _call: &LimitCall<'_>) -> Option<Decision> {
        let wait = Duration::from_secs(9);
        Some(Decision::summary(false, 1, 0, wait, wait, 0, false))
    }
}

#[tokio::test]
async fn every_decision_passes_every_hook_in_order() {
    on_both_stores(async |store| {
        let recorder = Arc::new(Recorder::default());
        let options = LimiterOptions::default()
            .with_prefix(format!("hooks{}", rand_suffix()))
            .with_hook(recorder.clone())
            .with_hook(Arc::new(LetThrough));
        let limiter = Limiter::with_store(store, options).unwrap();
        let rules = limiter.rules("1/minute").unwrap();
        assert!(limiter.hit("k", &rules, 1).await.unwrap().allowed);
        // Denied by the rule; the recorder (first) sees the denial, LetThrough (second) lets it through.
        assert!(limiter.hit("k", &rules, 1).await.unwrap().allowed);
        assert!(limiter.peek("k", &rules, 1).await.unwrap().allowed);
        assert_eq!(
            recorder.seen(),
            [
                "k cost=1 spend=true allowed=true (store, timed)",
                "k cost=1 spend=true allowed=false (store, timed)",
                "k cost=1 spend=false allowed=false (store, timed)",
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn blocking_calls_pass_the_hooks_too() {
    let recorder = Arc::new(Recorder::default());
    let options = LimiterOptions::default().with_hook(recorder.clone());
    let store = Store::new("memory://", &StoreOptions::default()).unwrap();
    let limiter = Limiter::with_store(store, options).unwrap();
    let rules = limiter.rules("1/minute").unwrap();
    for _ in 0..2 {
        limiter.try_hit_blocking("b", &rules, 1, None).unwrap().unwrap();
    }
    assert_eq!(
        recorder.seen(),
        [
            "b cost=1 spend=true allowed=true (store, timed)",
            "b cost=1 spend=true allowed=false (store, timed)"
        ]
    );
}

#[tokio::test]
async fn outages_and_errors_pass_the_hooks_and_a_hook_may_answer_first() {
    // Nothing listens on port 1: every call meets an outage.
    let down = "redis://127.0.0.1:1/";
    let recorder = Arc::new(Recorder::default());
    let allowing = LimiterOptions::default()
        .with_on_error(FailurePolicy::Allow)
        .with_hook(recorder.clone());
    let limiter = Limiter::connect_with(down, allowing).await.unwrap();
    let rules = limiter.rules("5/second").unwrap();
    assert!(limiter.hit("a", &rules, 1).await.unwrap().degraded);
    let raising = LimiterOptions::default().with_hook(recorder.clone());
    let limiter = Limiter::connect_with(down, raising).await.unwrap();
    assert!(limiter.hit("r", &rules, 1).await.unwrap_err().is_store_failure());
    let seen = recorder.seen();
    // The failure policy answered the outage: the hooks are told which (a store error counter needs it).
    assert_eq!(
        seen[0],
        "a cost=1 spend=true degraded (policy, STORE_UNAVAILABLE)"
    );
    assert_eq!(
        seen[1],
        "r cost=1 spend=true error STORE_UNAVAILABLE (store, timed)"
    );
    // An argument refused before the call is made (here a key too long) is no answer of the store.
    let long_key = "k".repeat(ratelock::MAX_KEY_BYTES + 1);
    assert!(limiter
        .hit(&long_key, &rules, 1)
        .await
        .unwrap_err()
        .is_invalid_argument());
    assert_eq!(recorder.seen().len(), 2);

    let first = LimiterOptions::default()
        .with_hook(Arc::new(AnswersFirst))
        .with_hook(recorder.clone());
    let limiter = Limiter::connect_with(down, first).await.unwrap();
    let answer = limiter.hit("h", &rules, 1).await.unwrap();
    assert!(!answer.allowed && answer.retry_after == Duration::from_secs(9));
    assert_eq!(
        recorder.seen().last().unwrap(),
        "h cost=1 spend=true allowed=false (hook)"
    );
}

#[tokio::test]
async fn every_wait_grant_release_and_loss_passes_the_locks_hooks() {
    on_both_stores(async |store| {
        let recorder = Arc::new(Recorder::default());
        let name = format!("hooks:lock{}", rand_suffix());
        let options = LockOptions::default()
            .with_ttl(Duration::from_millis(600))
            .with_hook(recorder.clone());
        let lock = DistributedLock::new(&store, &name, options.clone()).unwrap();
        let guard = lock.acquire(Duration::from_secs(1)).await.unwrap();
        let other = DistributedLock::new(&store, &name, options).unwrap();
        assert!(other
            .acquire(Duration::from_millis(50))
            .await
            .unwrap_err()
            .is_wait_timeout());
        guard.release().await.unwrap();

        let guard = lock.try_acquire().await.unwrap().expect("free");
        assert!(lock.force_release().await.unwrap());
        let _ = guard.extend(Duration::from_millis(600)).await;
        assert!(guard.is_lost());
        drop(guard);
        assert_eq!(
            recorder.seen(),
            [
                "acquired lock token=true",
                "waited lock: granted",
                "waited lock: WAIT_TIMEOUT",
                "released lock",
                "acquired lock token=true",
                "lost lock: taken",
            ]
        );
    })
    .await;
}

/// A suffix that keeps names apart between the two stores' runs and between test runs.
fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// A release that finds the lease gone is one `Lost` event, never also `Released`; so is a dropped
/// guard's, heard once the store answered.
#[tokio::test]
async fn a_release_that_finds_the_lease_gone_is_lost_not_released() {
    on_both_stores(async |store| {
        let recorder = Arc::new(Recorder::default());
        let name = format!("hooks:gone{}", rand_suffix());
        let options = LockOptions::default()
            .with_auto_renew(false)
            .with_hook(recorder.clone());
        let lock = DistributedLock::new(&store, &name, options).unwrap();
        let guard = lock.try_acquire().await.unwrap().expect("free");
        assert!(lock.force_release().await.unwrap());
        assert_eq!(guard.release().await.unwrap(), ratelock::Released::NotHeld);

        let guard = lock.try_acquire().await.unwrap().expect("free");
        assert!(lock.force_release().await.unwrap());
        drop(guard);
        let until = std::time::Instant::now() + Duration::from_secs(2);
        while recorder.seen().len() < 4 && std::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            recorder.seen(),
            [
                "acquired lock token=true",
                "lost lock: expired",
                "acquired lock token=true",
                "lost lock: expired",
            ]
        );
    })
    .await;
}
