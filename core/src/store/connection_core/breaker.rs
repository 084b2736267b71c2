//! The circuit breaker of one store in one process (sans-IO: time comes in as an argument).
//!
//! Closed, calls go to the server. A failed connect or a timeout opens it: calls then get the failure
//! policy's answer at once, never queued behind a reconnect. After a jittered, exponentially growing
//! pause one probe is let out (half-open); its success closes the breaker, its failure opens it again
//! with a longer pause. [`SharedBreaker`] is the thread-safe form every path of a store shares.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The first pause after the breaker opens.
const FIRST_PAUSE: Duration = Duration::from_millis(25);
/// The longest pause between probes: a server that comes back is used again within this (plus one
/// probe's round trip).
const LONGEST_PAUSE: Duration = Duration::from_millis(400);

/// Where a breaker stands, for health checks.
///
/// ```
/// use ratelock::store::connection_core::BreakerState;
/// assert_eq!(BreakerState::HalfOpen.as_str(), "half-open");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Calls go to the server.
    Closed,
    /// The server is taken to be down: calls get the failure policy's answer at once.
    Open,
    /// One probe is out to learn whether the server is back; other calls still answer at once.
    HalfOpen,
}

impl BreakerState {
    /// `"closed"`, `"open"` or `"half-open"`: the name every binding uses.
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half-open",
        }
    }

    fn from_code(code: u8) -> Self {
        match code {
            0 => BreakerState::Closed,
            1 => BreakerState::Open,
            _ => BreakerState::HalfOpen,
        }
    }

    fn code(self) -> u8 {
        match self {
            BreakerState::Closed => 0,
            BreakerState::Open => 1,
            BreakerState::HalfOpen => 2,
        }
    }
}

/// What a call may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Go to the server.
    Proceed,
    /// The pause is over and this caller starts the one probe (then answers as if refused, or, on a
    /// store with no separate probe, goes to the server as the probe itself).
    Probe,
    /// Answer at once with the failure policy's answer.
    Refuse,
}

/// The breaker's state machine, with no clock and no lock of its own.
///
/// ```
/// use std::time::{Duration, Instant};
/// use ratelock::store::connection_core::{Admission, Breaker, BreakerState};
/// let start = Instant::now();
/// let mut breaker = Breaker::new(7);
/// assert_eq!(breaker.admit(start), Admission::Proceed);
/// breaker.outage(start);
/// assert_eq!(breaker.state(), BreakerState::Open);
/// assert_eq!(breaker.admit(start), Admission::Refuse);
/// let later = start + Duration::from_secs(1);
/// assert_eq!(breaker.admit(later), Admission::Probe);
/// assert_eq!(breaker.admit(later), Admission::Refuse); // one probe at a time
/// breaker.success();
/// assert_eq!(breaker.admit(later), Admission::Proceed);
/// ```
#[derive(Debug, Clone)]
pub struct Breaker {
    state: BreakerState,
    /// Outages in a row (the pause doubles with each, up to [`LONGEST_PAUSE`]).
    outages: u32,
    /// Open: when the next probe is due. Half-open: when the probe out now counts as lost (a trial call
    /// that was cancelled never reports), so that another one is let out.
    probe_at: Option<Instant>,
    /// How long a probe may take before another is let out.
    trial_limit: Duration,
    /// xorshift state for the jitter.
    jitter: u64,
}

impl Breaker {
    /// A closed breaker; `seed` varies the jitter between processes and stores.
    pub fn new(seed: u64) -> Self {
        Breaker {
            state: BreakerState::Closed,
            outages: 0,
            probe_at: None,
            trial_limit: Duration::from_secs(2),
            jitter: seed | 1,
        }
    }

    /// The same breaker letting a probe take at most `limit` before another is let out (default 2 s).
    pub fn with_trial_limit(mut self, limit: Duration) -> Self {
        self.trial_limit = limit;
        self
    }

    /// Where the breaker stands.
    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// Whether a call made at `now` may go out (moving to half-open when a probe is due).
    pub fn admit(&mut self, now: Instant) -> Admission {
        match self.state {
            BreakerState::Closed => Admission::Proceed,
            // The pause is over, or the probe out has not reported within its limit (a cancelled trial
            // call never does): let one out.
            _ if self.probe_at.is_none_or(|at| now >= at) => {
                self.state = BreakerState::HalfOpen;
                self.probe_at = Some(now + self.trial_limit);
                Admission::Probe
            }
            BreakerState::Open | BreakerState::HalfOpen => Admission::Refuse,
        }
    }

    /// A call or a probe reached the server: close.
    pub fn success(&mut self) {
        self.state = BreakerState::Closed;
        self.outages = 0;
        self.probe_at = None;
    }

    /// A connect failed or a call timed out at `now`: open, and pause before the next probe. Calls that
    /// were in flight when it opened and fail afterwards change nothing: the pause doubles once per
    /// failed probe, not once per call caught in the outage.
    pub fn outage(&mut self, now: Instant) {
        if self.state == BreakerState::Open {
            return;
        }
        self.outages = self.outages.saturating_add(1);
        self.state = BreakerState::Open;
        self.probe_at = Some(now + self.pause());
    }

    /// The pause before the next probe: doubling from [`FIRST_PAUSE`] up to [`LONGEST_PAUSE`], then a
    /// random half to whole of it (probes of many processes spread out).
    fn pause(&mut self) -> Duration {
        let doublings = self.outages.saturating_sub(1).min(16);
        let full = FIRST_PAUSE.saturating_mul(1 << doublings).min(LONGEST_PAUSE);
        self.jitter ^= self.jitter << 13;
        self.jitter ^= self.jitter >> 7;
        self.jitter ^= self.jitter << 17;
        let fraction = 0.5 + (self.jitter % 1000) as f64 / 2000.0;
        full.mul_f64(fraction)
    }
}

/// A [`Breaker`] shared by every path of one store in one process. A closed breaker costs a call one
/// atomic load.
#[derive(Debug)]
pub struct SharedBreaker {
    state: AtomicU8,
    breaker: Mutex<Breaker>,
}

impl SharedBreaker {
    /// A closed breaker (`seed` varies the jitter) whose probes may take up to `trial_limit`.
    pub fn new(seed: u64, trial_limit: Duration) -> Self {
        SharedBreaker {
            state: AtomicU8::new(BreakerState::Closed.code()),
            breaker: Mutex::new(Breaker::new(seed).with_trial_limit(trial_limit)),
        }
    }

    /// Where the breaker stands now.
    pub fn state(&self) -> BreakerState {
        BreakerState::from_code(self.state.load(Ordering::Acquire))
    }

    /// Whether a call may go out now (see [`Breaker::admit`]).
    pub fn admit(&self) -> Admission {
        if self.state.load(Ordering::Acquire) == BreakerState::Closed.code() {
            return Admission::Proceed;
        }
        self.with(|breaker| breaker.admit(Instant::now()))
    }

    /// The server answered (a reply of any kind, errors included).
    pub fn success(&self) {
        if self.state.load(Ordering::Acquire) != BreakerState::Closed.code() {
            self.with(Breaker::success);
        }
    }

    /// A connect failed or a call timed out.
    pub fn outage(&self) {
        self.with(|breaker| breaker.outage(Instant::now()));
    }

    fn with<T>(&self, change: impl FnOnce(&mut Breaker) -> T) -> T {
        let mut breaker = self.breaker.lock();
        let answer = change(&mut breaker);
        self.state.store(breaker.state().code(), Ordering::Release);
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_longest_and_stay_jittered_within_half_to_whole() {
        let start = Instant::now();
        let mut breaker = Breaker::new(42);
        let mut previous_full = Duration::ZERO;
        for outage in 1..12u32 {
            breaker.outage(start);
            let pause = breaker.probe_at.unwrap() - start;
            let full = FIRST_PAUSE
                .saturating_mul(1 << (outage - 1).min(16))
                .min(LONGEST_PAUSE);
            assert!(
                pause >= full / 2 && pause <= full,
                "outage {outage}: {pause:?} of {full:?}"
            );
            assert!(full >= previous_full);
            previous_full = full;
            assert_eq!(breaker.admit(start), Admission::Refuse);
            assert_eq!(breaker.admit(start + full), Admission::Probe);
        }
        assert_eq!(previous_full, LONGEST_PAUSE);
    }

    #[test]
    fn a_failed_probe_opens_again_and_a_success_resets_the_pauses() {
        let start = Instant::now();
        let mut breaker = Breaker::new(1);
        breaker.outage(start);
        let due = start + LONGEST_PAUSE;
        assert_eq!(breaker.admit(due), Admission::Probe);
        assert_eq!(breaker.state(), BreakerState::HalfOpen);
        breaker.outage(due);
        assert_eq!(breaker.state(), BreakerState::Open);
        breaker.success();
        breaker.outage(due);
        assert!(breaker.probe_at.unwrap() - due <= FIRST_PAUSE);
    }

    #[test]
    fn a_probe_that_never_reports_is_replaced_after_its_limit() {
        let start = Instant::now();
        let mut breaker = Breaker::new(5).with_trial_limit(Duration::from_secs(1));
        breaker.outage(start);
        let due = start + LONGEST_PAUSE;
        assert_eq!(breaker.admit(due), Admission::Probe);
        assert_eq!(breaker.admit(due + Duration::from_millis(999)), Admission::Refuse);
        assert_eq!(breaker.admit(due + Duration::from_secs(1)), Admission::Probe);
        assert_eq!(breaker.state(), BreakerState::HalfOpen);
    }

    #[test]
    fn calls_failing_while_it_is_open_do_not_lengthen_the_pause() {
        let start = Instant::now();
        let mut breaker = Breaker::new(9);
        breaker.outage(start);
        let due = breaker.probe_at.unwrap();
        for _ in 0..64 {
            breaker.outage(start);
        }
        assert_eq!(breaker.probe_at, Some(due));
        assert_eq!(breaker.outages, 1);
    }

    #[test]
    fn the_shared_form_answers_closed_without_the_lock_and_tracks_every_change() {
        let shared = SharedBreaker::new(3, Duration::from_secs(1));
        assert_eq!(shared.admit(), Admission::Proceed);
        shared.outage();
        assert_eq!(shared.state(), BreakerState::Open);
        assert_eq!(shared.admit(), Admission::Refuse);
        shared.success();
        assert_eq!(shared.state(), BreakerState::Closed);
    }
}
