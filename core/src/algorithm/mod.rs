//! The sans-IO layer: every algorithm as a pure function of (state, now, rule, cost).
//! Time is an argument in microseconds; nothing here reads a clock or touches I/O.
//! `lua/limit.lua` mirrors these functions line for line; `tests/vectors` proves they agree.

pub mod fair;
pub mod fixed_window;
pub mod gcra;
pub mod leaky_bucket;
pub mod lease;
pub mod overrides;
pub mod permits;
pub mod refund;
pub mod reserve;
pub mod rwlock;
pub mod sliding_log;
pub mod sliding_window;
pub mod standing;
pub mod token_bucket;

use std::collections::VecDeque;

use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::rule::{Algorithm, Rule};

/// The answer of one rule to one request, in microseconds.
///
/// `remaining` is what is left after this request (nothing is spent when denied);
/// `reset_after_us` is the time until the rule is fully replenished;
/// `retry_after_us` is 0 when allowed, else the exact wait until the same request would be allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// Whether this rule admits the request.
    pub allowed: bool,
    /// The rule's limit.
    pub limit: u64,
    /// Units left after this request.
    pub remaining: u64,
    /// µs until the rule is fully replenished (or its window ends).
    pub reset_after_us: u64,
    /// µs until this same request would be allowed; 0 when allowed.
    pub retry_after_us: u64,
}

/// Per-rule outcomes of one request, stored inline for one rule (no allocation on the common path).
pub type Outcomes = SmallVec<[Outcome; 1]>;

/// The stored state of one rule for one key. `None` (no state) always means "fresh".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Theoretical arrival time.
    Gcra {
        /// µs at which the bucket is empty again.
        tat: u64,
    },
    /// Scaled tokens as of `last`.
    TokenBucket {
        /// Tokens × (period / gcd(limit, period)).
        tokens: u64,
        /// µs of the last refill.
        last: u64,
    },
    /// Water level as drain time, as of `last`.
    LeakyBucket {
        /// µs needed to drain what is in the funnel.
        level: u64,
        /// µs of the last update.
        last: u64,
    },
    /// A counter for one window.
    FixedWindow {
        /// `floor(now / period)` of the counted window.
        window: u64,
        /// Units admitted in that window.
        count: u64,
    },
    /// Counters for one window and the one before it.
    SlidingWindow {
        /// Index of the `current` window.
        window: u64,
        /// Units admitted in `window`.
        current: u64,
        /// Units admitted in `window - 1`.
        previous: u64,
    },
    /// One timestamp per admitted unit, ascending.
    SlidingLog {
        /// µs of each admitted unit.
        entries: VecDeque<u64>,
    },
}

/// What a decision asks to store when it is allowed (and every rule of the request allows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Replace the state by this one.
    Replace(State),
    /// Sliding log: drop entries at or before `drop_through`, then the `count` newest (a refund).
    Pop {
        /// Entries `<= drop_through` have left the window (`None`: none has).
        drop_through: Option<u64>,
        /// How many of the newest entries to remove.
        count: u64,
    },
    /// Sliding log: drop entries at or before `drop_through`, add `count` entries at `at`.
    Append {
        /// Entries `<= drop_through` have left the window (`None`: none has).
        drop_through: Option<u64>,
        /// µs of the new entries.
        at: u64,
        /// How many entries.
        count: u64,
    },
}

/// One rule's decision and, when allowed, the state change it wants and for how long to keep the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The answer if this rule's part of the request is carried out.
    pub outcome: Outcome,
    /// The rule's figures left as they are: what it reports when another rule denies the request.
    pub unspent: Outcome,
    /// The change to store if the request as a whole is allowed.
    pub update: Option<Update>,
    /// µs the updated state stays meaningful (its TTL): the reset time after the update.
    pub ttl_us: u64,
}

impl Step {
    /// A denial: `(remaining, reset_after_us)` as they stand, and the exact wait.
    pub(crate) fn denied(limit: u64, standing: (u64, u64), retry_after_us: u64) -> Step {
        let outcome = Outcome {
            allowed: false,
            limit,
            remaining: standing.0,
            reset_after_us: standing.1,
            retry_after_us,
        };
        Step {
            outcome,
            unspent: outcome,
            update: None,
            ttl_us: 0,
        }
    }

    /// An admission: figures as they stand, figures after the update, and the update itself.
    pub(crate) fn allowed(limit: u64, standing: (u64, u64), after: (u64, u64), update: Update) -> Step {
        let outcome = |(remaining, reset_after_us): (u64, u64)| Outcome {
            allowed: true,
            limit,
            remaining,
            reset_after_us,
            retry_after_us: 0,
        };
        Step {
            outcome: outcome(after),
            unspent: outcome(standing),
            update: Some(update),
            ttl_us: after.1,
        }
    }
}

/// Whether a hit on `rules` spends: when every enforcing rule allows. A `shadow` rule that denies
/// neither stops the others (the request goes through, so they are charged for it) nor is charged
/// itself, as a rule that denies never is; a shadow rule that allows is charged with the rest.
///
/// ```
/// use ratelock::algorithm::{decide, spends};
/// let rules: ratelock::Rules = "1/minute shadow; 100/hour".parse()?;
/// let spent = Some(ratelock::algorithm::State::Gcra { tat: 60_000_000 });
/// let steps = [decide(&rules[0], spent.as_ref(), 0, 1)?, decide(&rules[1], None, 0, 1)?];
/// assert!(!steps[0].outcome.allowed && spends(&rules, &steps));
/// # Ok::<(), ratelock::Error>(())
/// ```
#[inline]
pub fn spends(rules: &[Rule], steps: &[Step]) -> bool {
    rules
        .iter()
        .zip(steps)
        .all(|(rule, step)| step.outcome.allowed || rule.is_shadow())
}

/// The per-rule answers of a whole request on `rules`: when it [`spends`], each rule's outcome (a
/// shadow rule that denies reports its denial); otherwise nothing is spent, so every rule reports its
/// figures as they stand.
///
/// ```
/// use ratelock::algorithm::{decide, outcomes};
/// let rules: ratelock::Rules = "5/second; 1/minute".parse()?;
/// let steps = [decide(&rules[0], None, 0, 1)?, decide(&rules[1], None, 0, 1)?];
/// let answers = outcomes(&rules, &steps);
/// assert_eq!(answers[0].remaining, 4);
/// # Ok::<(), ratelock::Error>(())
/// ```
pub fn outcomes(rules: &[Rule], steps: &[Step]) -> Outcomes {
    let spent = spends(rules, steps);
    steps
        .iter()
        .map(|s| if spent { s.outcome } else { s.unspent })
        .collect()
}

/// Decides one rule. `state` must be the state stored for this rule (or `None`).
///
/// ```
/// use ratelock::algorithm::decide;
/// let rule: ratelock::Rule = "2/second".parse()?;
/// let first = decide(&rule, None, 0, 1)?;
/// assert!(first.outcome.allowed);
/// assert_eq!(first.outcome.remaining, 1);
/// # Ok::<(), ratelock::Error>(())
/// ```
pub fn decide(rule: &Rule, state: Option<&State>, now: u64, cost: u64) -> Result<Step> {
    check_cost(rule, cost)?;
    let mismatch = || Error::StoreUnavailable(format!("stored state does not match rule {rule}"));
    Ok(match (rule.algorithm(), state) {
        (Algorithm::Gcra, None) => gcra::decide(rule, None, now, cost),
        (Algorithm::Gcra, Some(State::Gcra { tat })) => gcra::decide(rule, Some(*tat), now, cost),
        (Algorithm::TokenBucket, None) => token_bucket::decide(rule, None, now, cost),
        (Algorithm::TokenBucket, Some(State::TokenBucket { tokens, last })) => {
            token_bucket::decide(rule, Some((*tokens, *last)), now, cost)
        }
        (Algorithm::LeakyBucket, None) => leaky_bucket::decide(rule, None, now, cost),
        (Algorithm::LeakyBucket, Some(State::LeakyBucket { level, last })) => {
            leaky_bucket::decide(rule, Some((*level, *last)), now, cost)
        }
        (Algorithm::FixedWindow, None) => fixed_window::decide(rule, None, now, cost),
        (Algorithm::FixedWindow, Some(State::FixedWindow { window, count })) => {
            fixed_window::decide(rule, Some((*window, *count)), now, cost)
        }
        (Algorithm::SlidingWindow, None) => sliding_window::decide(rule, None, now, cost),
        (
            Algorithm::SlidingWindow,
            Some(State::SlidingWindow {
                window,
                current,
                previous,
            }),
        ) => sliding_window::decide(rule, Some((*window, *current, *previous)), now, cost),
        (Algorithm::SlidingLog, None) => sliding_log::decide(rule, &VecDeque::new(), now, cost),
        (Algorithm::SlidingLog, Some(State::SlidingLog { entries })) => {
            sliding_log::decide(rule, entries, now, cost)
        }
        _ => return Err(mismatch()),
    })
}

impl Update {
    /// Applies this change to the stored state.
    pub fn apply(self, state: &mut Option<State>) {
        match self {
            Update::Replace(new) => *state = Some(new),
            Update::Append {
                drop_through,
                at,
                count,
            } => {
                if !matches!(state, Some(State::SlidingLog { .. })) {
                    *state = Some(State::SlidingLog {
                        entries: VecDeque::new(),
                    });
                }
                if let Some(State::SlidingLog { entries }) = state {
                    sliding_log::append(entries, drop_through, at, count);
                }
            }
            Update::Pop { drop_through, count } => {
                if let Some(State::SlidingLog { entries }) = state {
                    refund::pop(entries, drop_through, count);
                }
            }
        }
    }
}

/// A cost of 0 is misuse; a cost above the rule's capacity can never be allowed.
#[inline]
pub fn check_cost(rule: &Rule, cost: u64) -> Result<()> {
    if cost == 0 || cost > rule.capacity() {
        return Err(cost_refused(rule, cost));
    }
    Ok(())
}

/// [`check_cost`]'s error, out of the hot path.
#[cold]
#[inline(never)]
fn cost_refused(rule: &Rule, cost: u64) -> Error {
    if cost == 0 {
        return Error::invalid_argument("cost", "must be at least 1");
    }
    Error::CostExceedsCapacity {
        cost,
        capacity: rule.capacity(),
        rule: rule.to_string(),
    }
}

/// Combines per-rule outcomes: allowed only if all allow. Returns (allowed, index of the deciding rule):
/// when denied, the denying rule with the longest wait; when allowed, the rule with the least remaining.
///
/// ```
/// use ratelock::algorithm::{combine, Outcome};
/// let ok = Outcome { allowed: true, limit: 10, remaining: 3, reset_after_us: 5, retry_after_us: 0 };
/// let no = Outcome { allowed: false, limit: 5, remaining: 0, reset_after_us: 9, retry_after_us: 7 };
/// assert_eq!(combine(&[ok, no]), (false, 1));
/// ```
#[inline]
pub fn combine(outcomes: &[Outcome]) -> (bool, usize) {
    let allowed = outcomes.iter().all(|o| o.allowed);
    let mut best = 0;
    for (i, o) in outcomes.iter().enumerate().skip(1) {
        let current = &outcomes[best];
        let better = if allowed {
            o.remaining < current.remaining
        } else {
            !o.allowed && (current.allowed || o.retry_after_us > current.retry_after_us)
        };
        if better {
            best = i;
        }
    }
    (allowed, best)
}
