//! Decisions per second of the memory store on one thread and one warm key. Each future is polled
//! once with a no-op waker (the memory store never waits), so no async runtime is measured.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use ratelock::store::{LimitRequest, MemoryStore};
use ratelock::{Limiter, Rules};

/// Calls between two looks at the clock, so reading it costs next to nothing per call.
const BATCH: u64 = 4096;

/// What one run measured.
pub struct MemoryRate {
    pub per_second: f64,
    pub allowed_share: f64,
}

/// `Limiter::hit` on `key`, first for `warm_up`, then measured for `measure`.
pub fn limiter_hits(
    limiter: &Limiter,
    rules: &Rules,
    key: &str,
    warm_up: Duration,
    measure: Duration,
) -> MemoryRate {
    let hit = || {
        let decision = ready(limiter.hit(black_box(key), black_box(rules), 1)).expect("memory hit");
        black_box(decision).allowed
    };
    repeat_for(warm_up, hit);
    repeat_for(measure, hit)
}

/// `MemoryStore::check` (spending, store clock) on `key`, the layer under `Limiter::hit`.
pub fn store_checks(
    store: &MemoryStore,
    rules: &Rules,
    key: &str,
    warm_up: Duration,
    measure: Duration,
) -> MemoryRate {
    let request = LimitRequest {
        prefix: "rl",
        key: key.as_bytes(),
        rules,
        cost: 1,
        now_us: None,
        spend: true,
        max_wait_us: None,
    };
    let check = || {
        let outcomes = store.check(black_box(&request)).expect("memory check");
        black_box(outcomes).outcomes[0].allowed
    };
    repeat_for(warm_up, check);
    repeat_for(measure, check)
}

/// Nanoseconds of one read of the clock the memory store uses (`ratelock::clock::process_now_us`).
pub fn clock_read_ns(measure: Duration) -> f64 {
    let rate = repeat_for(measure, || black_box(ratelock::clock::process_now_us()) > 0);
    1e9 / rate.per_second
}

/// ns per fork check as the Python binding's memory path makes it (a `PerProcess` lookup: the process
/// generation and the value built for it), against a `getpid()` per call.
pub fn fork_check_ns(measure: Duration) -> (f64, f64) {
    static RUNTIME_LIKE: ratelock::process::PerProcess<u64> = ratelock::process::PerProcess::new();
    RUNTIME_LIKE.get_or_init(|| 7);
    let check = repeat_for(measure, || *black_box(&RUNTIME_LIKE).get_or_init(|| 7) == 7);
    let pid = repeat_for(measure, || black_box(std::process::id()) > 0);
    (1e9 / check.per_second, 1e9 / pid.per_second)
}

fn repeat_for(span: Duration, mut decide: impl FnMut() -> bool) -> MemoryRate {
    let started = Instant::now();
    let (mut calls, mut allowed) = (0u64, 0u64);
    while started.elapsed() < span {
        for _ in 0..BATCH {
            allowed += u64::from(decide());
        }
        calls += BATCH;
    }
    MemoryRate {
        per_second: calls as f64 / started.elapsed().as_secs_f64(),
        allowed_share: allowed as f64 / calls.max(1) as f64,
    }
}

/// The output of a future that is ready on its first poll.
fn ready<F: Future>(future: F) -> F::Output {
    let mut context = Context::from_waker(Waker::noop());
    match pin!(future).poll(&mut context) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the memory store's future was not ready on its first poll"),
    }
}
