//! Fixed window: one counter per window, `floor(now / period)` or the calendar's (`calendar`). Mirrored by
//! `rule_fixed` and `rule_calendar` in `lua/limit.lua`.

use super::{State, Step, Update};
use crate::rule::Rule;

/// Decides a fixed-window rule. `state` is `(window index, count in that window)`.
pub fn decide(rule: &Rule, state: Option<(u64, u64)>, now: u64, cost: u64) -> Step {
    let (window, ends) = rule.fixed_window_at(now);
    let count = match state {
        Some((w, count)) if w == window => count,
        _ => 0,
    };
    let reset = ends - now;
    let limit = rule.limit();
    let standing = (limit.saturating_sub(count), reset);
    if count + cost > limit {
        return Step::denied(limit, standing, reset);
    }
    let count = count + cost;
    let after = (limit - count, reset);
    Step::allowed(
        limit,
        standing,
        after,
        Update::Replace(State::FixedWindow { window, count }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reset_at_the_window_boundary() {
        let rule: Rule = "2/second using fixed_window".parse().unwrap();
        let mut state = None;
        let mut hit = |now| {
            let step = decide(&rule, state, now, 1);
            if let Some(Update::Replace(State::FixedWindow { window, count })) = step.update {
                state = Some((window, count));
            }
            step.outcome
        };
        assert!(hit(999_000).allowed);
        assert!(hit(999_500).allowed);
        let denied = hit(999_900);
        assert_eq!(denied.retry_after_us, 100);
        // The boundary double burst: two more right after the boundary.
        assert!(hit(1_000_000).allowed);
        assert!(hit(1_000_001).allowed);
        assert!(!hit(1_000_002).allowed);
    }
}
