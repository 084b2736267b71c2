//! Hits per second of the Rust client on Redis: tokio tasks sharing one `Limiter` (one multiplexed
//! connection), each awaiting its hits one after another until the measuring window closes.

use std::time::{Duration, Instant};

use ratelock::{Limiter, Rules};

/// A warm-up, whose hits are not counted, then the measured span.
#[derive(Clone, Copy)]
pub struct Window {
    pub warm_up: Duration,
    pub measure: Duration,
}

/// Hits per second of `tasks` concurrent tasks, all hitting `key` with `rules` through `limiter`.
pub async fn hits_per_second(
    limiter: &Limiter,
    rules: &Rules,
    key: &'static str,
    tasks: usize,
    window: Window,
) -> f64 {
    run_tasks(limiter, rules, key, tasks, window.warm_up).await;
    let started = Instant::now();
    let hits = run_tasks(limiter, rules, key, tasks, window.measure).await;
    hits as f64 / started.elapsed().as_secs_f64()
}

/// Runs the tasks for `span`; returns the number of hits they completed.
async fn run_tasks(limiter: &Limiter, rules: &Rules, key: &'static str, tasks: usize, span: Duration) -> u64 {
    let deadline = Instant::now() + span;
    total_of_tasks(tasks, |_| {
        hit_until(limiter.clone(), rules.clone(), key, deadline)
    })
    .await
}

/// Spawns `tasks` tasks, the `n`th running `task(n)`, and adds up the counts they return.
pub async fn total_of_tasks<Task>(tasks: usize, mut task: impl FnMut(usize) -> Task) -> u64
where
    Task: std::future::Future<Output = u64> + Send + 'static,
{
    let handles: Vec<_> = (0..tasks).map(|n| tokio::spawn(task(n))).collect();
    let mut total = 0;
    for handle in handles {
        total += handle.await.expect("a benchmark task panicked");
    }
    total
}

async fn hit_until(limiter: Limiter, rules: Rules, key: &'static str, deadline: Instant) -> u64 {
    let mut hits = 0;
    while Instant::now() < deadline {
        let decision = limiter
            .hit(key, &rules, 1)
            .await
            .expect("hit on the bench redis-server");
        std::hint::black_box(decision);
        hits += 1;
    }
    hits
}
