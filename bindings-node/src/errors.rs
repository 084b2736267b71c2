//! Errors for JavaScript, typed by their stable code: a napi-rs error whose status is the code
//! (`ERR_RATELOCK_INVALID_RULE`), which napi-rs writes into the JavaScript error's `code` property,
//! and whose reason is the core's message. `lib/errors.js` picks the `RatelockError` subclass by that
//! code; nothing parses a message.

use std::fmt::Display;

use napi::bindgen_prelude::{JsError, Unknown};
use napi::{sys, Env};
use napi_derive::napi;

use crate::option_names::in_javascript_names;

/// The stable code of an error (`ERR_RATELOCK_` and the core's `Error::code`).
#[derive(Clone, Debug)]
pub struct Code(String);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// An error for JavaScript, its code as its status.
pub type Error = napi::Error<Code>;

/// What the addon's exports answer.
pub type Result<T> = std::result::Result<T, Error>;

/// An error handed to JavaScript as a value rather than thrown: the failure of a call settled in a
/// batch, or the refusal that lost a hold. `fromCode` in `lib/errors.js` makes it the typed error.
#[napi(object)]
pub struct Failure {
    pub code: String,
    pub message: String,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure {
            code: error.status.0,
            message: error.reason,
        }
    }
}

/// A core error for JavaScript. A configuration error names the setting to fix; a store option in it
/// is spelled as JavaScript spells it (`tlsRootCa`, not the core's `tls_root_ca`), and so is an invalid
/// argument (`ttlMs`, not the core's `ttl`).
pub(crate) fn to_js(err: ratelock::Error) -> Error {
    let code = format!("ERR_RATELOCK_{}", err.code());
    match err {
        ratelock::Error::Configuration { .. } => coded(&code, in_javascript_names(&err.to_string())),
        ratelock::Error::InvalidArgument { name, reason } => {
            invalid_argument(javascript_argument(name), reason)
        }
        err => coded(&code, err),
    }
}

/// A core argument's name as the JavaScript API spells it (durations in milliseconds, camel case).
fn javascript_argument(name: &str) -> &str {
    match name {
        "ttl" => "ttlMs",
        "waiter_ttl" => "waiterTtlMs",
        "timeout" => "timeoutMs",
        "now" => "nowMs",
        "max_wait" => "maxWaitMs",
        "trusted_proxies" => "trustedProxies",
        name => name,
    }
}

/// An invalid argument of a call, named.
pub(crate) fn invalid_argument(name: &str, problem: impl Display) -> Error {
    coded(
        "ERR_RATELOCK_INVALID_ARGUMENT",
        format!("invalid argument `{name}`: {problem}"),
    )
}

/// A wait its `AbortSignal` ended: no hold was taken. Coded as the wait's end without a hold
/// (WAIT_TIMEOUT); `lib/` answers the signal's reason in its place, so it reaches no caller as itself.
pub(crate) fn aborted_wait() -> Error {
    coded(
        "ERR_RATELOCK_WAIT_TIMEOUT",
        "the wait was aborted by its AbortSignal",
    )
}

/// A panic inside the core, caught before it reaches JavaScript.
pub(crate) fn internal(panic: Box<dyn std::any::Any + Send>) -> Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    bug(format!("internal error in ratelock (a bug): {what}"))
}

/// A failure of the addon itself (a Node-API call, the runtime): never the caller's fault.
pub(crate) fn bug(message: impl Display) -> Error {
    coded("ERR_RATELOCK_INTERNAL", message)
}

/// A failed napi call (making a value, a promise, a function) inside the addon: a bug or an
/// environment shutting down, never the caller's fault.
pub(crate) fn from_napi(error: napi::Error) -> Error {
    bug(format!(
        "a Node-API call failed ({}): {}",
        error.status.as_ref(),
        error.reason
    ))
}

/// An error with the given code and message.
fn coded(code: &str, message: impl Display) -> Error {
    napi::Error::new(Code(code.to_owned()), message)
}

/// `error` made into its JavaScript value here, on the JavaScript thread, and wrapped so that a place
/// napi-rs only lets answer its own kind of error (a promise settled later, an argument's conversion)
/// hands over that value, code included.
pub(crate) fn made_here(env: sys::napi_env, error: Error) -> napi::Error {
    let value: Unknown = JsError::from(error).into_unknown(Env::from_raw(env));
    napi::Error::from(value)
}
