//! GCRA: the state is one timestamp, the theoretical arrival time (TAT) at which the bucket is empty.
//! Mirrored by `rule_gcra` in `lua/limit.lua`.

use super::{Outcome, State, Step, Update};
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
    if allow_at > now {
        return Step {
            outcome: Outcome {
                allowed: false,
                limit: rule.limit(),
                remaining: (now + tau).saturating_sub(tat0) / t,
                reset_after_us: tat0 - now,
                retry_after_us: allow_at - now,
            },
            update: None,
            ttl_us: 0,
        };
    }
    Step {
        outcome: Outcome {
            allowed: true,
            limit: rule.limit(),
            remaining: (now + tau - new_tat) / t,
            reset_after_us: new_tat - now,
            retry_after_us: 0,
        },
        update: Some(Update::Replace(State::Gcra { tat: new_tat })),
        ttl_us: new_tat - now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000;

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
