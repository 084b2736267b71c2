//! The one error type of ratelock: misuse (bad rules or arguments) and infrastructure failures.
//! A denial is never an error; it is a `Decision` with `allowed == false`.

use std::fmt;

/// Everything that can go wrong in ratelock, with predicates for the common questions.
///
/// ```
/// use ratelock::{Error, Rules};
/// let err = "ten/second".parse::<Rules>().unwrap_err();
/// assert!(err.is_invalid_rule());
/// assert!(err.to_string().contains("ten"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Rule text or a rule built in code is not valid; `part` names the offending piece.
    #[error("invalid rule {text:?}: {reason} (at {part:?})")]
    InvalidRule {
        /// The whole text (or a rendering of the rule built in code), as a bounded
        /// [`excerpt`](crate::excerpt::of) when it is long.
        text: String,
        /// The piece that could not be understood (a bounded excerpt as well).
        part: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An argument other than a rule is not valid (cost 0, a prefix with braces, a bad URL...).
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// Which argument.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The cost can never be allowed by this rule, however long the caller waits.
    #[error("cost {cost} exceeds the capacity {capacity} of rule {rule:?}: it can never be allowed")]
    CostExceedsCapacity {
        /// The requested cost.
        cost: u64,
        /// The most the rule can ever admit at once.
        capacity: u64,
        /// The rule, as text.
        rule: String,
    },
    /// The store could not be reached or answered with an error.
    #[error("store unavailable: {0}")]
    StoreUnavailable(String),
    /// The store did not answer within the configured timeout. The command may still have run.
    #[error("store timed out after {0:?} (the command may have run; it is not replayed)")]
    Timeout(std::time::Duration),
    /// Waiting for a lock or permit ran past its deadline.
    #[error("gave up waiting after {0:?}")]
    WaitTimeout(std::time::Duration),
    /// A hold used where it is not this handle's to use: e.g. released or extended by a forked child
    /// through a handle inherited from the parent that took it.
    #[error("lock not owned: {0}")]
    LockNotOwned(String),
    /// A hold given back or extended after it was lost: its lease had ended, or another owner holds
    /// the lock now. Nothing was changed. See [`Released::or_lost`](crate::Released::or_lost).
    #[error("lock lost: {0}")]
    LockLost(String),
    /// The store refused ratelock's setup, and only a change of configuration fixes it: a failed
    /// `AUTH` (also after a password rotation), a missing ACL permission on a command ratelock must
    /// run, a db index the server does not have. Never covered by a failure policy: a wrong password
    /// must not let all traffic through as "degraded".
    #[error("store configuration: {reason} (fix {setting})")]
    Configuration {
        /// The setting to fix, e.g. `url (user and password)`.
        setting: &'static str,
        /// What the server said.
        reason: String,
    },
    /// A reply that does not match its call (another call's answer, a wrong shape or count) or a state
    /// the script did not expect: a bug, never an outage, so no failure policy ever covers it.
    #[error("protocol error: {0}")]
    Protocol(String),
}

/// How an outage whose call never left this process begins: the breaker refused it.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) const BREAKER_OPEN: &str = "circuit breaker open";
/// What an outage whose call never left this process says: no connection opened for it.
#[cfg_attr(not(feature = "runtime"), allow(dead_code))]
pub(crate) const NOTHING_SENT: &str = "nothing was sent";

impl Error {
    /// Whether the call that failed with this error may have run on the server all the same: an outage
    /// after its request may have been written (a timeout, a connection lost), or an answer of the
    /// wrong shape. Not a call the breaker refused or one no connection opened for.
    #[cfg_attr(not(feature = "runtime"), allow(dead_code))]
    pub(crate) fn may_have_run(&self) -> bool {
        match self {
            Error::Timeout(_) | Error::Protocol(_) => true,
            Error::StoreUnavailable(why) => !why.starts_with(BREAKER_OPEN) && !why.contains(NOTHING_SENT),
            _ => false,
        }
    }

    /// True for rule text or rule values that are not valid.
    pub fn is_invalid_rule(&self) -> bool {
        matches!(self, Error::InvalidRule { .. })
    }

    /// True for arguments that are not valid.
    pub fn is_invalid_argument(&self) -> bool {
        matches!(self, Error::InvalidArgument { .. })
    }

    /// True when the cost is above what the rule can ever admit.
    pub fn is_cost_exceeds_capacity(&self) -> bool {
        matches!(self, Error::CostExceedsCapacity { .. })
    }

    /// True for infrastructure failures (unreachable store or timeout): what a failure policy covers.
    pub fn is_store_failure(&self) -> bool {
        matches!(self, Error::StoreUnavailable(_) | Error::Timeout(_))
    }

    /// True when the store did not answer in time.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout(_))
    }

    /// True when the store refused ratelock's setup (credentials, ACL, db index): no policy covers it.
    pub fn is_configuration(&self) -> bool {
        matches!(self, Error::Configuration { .. })
    }

    /// True when a reply did not match its call, or the store met a state it did not expect.
    pub fn is_protocol(&self) -> bool {
        matches!(self, Error::Protocol(_))
    }

    /// True when a hold was found lost as it was given back or extended.
    pub fn is_lock_lost(&self) -> bool {
        matches!(self, Error::LockLost(_))
    }

    /// True when waiting for a lock or permit ran past its deadline.
    pub fn is_wait_timeout(&self) -> bool {
        matches!(self, Error::WaitTimeout(_))
    }

    /// A stable, language-neutral code for this error, used by the bindings.
    ///
    /// ```
    /// use ratelock::Error;
    /// assert_eq!(Error::StoreUnavailable("down".into()).code(), "STORE_UNAVAILABLE");
    /// ```
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidRule { .. } => "INVALID_RULE",
            Error::InvalidArgument { .. } => "INVALID_ARGUMENT",
            Error::CostExceedsCapacity { .. } => "COST_EXCEEDS_CAPACITY",
            Error::StoreUnavailable(_) => "STORE_UNAVAILABLE",
            Error::Timeout(_) => "TIMEOUT",
            Error::WaitTimeout(_) => "WAIT_TIMEOUT",
            Error::LockNotOwned(_) => "LOCK_NOT_OWNED",
            Error::LockLost(_) => "LOCK_LOST",
            Error::Configuration { .. } => "CONFIGURATION",
            Error::Protocol(_) => "PROTOCOL",
        }
    }

    pub(crate) fn invalid_rule(text: &str, part: &str, reason: impl fmt::Display) -> Self {
        Error::InvalidRule {
            text: crate::excerpt::of(text).into_owned(),
            part: crate::excerpt::of(part).into_owned(),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn configuration(setting: &'static str, reason: impl fmt::Display) -> Self {
        Error::Configuration {
            setting,
            reason: reason.to_string(),
        }
    }

    pub(crate) fn invalid_argument(name: &'static str, reason: impl fmt::Display) -> Self {
        Error::InvalidArgument {
            name,
            reason: reason.to_string(),
        }
    }
}

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
