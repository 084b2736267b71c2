//! What a Redis reply means: the script's answer, or a typed failure sorted by the connection core's
//! error table, with NOSCRIPT kept apart (the one failure known not to have run anything). Every
//! connection of the Redis store reads its replies through here.

use std::time::Duration;

use redis::Value;

use crate::error::{Error, Result};
use crate::store::connection_core::{redis_error, server_closes_after, server_error};

/// Why a command failed: NOSCRIPT is the one failure that is known not to have run anything.
pub(crate) enum Failure {
    NoScript,
    Other(Error),
}

impl Failure {
    /// The error of a call that was not a script call or whose script was loaded already: NOSCRIPT is
    /// then a failure of its own.
    pub(crate) fn into_error(self) -> Error {
        match self {
            Failure::NoScript => crate::store::connection_core::noscript_after_load(),
            Failure::Other(err) => err,
        }
    }
}

/// A command's reply (from any connection) as a value or a typed failure, sorted by the error table
/// of the connection core (outage, configuration error or bug).
pub(crate) fn classify(reply: redis::RedisResult<Value>, timeout: Duration) -> Result<Value, Failure> {
    match reply {
        // The cluster connection reports server errors as errors rather than as error replies.
        Err(err) if err.code() == Some("NOSCRIPT") => Err(Failure::NoScript),
        Err(err) => Err(Failure::Other(redis_error(&err, timeout))),
        Ok(Value::ServerError(err)) if err.code() == "NOSCRIPT" => Err(Failure::NoScript),
        Ok(Value::ServerError(err)) => Err(Failure::Other(server_error(
            err.code(),
            err.details().unwrap_or_default(),
        ))),
        Ok(value) => Ok(value),
    }
}

/// Whether `reply` is an error after which the server closes the connection (see
/// [`server_closes_after`]): the connection is then not used again.
pub(crate) fn closes_connection(reply: &Value) -> bool {
    matches!(reply, Value::ServerError(err) if server_closes_after(err.code(), err.details().unwrap_or_default()))
}

/// A script's reply as exactly `count` integers.
pub(crate) fn integers(reply: Value, count: usize) -> Result<Vec<i64>> {
    let bad = |what: &Value| {
        Error::Protocol(format!(
            "unexpected script reply: {}",
            super::call_tag::excerpt(what)
        ))
    };
    match reply {
        Value::Array(items) if items.len() == count => items
            .into_iter()
            .map(|item| match item {
                Value::Int(n) => Ok(n),
                other => Err(bad(&other)),
            })
            .collect(),
        other => Err(bad(&other)),
    }
}
