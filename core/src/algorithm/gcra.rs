//! GCRA: the state is one timestamp, the theoretical arrival time (TAT) at which the bucket is empty.
//! Mirrored by `rule_gcra` in `lua/limit.lua`.

use super::{State, Step, Update};
use crate::rule::Rule;

/// Decides a GCRA rule. `tat` is the stored theoretical arrival time, in µs.
///
/// Emission interval `T = ceil(period / limit)` µs, tolerance `tau = burst × T`.
/// A request of `cost` is allowed when `max(tat, now) + cost × T - tau <= now`.
pub fn decide(rule: &Rule, tat: Option<u64>, now: u64, cost: u64) -> Step {
    let t = rule.emission_interval_us();
    let tau = rule.burst() * t;
    let tat0 = tat.map_or(now, |tat| tat.max(now));
    let new_tat = tat0 + cost * t;
    let allow_at = new_tat.saturating_sub(tau);
    let standing = ((now + tau).saturating_sub(tat0) / t, tat0 - now);
    if allow_at > now {
        return Step::denied(rule.limit(), standing, allow_at - now);
    }
    let after = ((now + tau - new_tat) / t, new_tat - now);
    Step::allowed(
        rule.limit(),
        standing,
        after,
        Update::Replace(State::Gcra { tat: new_tat }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000;

    use crate::algorithm::Outcome;

    fn run(rule: &Rule, tat: &mut Option<u64>, now: u64, cost: u64) -> Outcome {
        let step = decide(rule, *tat, now, cost);
        if let Some(Update::Replace(State::Gcra { tat: new })) = step.update {
            *tat = Some(new);
        }
        step.outcome
    }

    #[test]
    fn burst_then_steady_rate_with_exact_retry() {
        let rule: Rule = "10/second".parse().unwrap();
        let mut tat = None;
        for i in 0..10 {
            let o = run(&rule, &mut tat, 0, 1);
            assert!(o.allowed, "hit {i}");
            assert_eq!(o.remaining, 9 - i);
        }
        let denied = run(&rule, &mut tat, 0, 1);
        assert!(!denied.allowed);
        assert_eq!(denied.retry_after_us, 100_000);
        assert_eq!(denied.reset_after_us, SECOND);
        assert!(!run(&rule, &mut tat, 99_999, 1).allowed);
        assert!(run(&rule, &mut tat, 100_000, 1).allowed);
    }

    #[test]
    fn denied_requests_spend_nothing() {
        let rule: Rule = "2/second".parse().unwrap();
        let mut tat = None;
        run(&rule, &mut tat, 0, 2);
        let before = tat;
        for _ in 0..100 {
            assert!(!run(&rule, &mut tat, 10, 1).allowed);
        }
        assert_eq!(tat, before);
    }

    #[test]
    fn smaller_burst_limits_the_first_spike() {
        let rule: Rule = "100/minute burst 5".parse().unwrap();
        let mut tat = None;
        let allowed = (0..20).filter(|_| run(&rule, &mut tat, 0, 1).allowed).count();
        assert_eq!(allowed, 5);
        let denied = run(&rule, &mut tat, 0, 1);
        assert_eq!(denied.retry_after_us, 600_000);
    }

    #[test]
    fn a_long_idle_gap_restores_a_full_burst() {
        let rule: Rule = "3/second".parse().unwrap();
        let mut tat = None;
        run(&rule, &mut tat, 0, 3);
        let o = run(&rule, &mut tat, 3_600 * SECOND, 3);
        assert!(o.allowed);
        assert_eq!(o.remaining, 0);
    }
}
