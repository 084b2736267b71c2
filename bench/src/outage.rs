//! The circuit breaker's figures on a real redis-server, for a server that refuses connections (stopped)
//! and for one that hangs (SIGSTOP): how long until the breaker opens, what a call costs while it is
//! open (the failure policy's answer), and how long until the server is used again once it is back.

use std::time::{Duration, Instant};

use ratelock::store::connection_core::BreakerState;
use ratelock::{FailurePolicy, Limiter, LimiterOptions, Rules};
use ratelock_testkit::RedisServer;

use crate::lock_handoff::percentile;
use crate::report::{Row, Target, Unit};

/// Each call's timeout: what a SIGSTOPped server costs the call that finds it hung.
const TIMEOUT: Duration = Duration::from_millis(250);
/// Calls timed while the breaker is open.
const OPEN_CALLS: usize = 5_000;
/// Target: a call answered by the open breaker, p50 and p99.
const OPEN_CALL_TARGET_US: f64 = 50.0;
/// Target: the server is used again within this after it returns.
const RECOVERY_TARGET_US: f64 = 1_000_000.0;

/// How the server goes down.
#[derive(Clone, Copy)]
enum Outage {
    Refused,
    Frozen,
}

impl Outage {
    fn name(self) -> &'static str {
        match self {
            Outage::Refused => "server stopped (connection refused)",
            Outage::Frozen => "server frozen (SIGSTOP)",
        }
    }
}

/// The rows of both outages.
pub async fn rows(notes: &mut Vec<String>) -> Vec<Row> {
    let mut rows = Vec::new();
    for outage in [Outage::Refused, Outage::Frozen] {
        rows.extend(one(outage, notes).await);
    }
    notes.push(format!(
        "outages: on_error=allow, timeout {} ms; time to open = from the outage to the breaker leaving \
         `closed` while one task hits; calls while open: {OPEN_CALLS} sequential hits; recovery = from \
         the server's return to the first hit decided by it",
        TIMEOUT.as_millis()
    ));
    rows
}

async fn one(outage: Outage, notes: &mut Vec<String>) -> Vec<Row> {
    let mut server = RedisServer::start();
    let options = LimiterOptions::default()
        .with_on_error(FailurePolicy::Allow)
        .with_timeout(TIMEOUT);
    let limiter = Limiter::connect_with(&server.url(), options)
        .await
        .expect("limiter");
    let rules: Rules = "1000000/second".parse().expect("rule");
    let up = call_times(&limiter, &rules, 2_000).await;

    // Timed from the server's exit (stop waits for it) or from the SIGSTOP.
    match outage {
        Outage::Refused => server.stop(),
        Outage::Frozen => server.pause(),
    }
    let went_down = Instant::now();
    let mut calls_to_open = 0;
    while limiter.breaker_state() == Some(BreakerState::Closed)
        && went_down.elapsed() < Duration::from_secs(10)
    {
        let _ = limiter.hit("outage", &rules, 1).await;
        calls_to_open += 1;
    }
    let to_open = went_down.elapsed();
    let open = call_times(&limiter, &rules, OPEN_CALLS).await;

    let came_back = Instant::now();
    match outage {
        Outage::Refused => server.start_again(),
        Outage::Frozen => server.resume(),
    }
    let mut recovered = None;
    while came_back.elapsed() < Duration::from_secs(10) {
        if matches!(limiter.hit("outage", &rules, 1).await, Ok(decision) if !decision.degraded) {
            recovered = Some(came_back.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    notes.push(format!(
        "{}: {calls_to_open} call(s) until the breaker opened; a hit with the server up: p50 {:.0} µs",
        outage.name(),
        percentile(&up, 0.50)
    ));
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    vec![
        row(
            format!("{}: time to open", outage.name()),
            Some(micros(to_open)),
            Target::None,
        ),
        row(
            format!("{}: hit p50 while open", outage.name()),
            Some(percentile(&open, 0.50)),
            Target::AtMost(OPEN_CALL_TARGET_US),
        ),
        row(
            format!("{}: hit p99 while open", outage.name()),
            Some(percentile(&open, 0.99)),
            Target::AtMost(OPEN_CALL_TARGET_US),
        ),
        row(
            format!("{}: time to recover", outage.name()),
            recovered.map(micros),
            Target::AtMost(RECOVERY_TARGET_US),
        ),
    ]
}

fn row(name: String, measured: Option<f64>, target: Target) -> Row {
    Row {
        name,
        unit: Unit::Micros,
        measured,
        baseline: None,
        target,
    }
}

/// Each of `count` sequential hits' time in µs, sorted.
async fn call_times(limiter: &Limiter, rules: &Rules, count: usize) -> Vec<f64> {
    let mut times = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        let _ = limiter.hit("outage", rules, 1).await;
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    times
}
