//! Hits per second on a 3-master Redis Cluster beside one server, in the same run: 64 tasks sharing one
//! `Limiter`, each cycling over its own keys, so the keys spread over the slots (and the masters).

use std::time::{Duration, Instant};

use ratelock::{Limiter, Rules};
use ratelock_testkit::{RedisCluster, RedisServer};

use crate::client_throughput::{total_of_tasks, Window};
use crate::report::{Row, Target, Unit};

const TASKS: usize = 64;
const KEYS_PER_TASK: usize = 64;

/// The cluster row: its hits/s against one server's, both with `TASKS` tasks over many keys.
pub async fn rows(server: &RedisServer, rules: &Rules, window: Window, notes: &mut Vec<String>) -> Vec<Row> {
    let cluster = RedisCluster::start(3, 0);
    let single = Limiter::connect(&server.url())
        .await
        .expect("connect to the bench redis-server");
    let spread = Limiter::connect(&cluster.url())
        .await
        .expect("connect to the bench cluster");
    let single_rate = spread_hits_per_second(&single, rules, window).await;
    let cluster_rate = spread_hits_per_second(&spread, rules, window).await;
    notes.push(format!(
        "cluster: 3 masters, no replicas, on this machine's {} cores with the client; {TASKS} tasks x {KEYS_PER_TASK} keys each",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    vec![Row {
        name: format!("Redis Cluster (3 masters) hits, {TASKS} tasks over many keys vs one server"),
        unit: Unit::PerSecond,
        measured: Some(cluster_rate),
        baseline: Some(single_rate),
        target: Target::RatioAtLeast(2.0),
    }]
}

async fn spread_hits_per_second(limiter: &Limiter, rules: &Rules, window: Window) -> f64 {
    run(limiter, rules, window.warm_up).await;
    let started = Instant::now();
    let hits = run(limiter, rules, window.measure).await;
    hits as f64 / started.elapsed().as_secs_f64()
}

async fn run(limiter: &Limiter, rules: &Rules, span: Duration) -> u64 {
    let deadline = Instant::now() + span;
    total_of_tasks(TASKS, |task| {
        let (limiter, rules) = (limiter.clone(), rules.clone());
        async move {
            let keys: Vec<String> = (0..KEYS_PER_TASK)
                .map(|n| format!("bench:spread:{task}:{n}"))
                .collect();
            let mut hits = 0u64;
            while Instant::now() < deadline {
                let key = &keys[hits as usize % KEYS_PER_TASK];
                std::hint::black_box(limiter.hit(key, &rules, 1).await.expect("bench hit"));
                hits += 1;
            }
            hits
        }
    })
    .await
}
