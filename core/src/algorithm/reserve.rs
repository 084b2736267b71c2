//! Reservations: instead of a denial, book the earliest moment within a maximum wait at which every
//! rule admits the request, and spend at that moment now, so that waiters are served in booking order
//! with one round trip each. Pure, like `decide`; `lua/limit.lua` (its `reserve` mode), the module and
//! the memory store run it the same way:
//! 1. decide every rule at `now`; when all allow, the request is booked now (a plain hit);
//! 2. else the wait is the longest denial's ([`wait_of`]); past the maximum wait, nothing is booked and
//!    the answer is the denial;
//! 3. else every rule is decided again at `now + wait` and spent there, its figures seen from `now`
//!    ([`booked`]): `retry_after` is the wait before acting, `reset_after` runs from now.
//!
//! Only the bucket algorithms can hold a booking in the future (GCRA's arrival time, the token
//! bucket's and the funnel's last update); the window algorithms count in windows and cannot.

use super::{Outcome, Step};
use crate::error::{Error, Result};
use crate::rule::Rule;

/// Refuses a rule that cannot be reserved: a window algorithm, or a rule in shadow (a reservation
/// enforces).
///
/// ```
/// use ratelock::algorithm::reserve::check_reservable;
/// assert!(check_reservable(&"10/second".parse()?).is_ok());
/// assert!(check_reservable(&"10/second using fixed_window".parse()?).is_err());
/// # Ok::<(), ratelock::Error>(())
/// ```
pub fn check_reservable(rule: &Rule) -> Result<()> {
    if !rule.algorithm().uses_burst() {
        return Err(Error::invalid_argument(
            "rules",
            format!(
                "a reservation books a slot ahead, which only gcra, token_bucket and leaky_bucket can \
                 hold; {rule} counts in windows"
            ),
        ));
    }
    if rule.is_shadow() {
        return Err(Error::invalid_argument(
            "rules",
            format!("a reservation enforces its rules; {rule} is in shadow"),
        ));
    }
    Ok(())
}

/// Checks a reservation before anything is read: every rule reservable ([`check_reservable`]) and the
/// longest wait within [`MAX_PERIOD`](crate::MAX_PERIOD).
pub fn check_request(rules: &[Rule], max_wait_us: u64) -> Result<()> {
    if max_wait_us > crate::MAX_PERIOD.as_micros() as u64 {
        return Err(Error::invalid_argument("max_wait", "must be at most 366 days"));
    }
    rules.iter().try_for_each(check_reservable)
}

/// The wait before every rule of `steps` (decided at the same moment) admits the request: 0 when all
/// allow, else the longest denial's wait.
pub fn wait_of(steps: &[Step]) -> u64 {
    steps
        .iter()
        .filter(|step| !step.outcome.allowed)
        .map(|step| step.outcome.retry_after_us)
        .max()
        .unwrap_or(0)
}

/// Whether a request whose rules need `wait` µs is booked ahead: when it must wait at all, and no
/// longer than `max_wait_us`.
pub fn books_ahead(wait: u64, max_wait_us: u64) -> bool {
    wait > 0 && wait <= max_wait_us
}

/// A step decided at the booked slot, `wait` µs from now, seen from now: the wait is its
/// `retry_after`, and its reset and its state's time to live run from now.
pub fn booked(mut step: Step, wait: u64) -> Step {
    let shift = |outcome: &mut Outcome| {
        outcome.reset_after_us += wait;
        outcome.retry_after_us = wait;
    };
    shift(&mut step.outcome);
    step.ttl_us += wait;
    step
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{decide, State, Update};

    #[test]
    fn bookings_queue_up_in_order_one_emission_interval_apart() {
        let rule: Rule = "2/second".parse().unwrap();
        let mut state: Option<State> = None;
        let mut waits = Vec::new();
        for _ in 0..5 {
            let now_step = decide(&rule, state.as_ref(), 0, 1).unwrap();
            let wait = wait_of(std::slice::from_ref(&now_step));
            let step = if books_ahead(wait, 2_000_000) {
                booked(decide(&rule, state.as_ref(), wait, 1).unwrap(), wait)
            } else {
                now_step
            };
            assert!(step.outcome.allowed);
            waits.push(step.outcome.retry_after_us);
            if let Some(Update::Replace(next)) = step.update {
                state = Some(next);
            }
        }
        assert_eq!(waits, [0, 0, 500_000, 1_000_000, 1_500_000]);
    }

    #[test]
    fn a_token_bucket_booking_waits_for_its_tokens_after_earlier_bookings() {
        let rule: Rule = "1/second burst 1 using token_bucket".parse().unwrap();
        let first = decide(&rule, None, 0, 1).unwrap();
        let Some(Update::Replace(state)) = first.update else {
            panic!()
        };
        // Booked at 1 s: the bucket's last update is then ahead of now.
        let wait = wait_of(&[decide(&rule, Some(&state), 0, 1).unwrap()]);
        assert_eq!(wait, 1_000_000);
        let slot = booked(decide(&rule, Some(&state), wait, 1).unwrap(), wait);
        let Some(Update::Replace(state)) = slot.update else {
            panic!()
        };
        // The next one waits from that slot, not from now.
        let next = decide(&rule, Some(&state), 100_000, 1).unwrap();
        assert_eq!(next.outcome.retry_after_us, 1_900_000);
    }

    #[test]
    fn windows_and_shadow_rules_cannot_be_reserved() {
        for text in ["5/minute using sliding_log", "5/minute shadow", "5/day calendar"] {
            let err = check_reservable(&text.parse().unwrap()).unwrap_err();
            assert!(err.to_string().contains("reservation"), "{err}");
        }
    }
}
