//! Sliding log: one timestamp per admitted unit; a unit admitted at `s` counts while `s + period > now`.
//! Exact, and memory O(limit) — which is why `limit` is capped at 10 000 for this algorithm.
//! Mirrored by `rule_log` in `lua/limit.lua` (a sorted set with unique members).

use std::collections::VecDeque;

use super::{Step, Update};
use crate::rule::Rule;

/// Decides a sliding-log rule over `entries` (ascending µs timestamps).
pub fn decide(rule: &Rule, entries: &VecDeque<u64>, now: u64, cost: u64) -> Step {
    let period = rule.period_us();
    let limit = rule.limit();
    let first_alive = entries.partition_point(|&s| s + period <= now);
    let count = (entries.len() - first_alive) as u64;
    let newest = entries.back().copied();
    let standing = (
        limit.saturating_sub(count),
        newest.map_or(0, |s| (s + period).saturating_sub(now)),
    );
    if count + cost > limit {
        let kth = entries[first_alive + (count + cost - limit) as usize - 1];
        return Step::denied(limit, standing, kth + period - now);
    }
    let after = (
        limit - count - cost,
        newest.map_or(now, |s| s.max(now)) + period - now,
    );
    let drop_through = if first_alive > 0 {
        now.checked_sub(period)
    } else {
        None
    };
    let update = Update::Append {
        drop_through,
        at: now,
        count: cost,
    };
    Step::allowed(limit, standing, after, update)
}

/// Applies an append: drops entries `<= drop_through`, then inserts `count` entries at `at` in order.
pub fn append(entries: &mut VecDeque<u64>, drop_through: Option<u64>, at: u64, count: u64) {
    if let Some(limit) = drop_through {
        let stale = entries.partition_point(|&s| s <= limit);
        entries.drain(..stale);
    }
    if entries.back().is_none_or(|&last| last <= at) {
        entries.extend(std::iter::repeat_n(at, count as usize));
    } else {
        let position = entries.partition_point(|&s| s <= at);
        for _ in 0..count {
            entries.insert(position, at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_more_than_limit_in_any_period() {
        let rule: Rule = "3/second using sliding_log".parse().unwrap();
        let mut log = VecDeque::new();
        let mut admitted = Vec::new();
        for now in (0..3_000_000u64).step_by(50_000) {
            let step = decide(&rule, &log, now, 1);
            if let Some(Update::Append {
                drop_through,
                at,
                count,
            }) = step.update
            {
                append(&mut log, drop_through, at, count);
                admitted.push(now);
            }
        }
        for (i, &start) in admitted.iter().enumerate() {
            let inside = admitted[i..]
                .iter()
                .take_while(|&&t| t < start + 1_000_000)
                .count();
            assert!(inside <= 3, "{inside} admitted within one second of {start}");
        }
        assert_eq!(admitted.len(), 9);
    }

    #[test]
    fn retry_waits_for_the_oldest_entries_needed() {
        let rule: Rule = "4/second using sliding_log".parse().unwrap();
        let log: VecDeque<u64> = [100, 200, 300, 400].into();
        let denied = decide(&rule, &log, 500, 2).outcome;
        assert!(!denied.allowed);
        assert_eq!(denied.retry_after_us, 200 + 1_000_000 - 500);
        assert_eq!(denied.reset_after_us, 400 + 1_000_000 - 500);
    }
}
