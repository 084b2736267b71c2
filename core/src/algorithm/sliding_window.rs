//! Sliding window counter: the previous window's count, weighted by how much of it still overlaps the
//! sliding window, plus the current count. An approximation: it never admits more than `limit` in one
//! aligned window, nor more than `2 × limit` in any span of one period. The weighting is done in f64 in
//! exactly the order `lua/limit.lua` (`rule_sliding`) does it, so both give bit-identical answers.

use super::{State, Step, Update};
use crate::rule::Rule;

/// Decides a sliding-window rule. `state` is `(window index, current count, previous count)`.
pub fn decide(rule: &Rule, state: Option<(u64, u64, u64)>, now: u64, cost: u64) -> Step {
    let period = rule.period_us();
    let limit = rule.limit();
    let window = now / period;
    let remaining_in_window = period - (now - window * period);
    let (current, previous) = match state {
        Some((w, current, previous)) if w == window => (current, previous),
        Some((w, current, _)) if w + 1 == window => (0, current),
        _ => (0, 0),
    };
    let used = weighted(previous, remaining_in_window, period) + current as f64;
    let reset_for = |current: u64| {
        if current > 0 {
            remaining_in_window + period
        } else if previous > 0 {
            remaining_in_window
        } else {
            0
        }
    };
    let standing = (floor_non_negative(limit as f64 - used), reset_for(current));
    if used + cost as f64 > limit as f64 {
        let retry = retry_after(limit, period, remaining_in_window, current, previous, cost);
        return Step::denied(limit, standing, retry);
    }
    let after = (
        floor_non_negative(limit as f64 - (used + cost as f64)),
        reset_for(current + cost),
    );
    let current = current + cost;
    let update = Update::Replace(State::SlidingWindow {
        window,
        current,
        previous,
    });
    Step::allowed(limit, standing, after, update)
}

/// `previous × remaining / period`, in this operation order (Lua computes the same expression).
fn weighted(previous: u64, remaining: u64, period: u64) -> f64 {
    previous as f64 * remaining as f64 / period as f64
}

fn floor_non_negative(x: f64) -> u64 {
    x.floor().max(0.0) as u64
}

/// The smallest wait after which `cost` fits, found from a float estimate and then corrected with the
/// exact same predicate the decision uses (so the answer agrees with a later decision to the µs).
fn retry_after(limit: u64, period: u64, remaining: u64, current: u64, previous: u64, cost: u64) -> u64 {
    if current + cost <= limit {
        // Fits in this window once enough of the previous window has slid out.
        let fits = |wait: u64| {
            weighted(previous, remaining - wait, period) + current as f64 + cost as f64 <= limit as f64
        };
        let room = (limit - current - cost) as f64;
        let guess = remaining.saturating_sub((room * period as f64 / previous as f64).floor() as u64);
        settle(guess.min(remaining), remaining, fits)
    } else {
        // Must wait into the next window, where this window's count becomes the weighted one.
        let fits = |into: u64| weighted(current, period - into, period) + cost as f64 <= limit as f64;
        let room = (limit - cost) as f64;
        let guess = period.saturating_sub((room * period as f64 / current as f64).floor() as u64);
        remaining + settle(guess.min(period), period, fits)
    }
}

/// Moves `guess` to the smallest value in `0..=max` for which the monotone predicate `fits` holds.
fn settle(mut guess: u64, max: u64, fits: impl Fn(u64) -> bool) -> u64 {
    while guess < max && !fits(guess) {
        guess += 1;
    }
    while guess > 0 && fits(guess - 1) {
        guess -= 1;
    }
    guess
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previous_window_weighs_by_overlap() {
        let rule: Rule = "10 per 10 seconds using sliding_window".parse().unwrap();
        // 10 in the previous window; a quarter into the next, 7.5 still count: 2 fit, not 3.
        let state = Some((0, 10, 0));
        let now = 12_500_000;
        assert!(decide(&rule, state, now, 2).outcome.allowed);
        let denied = decide(&rule, state, now, 3).outcome;
        assert!(!denied.allowed);
        assert_eq!(denied.remaining, 2);
        // 3 fit once only 7 of the previous count: 30% overlap left, i.e. at 13 s.
        assert_eq!(denied.retry_after_us, 500_000);
        assert!(decide(&rule, state, now + 500_000, 3).outcome.allowed);
        assert!(!decide(&rule, state, now + 499_999, 3).outcome.allowed);
    }

    #[test]
    fn retry_crosses_into_the_next_window_when_the_current_is_full() {
        let rule: Rule = "4/second using sliding_window".parse().unwrap();
        let state = Some((5, 4, 0));
        let denied = decide(&rule, state, 5_600_000, 1).outcome;
        assert!(!denied.allowed);
        // Next window starts at 6 s with 4 weighted fully; 1 fits when 4 × overlap <= 3, at 6.25 s.
        assert_eq!(denied.retry_after_us, 650_000);
        assert!(decide(&rule, state, 6_250_000, 1).outcome.allowed);
        assert!(!decide(&rule, state, 6_249_999, 1).outcome.allowed);
    }
}
