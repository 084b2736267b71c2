//! The one rule every lock kind shares about its store's replies: a reply of the wrong kind for the call
//! made is a protocol error.

use crate::error::Error;

/// The answer inside `$reply` when it is the `$variant` the call expects; a protocol error otherwise
/// (a store answering another call's kind of reply is a bug, never an outage).
macro_rules! reply_as {
    ($reply:expr, $variant:path) => {
        match $reply {
            $variant(answer) => Ok(answer),
            other => Err($crate::lock::reply::unexpected(other)),
        }
    };
}

/// A store reply of the wrong kind for the call that was made (a bug or a foreign script): a protocol
/// error, which no failure policy covers.
pub(crate) fn unexpected(reply: impl std::fmt::Debug) -> Error {
    Error::Protocol(format!("unexpected lock reply: {reply:?}"))
}
