//! # ratelock
//!
//! Rate limiting and distributed locks with one semantics for every language and store.
//!
//! Layers, from the bottom: [`algorithm`] (pure decisions, time as an argument), the Lua scripts in
//! `lua/` (the same algorithms for Redis), [`store`] (memory and Redis), and the API ([`Limiter`]).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use ratelock::{Limiter, Rules};
//!
//! let limiter = Limiter::memory(); // or Limiter::connect("redis://127.0.0.1/").await?
//! let rules: Rules = "10/second; 1000/hour".parse()?;
//! let decision = limiter.hit("user:42", &rules, 1).await?;
//! assert!(decision.allowed);
//! assert_eq!(decision.remaining, 9);
//! # Ok::<(), ratelock::Error>(()) });
//! ```

#![warn(missing_docs)]

pub mod algorithm;
pub mod clock;
mod decision;
mod deny_cache;
mod error;
pub mod excerpt;
mod fallback;
pub mod hook;
pub mod host_signals;
pub mod http;
pub mod key;
mod limiter;
#[cfg(feature = "runtime")]
mod lock;
pub mod metrics;
#[cfg(feature = "otel")]
pub mod otel;
pub mod process;
mod rule;
pub mod store;

#[cfg(feature = "runtime")]
pub use algorithm::lease::{Extended, Released};
pub use algorithm::standing::Reason;
pub use decision::{Decision, RuleDecision};
pub use deny_cache::DenyCache;
pub use error::{Error, Result};
pub use key::MAX_KEY_BYTES;
pub use limiter::{ClockSource, FailurePolicy, Limiter, LimiterOptions, MAX_INSTANCES};
#[cfg(feature = "runtime")]
pub use lock::{
    AnyGuard, ConcurrencyLimiter, DistributedLock, FairLock, FairLockState, Guard, HeldLease, Lease,
    LeaseGuard, LockGuard, LockLease, LockOptions, LostReason, LostSignal, PermitGuard, PermitLease,
    ReadWriteLock, RwLockState, Semaphore, MAX_LEASE,
};
pub use rule::{
    Algorithm, Calendar, CalendarUnit, PreparedRules, Rule, RuleCache, Rules, MAX_LIMIT, MAX_OFFSET_MINUTES,
    MAX_PERIOD, MAX_RULES, MAX_SLIDING_LOG_LIMIT,
};
pub use store::{AnyLockStore, LimitStore, Store, StoreOptions, MIN_TIMEOUT};
#[cfg(feature = "runtime")]
pub use store::{LockKindStore, LockStore};
