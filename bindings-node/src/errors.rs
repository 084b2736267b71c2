//! Core errors as napi errors whose message starts with the stable code in brackets
//! (`[ERR_RATELOCK_INVALID_RULE] ...`); `index.js` turns them into the `RatelockError` subclasses.

use std::fmt::Display;

/// A core error for JavaScript.
pub(crate) fn to_js(err: ratelock::Error) -> napi::Error {
    coded(&format!("ERR_RATELOCK_{}", err.code()), err)
}

/// An invalid argument of a call, named.
pub(crate) fn invalid_argument(name: &str, problem: impl Display) -> napi::Error {
    coded(
        "ERR_RATELOCK_INVALID_ARGUMENT",
        format!("invalid argument `{name}`: {problem}"),
    )
}

/// A panic inside the core, caught before it reaches JavaScript.
pub(crate) fn internal(panic: Box<dyn std::any::Any + Send>) -> napi::Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    coded(
        "ERR_RATELOCK_INTERNAL",
        format!("internal error in ratelock (a bug): {what}"),
    )
}

pub(crate) fn coded(code: &str, message: impl Display) -> napi::Error {
    napi::Error::from_reason(format!("[{code}] {message}"))
}
