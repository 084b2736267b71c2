//! Streams of hits that run while a test fails a server over, and the check that they recovered:
//! no failure later than 2 s after the promotion, plenty of successes after that, and no hang.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ratelock::{Limiter, Rules};
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
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .expect("a stream of hits hung")
                .unwrap();
        }
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
