//! Any sequence of events on the connection core's state machines: the breaker (admissions, outages,
//! successes, time passing) and a call attempt (what was written, NOSCRIPT). Never a panic; a success
//! always closes the breaker; a call is resent only while nothing of it was written.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use ratelock::store::connection_core::{Admission, Breaker, BreakerState, CallAttempt, Next, Written};

fuzz_target!(|data: &[u8]| {
    let start = Instant::now();
    let mut now = start;
    let mut breaker = Breaker::new(u64::from(data.first().copied().unwrap_or(0)));
    let mut attempt = CallAttempt::new();
    let mut resends = 0;
    for &event in data {
        now += Duration::from_millis(u64::from(event >> 3));
        match event & 7 {
            0 => {
                let _: Admission = breaker.admit(now);
            }
            1 => breaker.outage(now),
            2 => {
                breaker.success();
                assert_eq!(breaker.state(), BreakerState::Closed);
            }
            3 => {
                if attempt.written(Written::Nothing) == Next::ResendOnFresh {
                    resends += 1;
                }
                assert!(resends <= 1, "a call goes out at most twice");
            }
            4 => {
                let next = attempt.written(Written::Partly);
                assert_eq!(
                    next,
                    Next::Fail { may_have_run: true },
                    "bytes may have left: never resent"
                );
            }
            5 => {
                let _ = attempt.no_script();
            }
            _ => {
                let _ = attempt.reloaded();
            }
        }
    }
});
