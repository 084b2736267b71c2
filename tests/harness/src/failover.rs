//! Streams of hits and of lock grants that run while a test fails a server over, and the checks that
//! they recovered: no failure later than 2 s after the promotion, plenty of successes after that, and no
//! hang. Lock grants that overlapped (a failover can lose a lease that was not yet replicated) are
//! counted and reported, and each must be exposed by its fencing token: the later grant's is higher.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ratelock::clock::now_us;
use ratelock::{DistributedLock, Limiter, LockOptions, Rules, Store};
use tokio::task::JoinHandle;

/// How long after the promotion hits may still fail.
pub const RESUME_WITHIN: Duration = Duration::from_secs(2);

/// `tasks` tasks hitting keys `stream:<task>:<n>` (64 per task) until stopped, recording every outcome.
pub struct HitStream {
    stop: Arc<AtomicBool>,
    outcomes: Arc<Mutex<Vec<(Instant, bool)>>>,
    tasks: Vec<JoinHandle<()>>,
}

impl HitStream {
    pub fn start(limiter: &Limiter, tasks: usize) -> Self {
        let rules: Rules = "1000000/second".parse().expect("stream rule");
        let stop = Arc::new(AtomicBool::new(false));
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let tasks = (0..tasks)
            .map(|task| {
                let (limiter, rules, stop, outcomes) =
                    (limiter.clone(), rules.clone(), stop.clone(), outcomes.clone());
                tokio::spawn(async move {
                    let mut n = 0usize;
                    while !stop.load(Ordering::Relaxed) {
                        let key = format!("stream:{task}:{}", n % 64);
                        let ok = limiter.hit(key, &rules, 1).await.is_ok();
                        outcomes.lock().unwrap().push((Instant::now(), ok));
                        n += 1;
                        if !ok {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                    }
                })
            })
            .collect();
        HitStream {
            stop,
            outcomes,
            tasks,
        }
    }

    /// Stops the tasks (each must end within 5 s) and checks the recovery from a promotion at
    /// `promoted_at`; prints what happened under `label`.
    pub async fn assert_recovered(self, promoted_at: Instant, label: &str) {
        stop_all(&self.stop, self.tasks, "hits").await;
        let outcomes = self.outcomes.lock().unwrap().clone();
        let settled = promoted_at + RESUME_WITHIN;
        let late = outcomes.iter().filter(|(at, ok)| !ok && *at > settled).count();
        assert_eq!(
            late, 0,
            "{label}: hits still failed more than {RESUME_WITHIN:?} after the promotion"
        );
        let after = outcomes.iter().filter(|(at, ok)| *ok && *at > settled).count();
        assert!(
            after > 100,
            "{label}: only {after} hits succeeded after the failover"
        );
        let last_failure = outcomes.iter().filter(|(_, ok)| !ok).map(|(at, _)| *at).max();
        println!(
            "{label}: {} failed hits of {}, last failure {:?} after the promotion",
            outcomes.iter().filter(|(_, ok)| !ok).count(),
            outcomes.len(),
            last_failure.map(|last| last.saturating_duration_since(promoted_at))
        );
    }
}

/// Tells a stream's tasks to stop and waits for them; each must end within 5 s.
async fn stop_all(stop: &AtomicBool, tasks: Vec<JoinHandle<()>>, what: &str) {
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap_or_else(|_| panic!("a stream of {what} hung"))
            .unwrap();
    }
}

/// One lock grant as the holder saw it: (lock name index, fencing token, µs entered, µs left).
type Grant = (usize, u64, u64, u64);

/// `tasks` tasks taking locks `grants:<n>` (`names` of them, each task its own handle) in turn until
/// stopped, recording every grant and every failed attempt.
pub struct GrantStream {
    stop: Arc<AtomicBool>,
    grants: Arc<Mutex<Vec<Grant>>>,
    /// When an acquire failed, and whether it only waited out its time (the lock was held).
    failures: Arc<Mutex<Vec<(Instant, bool)>>>,
    tasks: Vec<JoinHandle<()>>,
}

/// A grant stream's lease length and longest wait per acquire, in ms.
const LEASE_MS: u64 = 2000;
const WAIT_MS: u64 = 500;

impl GrantStream {
    pub fn start(store: &Store, tasks: usize, names: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let grants: Arc<Mutex<Vec<Grant>>> = Arc::default();
        let failures: Arc<Mutex<Vec<(Instant, bool)>>> = Arc::default();
        let options = LockOptions::default().with_ttl(Duration::from_millis(LEASE_MS));
        let tasks = (0..tasks)
            .map(|task| {
                let name = task % names;
                let lock = DistributedLock::new(store, format!("grants:{name}"), options.clone()).unwrap();
                let (stop, grants, failures) = (stop.clone(), grants.clone(), failures.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let guard = match lock.acquire(Duration::from_millis(WAIT_MS)).await {
                            Ok(guard) => guard,
                            Err(err) => {
                                failures
                                    .lock()
                                    .unwrap()
                                    .push((Instant::now(), err.is_wait_timeout()));
                                tokio::time::sleep(Duration::from_millis(5)).await;
                                continue;
                            }
                        };
                        let entered = now_us();
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        let left = now_us();
                        grants
                            .lock()
                            .unwrap()
                            .push((name, guard.fencing_token(), entered, left));
                        let _ = guard.release().await;
                    }
                })
            })
            .collect();
        GrantStream {
            stop,
            grants,
            failures,
            tasks,
        }
    }

    /// Stops the tasks (each must end within 5 s), checks the recovery from a promotion at `promoted_at`
    /// and that every double grant is exposed by its fencing token; prints the counts under `label`.
    pub async fn assert_recovered(self, promoted_at: Instant, label: &str) {
        stop_all(&self.stop, self.tasks, "lock grants").await;
        let settled = promoted_at + RESUME_WITHIN;
        let failures = self.failures.lock().unwrap().clone();
        let late = failures
            .iter()
            .filter(|(at, waited)| !waited && *at > settled)
            .count();
        assert_eq!(
            late, 0,
            "{label}: lock grants still failed more than {RESUME_WITHIN:?} after the promotion"
        );
        // A release the failover refused leaves its lease to expire: waits for that lock may time out
        // until the lease's end, plus one wait, but no later.
        let stranded_until = settled + Duration::from_millis(LEASE_MS + WAIT_MS);
        let late_waits = failures
            .iter()
            .filter(|(at, waited)| *waited && *at > stranded_until)
            .count();
        assert_eq!(
            late_waits, 0,
            "{label}: waits for lock grants still timed out after a stranded lease's end"
        );
        let mut grants = self.grants.lock().unwrap().clone();
        grants.sort_by_key(|&(name, _, entered, _)| (name, entered));
        let settled_us = now_us() - settled.elapsed().as_micros() as u64;
        let after = grants.iter().filter(|g| g.2 > settled_us).count();
        assert!(after > 20, "{label}: only {after} lock grants after the failover");
        let mut double_grants = 0;
        for (i, a) in grants.iter().enumerate() {
            for b in grants[i + 1..].iter().take_while(|b| b.0 == a.0 && b.2 < a.3) {
                double_grants += 1;
                assert!(
                    b.1 > a.1,
                    "{label}: a double grant the fencing token does not expose: {a:?} then {b:?}"
                );
            }
        }
        println!(
            "{label}: {} lock grants, {} failed attempts, {double_grants} double grants (each exposed by a \
             higher fencing token)",
            grants.len(),
            failures.len()
        );
    }
}
