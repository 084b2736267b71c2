//! Leaky bucket as a meter (the funnel): water drains one unit per emission interval; a request is
//! poured in if it fits under `burst`. Decides exactly like GCRA. Mirrored by `rule_leaky` in `lua/limit.lua`.

use super::{State, Step, Update};
use crate::rule::Rule;

/// Decides a leaky-bucket rule. `state` is `(level, last)`: the water as µs of drain time, as of `last`.
pub fn decide(rule: &Rule, state: Option<(u64, u64)>, now: u64, cost: u64) -> Step {
    let t = rule.emission_interval_us();
    let capacity = rule.burst() * t;
    let pour = cost * t;
    let (mut level, last) = state.unwrap_or((0, now));
    if now > last {
        level = level.saturating_sub(now - last);
    } else {
        // A reservation may have left `last` ahead of now: as of now, the funnel also holds what
        // drains until then (GCRA's arrival time, `last + level`, is unchanged).
        level += last - now;
    }
    let last = now;
    let standing = (capacity.saturating_sub(level) / t, level);
    if level + pour > capacity {
        return Step::denied(rule.limit(), standing, level + pour - capacity);
    }
    let level = level + pour;
    let after = ((capacity - level) / t, level);
    Step::allowed(
        rule.limit(),
        standing,
        after,
        Update::Replace(State::LeakyBucket { level, last }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::gcra;

    #[test]
    fn decides_like_gcra_on_an_irregular_stream() {
        let rule: Rule = "7 per 3 seconds burst 4".parse().unwrap();
        let mut tat = None;
        let mut funnel = None;
        let mut now = 0u64;
        for i in 0..500u64 {
            now += (i * 7919) % 900_000;
            let cost = 1 + i % 3;
            let g = gcra::decide(&rule, tat, now, cost);
            let l = decide(&rule, funnel, now, cost);
            assert_eq!(g.outcome, l.outcome, "step {i} at {now}");
            if let Some(Update::Replace(State::Gcra { tat: v })) = g.update {
                tat = Some(v);
            }
            if let Some(Update::Replace(State::LeakyBucket { level, last })) = l.update {
                funnel = Some((level, last));
            }
        }
    }
}
