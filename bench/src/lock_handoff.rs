//! Hand-off latency of one lock between two holders on two `Store`s (two connections): from just
//! before the holder's `release()` to the waiter's `acquire()` returning, beside one round trip.

use std::time::{Duration, Instant};

use ratelock::store::ServerCode;
use ratelock::{DistributedLock, LockGuard, Released, Store, StoreOptions};

use crate::lock_throughput;

/// The lock both holders pass back and forth.
const NAME: &str = "bench:handoff";
/// Far longer than a round: only the release message (pub/sub) can wake the waiter early.
const LEASE: Duration = Duration::from_secs(10);
const WAIT: Duration = Duration::from_secs(5);
/// How long to wait for the waiter's first (busy) attempt to reach the server.
const PARK_DEADLINE: Duration = Duration::from_secs(1);
/// After that attempt ran, time for its reply to reach the waiter, which then sleeps on the message.
const PARK_SETTLE: Duration = Duration::from_millis(1);
const ROUND_TRIPS: usize = 300;

/// What the hand-off rounds measured, in µs.
pub struct HandOff {
    pub median_us: f64,
    pub p99_us: f64,
    /// Median of one `DistributedLock::state` (one EVALSHA of lock_state.lua) on the same client.
    pub round_trip_us: f64,
    pub rounds: usize,
    /// Rounds whose waiter's first attempt was not seen on the server in time (measured anyway).
    pub not_parked: usize,
    /// Whatever went wrong (timeouts, unexpected releases, fencing tokens not rising).
    pub problems: Vec<String>,
}

/// `warm_up` unrecorded rounds, then `rounds` recorded ones; the two handles swap roles every round.
pub async fn measure(url: &str, inspect: &mut redis::Connection, warm_up: usize, rounds: usize) -> HandOff {
    let mut options = lock_throughput::options();
    options.ttl = LEASE;
    let mut locks = Vec::new();
    for _ in 0..2 {
        // EVALSHA: the hand-off counts the calls it sees in EVALSHA's statistics.
        let store_options = StoreOptions::default().with_server_code(ServerCode::Scripts);
        let store = Store::connect(url, &store_options)
            .await
            .expect("connect a lock store to the bench redis-server");
        locks.push(DistributedLock::new(&store, NAME, options.clone()).expect("hand-off lock options"));
    }
    let round_trip_us = median(&round_trips(&locks[1]).await);

    let mut problems = Vec::new();
    let mut samples = Vec::with_capacity(rounds);
    let mut not_parked = 0;
    let mut holder = 0;
    let mut guard = take_free(&locks[holder]).await;
    for round in 0..warm_up + rounds {
        let waiter = 1 - holder;
        let calls_before = evalsha_calls(inspect);
        let lock = locks[waiter].clone();
        let waiting = tokio::spawn(async move {
            let result = lock.acquire(WAIT).await;
            (result, Instant::now())
        });
        if !wait_for_evalsha(inspect, calls_before + 1).await {
            not_parked += usize::from(round >= warm_up);
        }
        tokio::time::sleep(PARK_SETTLE).await;

        let last_token = guard.fencing_token();
        let release_started = Instant::now();
        let released = guard.release().await.expect("release on the bench redis-server");
        let (acquired, acquired_at) = waiting.await.expect("the waiting task panicked");
        if released != Released::Released {
            problems.push(format!("round {round}: release returned {released:?}"));
        }
        guard = match acquired {
            Ok(next) => {
                if round >= warm_up {
                    samples.push(micros(acquired_at - release_started));
                }
                if next.fencing_token() <= last_token {
                    problems.push(format!("round {round}: fencing token did not rise"));
                }
                next
            }
            Err(err) => {
                problems.push(format!("round {round}: the waiter's acquire failed: {err}"));
                take_free(&locks[waiter]).await
            }
        };
        holder = waiter;
    }
    let _ = guard.release().await;

    samples.sort_by(f64::total_cmp);
    HandOff {
        median_us: median(&samples),
        p99_us: percentile(&samples, 0.99),
        round_trip_us,
        rounds: samples.len(),
        not_parked,
        problems,
    }
}

async fn take_free(lock: &DistributedLock) -> LockGuard {
    lock.try_acquire()
        .await
        .expect("try_acquire on the bench redis-server")
        .expect("the hand-off lock is free between rounds")
}

/// µs of single `state()` calls (one EVALSHA each), sorted, after a few unrecorded ones.
async fn round_trips(lock: &DistributedLock) -> Vec<f64> {
    let mut samples = Vec::with_capacity(ROUND_TRIPS);
    for index in 0..ROUND_TRIPS + 20 {
        let started = Instant::now();
        let state = lock.state().await.expect("lock state on the bench redis-server");
        let took = micros(started.elapsed());
        std::hint::black_box(state);
        if index >= 20 {
            samples.push(took);
        }
    }
    samples.sort_by(f64::total_cmp);
    samples
}

/// Polls the server's EVALSHA count until it reaches `calls`; false if it did not in time.
async fn wait_for_evalsha(inspect: &mut redis::Connection, calls: u64) -> bool {
    let deadline = Instant::now() + PARK_DEADLINE;
    while Instant::now() < deadline {
        if evalsha_calls(inspect) >= calls {
            return true;
        }
        tokio::time::sleep(Duration::from_micros(100)).await;
    }
    false
}

/// EVALSHA calls the server has run so far (`INFO commandstats`).
fn evalsha_calls(inspect: &mut redis::Connection) -> u64 {
    crate::redis_benchmark::command_stat(inspect, "evalsha", "calls").unwrap_or(0.0) as u64
}

fn micros(span: Duration) -> f64 {
    span.as_secs_f64() * 1e6
}

/// The middle of sorted samples (NaN when there are none).
fn median(sorted: &[f64]) -> f64 {
    percentile(sorted, 0.5)
}

/// Nearest-rank percentile of sorted samples (NaN when there are none).
pub(crate) fn percentile(sorted: &[f64], share: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (share * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
