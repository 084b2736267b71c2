//! One call's way through a connection (sans-IO): when it may be sent again and when never. Every
//! Redis path (the async pipelined connection, the blocking lane, the wire path's `WireConnection`) asks it instead
//! of deciding on its own:
//! - a call whose bytes never left (the connection was found closed, or the write failed before any
//!   byte) goes out once more, on a fresh connection;
//! - a call any byte of which may have reached the server is never sent again (it may have run);
//! - `NOSCRIPT` means the script did not run: load it and send the call once more, once.

/// How a write of the call's bytes ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Every byte was handed to the kernel.
    All,
    /// No byte left (safe to send on a fresh connection).
    Nothing,
    /// Some bytes may have left: the command may run.
    Partly,
}

/// What the path does next with the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Wait for the reply.
    AwaitReply,
    /// Send the same bytes on a fresh connection.
    ResendOnFresh,
    /// Load the script, then send the same bytes again on the same connection.
    LoadAndResend,
    /// Fail the call; `may_have_run` says whether the command may have reached the server.
    Fail {
        /// The command may have run (never send it again).
        may_have_run: bool,
    },
}

/// The state of one call: how often it went out and whether its script was loaded for it.
///
/// ```
/// use ratelock::store::connection_core::{CallAttempt, Next, Written};
/// let mut call = CallAttempt::new();
/// assert_eq!(call.written(Written::Nothing), Next::ResendOnFresh); // the idle close found on write
/// assert_eq!(call.written(Written::All), Next::AwaitReply);
/// assert_eq!(call.no_script(), Next::LoadAndResend);
/// assert_eq!(call.no_script(), Next::Fail { may_have_run: false });
///
/// let mut sent = CallAttempt::new();
/// assert_eq!(sent.written(Written::Partly), Next::Fail { may_have_run: true });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct CallAttempt {
    resent: bool,
    reloaded: bool,
}

impl CallAttempt {
    /// A call not yet written.
    pub fn new() -> Self {
        CallAttempt::default()
    }

    /// The call's bytes were written as `written` says.
    pub fn written(&mut self, written: Written) -> Next {
        match written {
            Written::All => Next::AwaitReply,
            Written::Nothing if !self.resent => {
                self.resent = true;
                Next::ResendOnFresh
            }
            Written::Nothing => Next::Fail { may_have_run: false },
            Written::Partly => Next::Fail { may_have_run: true },
        }
    }

    /// The server answered `NOSCRIPT` (the script did not run).
    pub fn no_script(&mut self) -> Next {
        if self.reloaded {
            Next::Fail { may_have_run: false }
        } else {
            self.reloaded = true;
            Next::LoadAndResend
        }
    }

    /// Whether the script was already loaded for this call (a second `NOSCRIPT` is a failure).
    pub fn reloaded(&self) -> bool {
        self.reloaded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_goes_out_at_most_twice_and_never_after_a_byte_may_have_left() {
        let mut call = CallAttempt::new();
        assert_eq!(call.written(Written::Nothing), Next::ResendOnFresh); // found closed before writing
        assert_eq!(call.written(Written::Nothing), Next::Fail { may_have_run: false });
        let mut call = CallAttempt::new();
        assert_eq!(call.written(Written::All), Next::AwaitReply);
        assert_eq!(call.written(Written::Partly), Next::Fail { may_have_run: true });
    }

    #[test]
    fn the_script_is_loaded_once_per_call() {
        let mut call = CallAttempt::new();
        assert!(!call.reloaded());
        assert_eq!(call.no_script(), Next::LoadAndResend);
        assert!(call.reloaded());
        assert_eq!(call.no_script(), Next::Fail { may_have_run: false });
    }
}
