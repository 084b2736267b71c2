//! Refunds: giving back units a rule spent, never below an empty state and never beyond what was spent
//! within the rule's window. Pure, like `decide`; `lua/limit.lua` (`refund_*`) and the module mirror it.
//!
//! | algorithm | what a refund of `cost` does |
//! |---|---|
//! | gcra | moves the theoretical arrival time back `cost` emission intervals, not before `now` |
//! | token_bucket | puts `cost` tokens back (after the refill up to `now`), up to a full bucket |
//! | leaky_bucket | drains `cost` units from the funnel (after the leak up to `now`), down to empty |
//! | fixed_window | takes `cost` off the current window's count, down to 0 (an earlier window's units: none) |
//! | sliding_window | takes `cost` off the current window's count, down to 0 (the previous window's units, which are leaving, stay) |
//! | sliding_log | removes the `cost` newest entries still in the window |
//!
//! A refund keeps the key's time to live (its state only becomes less spent, so it is never needed
//! for longer).

use std::collections::VecDeque;

use super::{State, Update};
use crate::rule::{Algorithm, Rule};

/// The change that gives back `cost` units of `rule` at `now` from `state`; `None` when there is
/// nothing to give back (no state, or nothing spent in the current window).
///
/// ```
/// use ratelock::algorithm::{decide, refund::refund, State, Update};
/// let rule: ratelock::Rule = "10/second".parse()?;
/// let spent = decide(&rule, None, 0, 3)?.update.unwrap();
/// let Update::Replace(state) = spent else { unreachable!() };
/// assert_eq!(refund(&rule, Some(&state), 0, 2), Some(Update::Replace(State::Gcra { tat: 100_000 })));
/// assert_eq!(refund(&rule, Some(&state), 0, 9), Some(Update::Replace(State::Gcra { tat: 0 })));
/// assert_eq!(refund(&rule, None, 0, 1), None);
/// # Ok::<(), ratelock::Error>(())
/// ```
pub fn refund(rule: &Rule, state: Option<&State>, now: u64, cost: u64) -> Option<Update> {
    let replace = |state| Some(Update::Replace(state));
    match (rule.algorithm(), state?) {
        (Algorithm::Gcra, &State::Gcra { tat }) if tat > now => {
            let back = cost.saturating_mul(rule.emission_interval_us());
            replace(State::Gcra {
                tat: tat.saturating_sub(back).max(now),
            })
        }
        (Algorithm::TokenBucket, &State::TokenBucket { tokens, last }) => {
            let (scale, rate) = rule.token_scale();
            let capacity = rule.burst() * scale;
            let mut tokens = tokens;
            if now > last {
                let elapsed = now - last;
                tokens = if elapsed >= (capacity - tokens).div_ceil(rate) {
                    capacity
                } else {
                    tokens + elapsed * rate
                };
            }
            replace(State::TokenBucket {
                tokens: (tokens + cost * scale).min(capacity),
                last: last.max(now),
            })
        }
        (Algorithm::LeakyBucket, &State::LeakyBucket { level, last }) => {
            // As of now, like `decide`: a reservation's `last` ahead of now adds what drains until then.
            let level = if now > last {
                level.saturating_sub(now - last)
            } else {
                level + (last - now)
            };
            replace(State::LeakyBucket {
                level: level.saturating_sub(cost * rule.emission_interval_us()),
                last: now,
            })
        }
        (Algorithm::FixedWindow, &State::FixedWindow { window, count })
            if window == rule.fixed_window_at(now).0 =>
        {
            replace(State::FixedWindow {
                window,
                count: count.saturating_sub(cost),
            })
        }
        (
            Algorithm::SlidingWindow,
            &State::SlidingWindow {
                window,
                current,
                previous,
            },
        ) if window == now / rule.period_us() => replace(State::SlidingWindow {
            window,
            current: current.saturating_sub(cost),
            previous,
        }),
        (Algorithm::SlidingLog, State::SlidingLog { entries }) => {
            let alive = alive(entries, now, rule.period_us());
            (alive > 0).then_some(Update::Pop {
                drop_through: now.checked_sub(rule.period_us()),
                count: cost.min(alive),
            })
        }
        _ => None,
    }
}

/// How many of a sliding log's entries are still in the window at `now`.
fn alive(entries: &VecDeque<u64>, now: u64, period: u64) -> u64 {
    let first_alive = entries.partition_point(|&s| s + period <= now);
    (entries.len() - first_alive) as u64
}

/// Applies [`Update::Pop`] to a sliding log: the stale entries go, then the `count` newest.
pub(crate) fn pop(entries: &mut VecDeque<u64>, drop_through: Option<u64>, count: u64) {
    if let Some(limit) = drop_through {
        let stale = entries.partition_point(|&s| s <= limit);
        entries.drain(..stale);
    }
    let keep = entries.len().saturating_sub(count as usize);
    entries.truncate(keep);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::decide;

    /// Spends `cost` on a fresh rule at `now`, then gives back `back`: what a hit of `cost` then sees.
    fn spend_then_refund(text: &str, cost: u64, back: u64, now: u64) -> (u64, u64) {
        let rule: Rule = text.parse().unwrap();
        let mut state = None;
        decide(&rule, None, now, cost)
            .unwrap()
            .update
            .unwrap()
            .apply(&mut state);
        let before = decide(&rule, state.as_ref(), now, 1).unwrap().unspent.remaining;
        if let Some(update) = refund(&rule, state.as_ref(), now, back) {
            update.apply(&mut state);
        }
        let after = decide(&rule, state.as_ref(), now, 1).unwrap().unspent.remaining;
        (before, after)
    }

    #[test]
    fn a_refund_gives_back_what_was_spent_and_never_more() {
        for text in [
            "10/second",
            "10/second using token_bucket",
            "10/second using leaky_bucket",
            "10/second using fixed_window",
            "10/second using sliding_window",
            "10/second using sliding_log",
        ] {
            assert_eq!(spend_then_refund(text, 6, 2, 1_000_000), (4, 6), "{text}");
            assert_eq!(
                spend_then_refund(text, 6, 50, 1_000_000),
                (4, 10),
                "{text}: never beyond empty"
            );
        }
    }

    #[test]
    fn an_earlier_window_or_no_state_has_nothing_to_give_back() {
        let window: Rule = "5/second using fixed_window".parse().unwrap();
        let old = State::FixedWindow { window: 0, count: 5 };
        assert_eq!(refund(&window, Some(&old), 1_000_000, 1), None);
        let gcra: Rule = "5/second".parse().unwrap();
        assert_eq!(
            refund(&gcra, Some(&State::Gcra { tat: 10 }), 10, 1),
            None,
            "an empty bucket"
        );
        assert_eq!(refund(&gcra, None, 10, 1), None);
        let log: Rule = "5/second using sliding_log".parse().unwrap();
        let stale = State::SlidingLog {
            entries: VecDeque::from([1, 2]),
        };
        assert_eq!(refund(&log, Some(&stale), 5_000_000, 1), None);
    }
}
