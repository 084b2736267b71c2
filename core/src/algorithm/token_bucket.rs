//! Token bucket with exact fractional refill: tokens are kept scaled by `period / g` and refill by
//! `limit / g` per µs (g = gcd(limit, period)), so no refill is ever rounded away.
//! Mirrored by `rule_token` in `lua/limit.lua`.

use super::{State, Step, Update};
use crate::rule::Rule;

/// Decides a token-bucket rule. `state` is `(scaled tokens, last refill µs)`; fresh buckets are full.
pub fn decide(rule: &Rule, state: Option<(u64, u64)>, now: u64, cost: u64) -> Step {
    let (scale, rate) = rule.token_scale();
    let capacity = rule.burst() * scale;
    let need = cost * scale;
    let (mut tokens, last) = state.unwrap_or((capacity, now));
    if now > last {
        let elapsed = now - last;
        let missing = capacity - tokens;
        tokens = if elapsed >= missing.div_ceil(rate) {
            capacity
        } else {
            tokens + elapsed * rate
        };
    }
    // A reservation may have left `last` ahead of now: `tokens` is the bucket then, and the refill
    // from now until then is not in it yet.
    let ahead = last.saturating_sub(now);
    let last = last.max(now);
    let standing = (
        available(tokens, ahead, rate) / scale,
        ahead + (capacity - tokens).div_ceil(rate),
    );
    if tokens < need || (tokens - need) / rate < ahead {
        let wait = if tokens < need {
            ahead + (need - tokens).div_ceil(rate)
        } else {
            ahead - (tokens - need) / rate
        };
        return Step::denied(rule.limit(), standing, wait);
    }
    let tokens = tokens - need;
    let after = (
        available(tokens, ahead, rate) / scale,
        ahead + (capacity - tokens).div_ceil(rate),
    );
    Step::allowed(
        rule.limit(),
        standing,
        after,
        Update::Replace(State::TokenBucket { tokens, last }),
    )
}

/// The scaled tokens of a bucket that holds `tokens` `ahead` µs from now, as of now (0 when the
/// refill until then is all it has).
fn available(tokens: u64, ahead: u64, rate: u64) -> u64 {
    if ahead <= tokens / rate {
        tokens - ahead * rate
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::algorithm::Outcome;

    fn run(rule: &Rule, state: &mut Option<(u64, u64)>, now: u64, cost: u64) -> Outcome {
        let step = decide(rule, *state, now, cost);
        if let Some(Update::Replace(State::TokenBucket { tokens, last })) = step.update {
            *state = Some((tokens, last));
        }
        step.outcome
    }

    #[test]
    fn fractional_refill_is_kept_exactly() {
        // 3 per second: one token every 333_333.33 µs. Refill in many tiny steps must add up exactly.
        let rule: Rule = "3/second using token_bucket".parse().unwrap();
        // 3 tokens per second over 1 s, one taken whenever available: exactly 3 admissions in the second.
        let mut state = None;
        run(&rule, &mut state, 0, 3);
        let admitted = (1..=1_000_000u64)
            .step_by(7)
            .filter(|&t| run(&rule, &mut state, t, 1).allowed)
            .count();
        assert_eq!(admitted, 3);
    }

    #[test]
    fn retry_after_is_the_exact_refill_time() {
        let rule: Rule = "3/second using token_bucket".parse().unwrap();
        let mut state = None;
        run(&rule, &mut state, 0, 3);
        let denied = run(&rule, &mut state, 0, 1);
        assert_eq!(denied.retry_after_us, 333_334);
        assert!(!run(&rule, &mut state, 333_333, 1).allowed);
        assert!(run(&rule, &mut state, 333_334, 1).allowed);
    }

    #[test]
    fn cost_greater_than_available_is_denied_without_spending() {
        let rule: Rule = "10/second burst 5 using token_bucket".parse().unwrap();
        let mut state = None;
        run(&rule, &mut state, 0, 4);
        let before = state;
        let o = run(&rule, &mut state, 0, 2);
        assert!(!o.allowed);
        assert_eq!(o.remaining, 1);
        assert_eq!(o.retry_after_us, 100_000);
        assert_eq!(state, before);
    }
}
