//! The local deny cache against a flood: one hot key, already denied, hit at about 50,000 calls/s for
//! two seconds by eight tasks, through a limiter on a real redis-server with the cache off and then on;
//! the server's limit calls per second (from `INFO commandstats`) beside the hits sent. Run alone:
//! `cargo run --release -p ratelock-bench -- deny-cache`.

use std::time::{Duration, Instant};

use ratelock::{Limiter, LimiterOptions, Store, StoreOptions};
use ratelock_testkit::RedisServer;

use crate::redis_benchmark::command_stat;
use crate::report::{Row, Target, Unit};

/// The flood's pace, in hits per second across all tasks.
const FLOOD_PER_SECOND: u64 = 50_000;
const TASKS: u64 = 8;
const FLOOD: Duration = Duration::from_secs(2);

/// Every limit call the server ran, on whichever route (module, function or script).
fn limit_calls(connection: &mut redis::Connection) -> f64 {
    ["evalsha", "fcall", "ratelock.limit"]
        .into_iter()
        .filter_map(|command| command_stat(connection, command, "calls"))
        .sum()
}

/// Floods `key` through `limiter` at the pace for the flood's length; the hits sent.
async fn flood(limiter: &Limiter, key: &str) -> u64 {
    let rules = limiter.rules("100/minute").expect("flood rule");
    let started = Instant::now();
    let per_task = FLOOD_PER_SECOND / TASKS;
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (limiter, rules, key) = (limiter.clone(), rules.clone(), key.to_owned());
            tokio::spawn(async move {
                let mut sent = 0u64;
                while started.elapsed() < FLOOD {
                    // Paced: the nth hit of this task goes no sooner than n / per_task seconds in.
                    let due = Duration::from_secs_f64(sent as f64 / per_task as f64);
                    if let Some(wait) = due.checked_sub(started.elapsed()) {
                        tokio::time::sleep(wait).await;
                    }
                    let _ = limiter.hit(&key, &rules, 1).await;
                    sent += 1;
                }
                sent
            })
        })
        .collect();
    let mut sent = 0;
    for task in tasks {
        sent += task.await.expect("flood task");
    }
    sent
}

pub async fn rows(notes: &mut Vec<String>) -> Vec<Row> {
    let server = RedisServer::start();
    let mut connection = server.connection();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .expect("store");
    let mut rows = Vec::new();
    let mut without = None;
    for cached in [false, true] {
        let mut options = LimiterOptions::default().with_prefix(if cached { "cached" } else { "plain" });
        if cached {
            options = options.with_deny_cache(10_000);
        }
        let limiter = Limiter::with_store(store.clone(), options).expect("limiter");
        // Use the key up first, so that the whole flood is denied.
        let rules = limiter.rules("100/minute").expect("flood rule");
        for _ in 0..101 {
            limiter.hit("hot", &rules, 1).await.expect("warm-up hit");
        }
        let before = limit_calls(&mut connection);
        let started = Instant::now();
        let sent = flood(&limiter, "hot").await;
        let seconds = started.elapsed().as_secs_f64();
        let calls = (limit_calls(&mut connection) - before) / seconds;
        let label = if cached { "on" } else { "off" };
        notes.push(format!(
            "deny cache {label}: {} hits/s sent on one denied key, {calls:.0} limit calls/s reached Redis",
            (sent as f64 / seconds).round()
        ));
        rows.push(Row {
            name: format!("Redis limit calls/s under a flood of one denied key, deny cache {label}"),
            unit: Unit::PerSecond,
            measured: Some(calls),
            baseline: if cached { without } else { None },
            target: Target::None,
        });
        if !cached {
            without = Some(calls);
        }
    }
    notes.push(format!(
        "deny cache: {TASKS} tasks pace {FLOOD_PER_SECOND} hits/s in all for {} s at one key already denied \
         by 100/minute; limit calls counted from INFO commandstats (evalsha, fcall, ratelock.limit)",
        FLOOD.as_secs()
    ));
    rows
}
