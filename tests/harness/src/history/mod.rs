//! Histories of operations under faults, and the checker that reads them against ratelock's promises:
//! `record.rs` (the JSON-lines format every driver writes) and `check.rs` (the invariants).

mod check;
mod record;

pub use check::{admission_bound, check_calls, check_holds, check_limits, check_locks, Findings};
pub use record::{load, History, Op, Outcome};
