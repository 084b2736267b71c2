//! ratelock's exception hierarchy for Python, and the one mapping from `ratelock::Error` to it.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    _native,
    RatelockError,
    PyException,
    "Base class of every ratelock error."
);
create_exception!(
    _native,
    InvalidRule,
    RatelockError,
    "Rule text or values that are not valid."
);
create_exception!(
    _native,
    InvalidArgument,
    RatelockError,
    "An argument other than a rule that is not valid."
);
create_exception!(
    _native,
    CostExceedsCapacity,
    RatelockError,
    "A cost above what the rule can ever admit at once."
);
create_exception!(
    _native,
    StoreUnavailable,
    RatelockError,
    "The store could not be reached or failed."
);
create_exception!(
    _native,
    StoreTimeout,
    StoreUnavailable,
    "The store did not answer in time (the command may have run)."
);
create_exception!(
    _native,
    WaitTimeout,
    RatelockError,
    "Waiting for a lock or permit ran past its deadline."
);
create_exception!(
    _native,
    LockNotOwned,
    RatelockError,
    "Releasing or extending a lock this handle does not hold."
);
create_exception!(
    _native,
    ProtocolError,
    RatelockError,
    "A reply that does not match its call, or a state the store did not expect: a bug, never an outage."
);
create_exception!(
    _native,
    ConfigurationError,
    RatelockError,
    "The store refused ratelock's setup (password, ACL permission, db index): raised whatever on_error says."
);
create_exception!(
    _native,
    LockLost,
    RatelockError,
    "The lock was lost (expired or taken) while held."
);

/// Maps a core error to its Python exception by its stable code (`ratelock::Error::code`), keeping
/// the message (which names the bad part). A code this binding does not know yet is a plain
/// `RatelockError`. Lazy: no GIL is needed to make it (runtime threads make them).
pub(crate) fn to_py(err: ratelock::Error) -> PyErr {
    let message = err.to_string();
    match err.code() {
        "INVALID_RULE" => InvalidRule::new_err(message),
        "INVALID_ARGUMENT" => InvalidArgument::new_err(message),
        "COST_EXCEEDS_CAPACITY" => CostExceedsCapacity::new_err(message),
        "TIMEOUT" => StoreTimeout::new_err(message),
        "STORE_UNAVAILABLE" => StoreUnavailable::new_err(message),
        "WAIT_TIMEOUT" => WaitTimeout::new_err(message),
        "LOCK_NOT_OWNED" => LockNotOwned::new_err(message),
        "LOCK_LOST" => LockLost::new_err(message),
        "PROTOCOL" => ProtocolError::new_err(message),
        "CONFIGURATION" => ConfigurationError::new_err(message),
        _ => RatelockError::new_err(message),
    }
}

/// A Rust panic caught at the boundary, as a plain ratelock error.
pub(crate) fn internal_error(panic: Box<dyn std::any::Any + Send>) -> PyErr {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    RatelockError::new_err(format!("internal error in ratelock (please report): {detail}"))
}

/// How to reach one exception class.
type ClassOf = for<'py> fn(Python<'py>) -> Bound<'py, pyo3::types::PyType>;

/// Every exception class: its name in the module, the core's code it stands for (`None`: the base
/// class), and the class.
const EXCEPTIONS: [(&str, Option<&str>, ClassOf); 11] = [
    ("RatelockError", None, |py| py.get_type::<RatelockError>()),
    ("InvalidRule", Some("INVALID_RULE"), |py| {
        py.get_type::<InvalidRule>()
    }),
    ("InvalidArgument", Some("INVALID_ARGUMENT"), |py| {
        py.get_type::<InvalidArgument>()
    }),
    ("CostExceedsCapacity", Some("COST_EXCEEDS_CAPACITY"), |py| {
        py.get_type::<CostExceedsCapacity>()
    }),
    ("StoreUnavailable", Some("STORE_UNAVAILABLE"), |py| {
        py.get_type::<StoreUnavailable>()
    }),
    ("StoreTimeout", Some("TIMEOUT"), |py| {
        py.get_type::<StoreTimeout>()
    }),
    ("WaitTimeout", Some("WAIT_TIMEOUT"), |py| {
        py.get_type::<WaitTimeout>()
    }),
    ("LockNotOwned", Some("LOCK_NOT_OWNED"), |py| {
        py.get_type::<LockNotOwned>()
    }),
    ("LockLost", Some("LOCK_LOST"), |py| py.get_type::<LockLost>()),
    ("ProtocolError", Some("PROTOCOL"), |py| {
        py.get_type::<ProtocolError>()
    }),
    ("ConfigurationError", Some("CONFIGURATION"), |py| {
        py.get_type::<ConfigurationError>()
    }),
];

/// Adds every exception class to the module, each carrying the core's stable code as `code`, so
/// Python code can map an error by its code, as every binding does (None on the base class).
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    for (name, code, class) in EXCEPTIONS {
        let class = class(module.py());
        class.setattr("code", code)?;
        module.add(name, class)?;
    }
    Ok(())
}
