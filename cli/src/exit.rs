//! The exit codes `ratelock` documents (see `lock run --help`), and the failure each stands for.

use std::fmt;

/// The lock is held by someone else and no `--wait` was given.
pub const LOCK_BUSY: i32 = 75;
/// `--wait` ran out before the lock was free.
pub const WAIT_TIMED_OUT: i32 = 76;
/// The lock was lost while the command ran; the command was stopped.
pub const LOCK_LOST: i32 = 77;
/// The store failed (outage, configuration, protocol) or the command could not start.
pub const FAILED: i32 = 78;
/// Bad input: an invalid rule or argument (clap's own usage errors exit 2 as well).
pub const USAGE: i32 = 2;

/// Why `ratelock` stops without a command's own exit code.
#[derive(Debug)]
pub enum Exit {
    /// The lock is held and no wait was asked for.
    Busy(String),
    /// The wait for the lock ran out.
    WaitTimedOut(String),
    /// The lock was lost while the command ran.
    Lost(String),
    /// Bad input found after parsing (a rule text, a key).
    Usage(String),
    /// Anything else: the store, the command.
    Failed(String),
}

impl Exit {
    /// The exit code.
    pub fn code(&self) -> i32 {
        match self {
            Exit::Busy(_) => LOCK_BUSY,
            Exit::WaitTimedOut(_) => WAIT_TIMED_OUT,
            Exit::Lost(_) => LOCK_LOST,
            Exit::Usage(_) => USAGE,
            Exit::Failed(_) => FAILED,
        }
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Busy(what)
            | Exit::WaitTimedOut(what)
            | Exit::Lost(what)
            | Exit::Usage(what)
            | Exit::Failed(what) => f.write_str(what),
        }
    }
}

impl From<ratelock::Error> for Exit {
    fn from(err: ratelock::Error) -> Self {
        if err.is_invalid_rule() || err.is_invalid_argument() || err.is_cost_exceeds_capacity() {
            Exit::Usage(err.to_string())
        } else {
            Exit::Failed(err.to_string())
        }
    }
}
