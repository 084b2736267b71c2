//! A decision as numbers: the one layout the addon writes a decision in (into a `Float64Array`, with
//! no JavaScript object built in Rust), exported by name (`decisionLayout()`), so `lib/decision.js`
//! reads each figure where this file puts it rather than by a position of its own.

use napi_derive::napi;

use crate::convert;

/// The figures of a decision, in the order they are written.
const LAYOUT: [&str; 10] = [
    "allowed",
    "limit",
    "remaining",
    "resetAfterMs",
    "retryAfterMs",
    "degraded",
    "ruleIndex",
    "reason",
    "wouldDeny",
    "cached",
];

/// Numbers per decision.
pub(crate) const DECISION_FIELDS: usize = LAYOUT.len();

/// `decision` in the order of [`LAYOUT`] (booleans as 1 or 0, times in milliseconds, the reason as its
/// code: an index into [`reason_names`]).
pub(crate) fn numbers(decision: &ratelock::Decision) -> [f64; DECISION_FIELDS] {
    [
        f64::from(u8::from(decision.allowed)),
        decision.limit as f64,
        decision.remaining as f64,
        convert::to_millis(decision.reset_after),
        convert::to_millis(decision.retry_after),
        f64::from(u8::from(decision.degraded)),
        decision.rule_index as f64,
        decision.reason.code() as f64,
        f64::from(u8::from(decision.would_deny)),
        f64::from(u8::from(decision.cached)),
    ]
}

/// The names of a decision's numbers, in the order the addon writes them.
#[napi]
pub fn decision_layout() -> Vec<&'static str> {
    LAYOUT.to_vec()
}

/// The names of the reasons a decision gives (`rule`, `ban`, `deny_list`, `allow_list`), by code.
#[napi]
pub fn reason_names() -> Vec<&'static str> {
    ratelock::Reason::ALL.iter().map(|reason| reason.name()).collect()
}
