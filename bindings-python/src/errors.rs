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

/// Maps a core error to its Python exception by its stable code (`ratelock::Error::code`) through
/// [`EXCEPTIONS`], keeping the message (which names the bad part). A code this binding does not know
/// yet is a plain `RatelockError`. Lazy: no GIL is needed to make it (runtime threads make them).
pub(crate) fn to_py(err: ratelock::Error) -> PyErr {
    let (code, message) = (err.code(), err.to_string());
    match EXCEPTIONS.iter().find(|exception| exception.code == Some(code)) {
        Some(exception) => (exception.raise)(message),
        None => RatelockError::new_err(message),
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

/// One exception class: its name in the module, the core's code it stands for (`None`: the base
/// class), the class, and how to raise it (lazily, without the GIL).
struct Exception {
    name: &'static str,
    code: Option<&'static str>,
    class: for<'py> fn(Python<'py>) -> Bound<'py, pyo3::types::PyType>,
    raise: fn(String) -> PyErr,
}

/// Declares each class once: its name, its code, and both ways to reach it.
macro_rules! exceptions {
    ($(($class:ident, $code:expr)),* $(,)?) => {
        [$(Exception {
            name: stringify!($class),
            code: $code,
            class: |py| py.get_type::<$class>(),
            raise: |message| $class::new_err(message),
        }),*]
    };
}

/// Every exception class and the core's code it stands for: the one mapping.
const EXCEPTIONS: [Exception; 11] = exceptions![
    (RatelockError, None),
    (InvalidRule, Some("INVALID_RULE")),
    (InvalidArgument, Some("INVALID_ARGUMENT")),
    (CostExceedsCapacity, Some("COST_EXCEEDS_CAPACITY")),
    (StoreUnavailable, Some("STORE_UNAVAILABLE")),
    (StoreTimeout, Some("TIMEOUT")),
    (WaitTimeout, Some("WAIT_TIMEOUT")),
    (LockNotOwned, Some("LOCK_NOT_OWNED")),
    (LockLost, Some("LOCK_LOST")),
    (ProtocolError, Some("PROTOCOL")),
    (ConfigurationError, Some("CONFIGURATION")),
];

/// Adds every exception class to the module, each carrying the core's stable code as `code`, so
/// Python code can map an error by its code, as every binding does (None on the base class).
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    for exception in &EXCEPTIONS {
        let class = (exception.class)(module.py());
        class.setattr("code", exception.code)?;
        module.add(exception.name, class)?;
    }
    Ok(())
}
