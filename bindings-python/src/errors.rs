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

/// Maps a core error to its Python exception, keeping the message (which names the bad part).
pub(crate) fn to_py(err: ratelock::Error) -> PyErr {
    let message = err.to_string();
    match err {
        ratelock::Error::InvalidRule { .. } => InvalidRule::new_err(message),
        ratelock::Error::InvalidArgument { .. } => InvalidArgument::new_err(message),
        ratelock::Error::CostExceedsCapacity { .. } => CostExceedsCapacity::new_err(message),
        ratelock::Error::Timeout(_) => StoreTimeout::new_err(message),
        ratelock::Error::StoreUnavailable(_) => StoreUnavailable::new_err(message),
        ratelock::Error::WaitTimeout(_) => WaitTimeout::new_err(message),
        ratelock::Error::LockNotOwned(_) => LockNotOwned::new_err(message),
        ratelock::Error::LockLost(_) => LockLost::new_err(message),
        ratelock::Error::Protocol(_) => ProtocolError::new_err(message),
        ratelock::Error::Configuration { .. } => ConfigurationError::new_err(message),
        other => RatelockError::new_err(other.to_string()),
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

pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("RatelockError", py.get_type::<RatelockError>())?;
    module.add("InvalidRule", py.get_type::<InvalidRule>())?;
    module.add("InvalidArgument", py.get_type::<InvalidArgument>())?;
    module.add("CostExceedsCapacity", py.get_type::<CostExceedsCapacity>())?;
    module.add("StoreUnavailable", py.get_type::<StoreUnavailable>())?;
    module.add("StoreTimeout", py.get_type::<StoreTimeout>())?;
    module.add("WaitTimeout", py.get_type::<WaitTimeout>())?;
    module.add("LockNotOwned", py.get_type::<LockNotOwned>())?;
    module.add("LockLost", py.get_type::<LockLost>())?;
    module.add("ProtocolError", py.get_type::<ProtocolError>())?;
    module.add("ConfigurationError", py.get_type::<ConfigurationError>())?;
    // Each class carries the core's stable code (`ratelock::Error::code`), so Python code can map an
    // error by its code, as every binding does (None on the base class).
    let codes = [
        ("RatelockError", None),
        ("InvalidRule", Some("INVALID_RULE")),
        ("InvalidArgument", Some("INVALID_ARGUMENT")),
        ("CostExceedsCapacity", Some("COST_EXCEEDS_CAPACITY")),
        ("StoreUnavailable", Some("STORE_UNAVAILABLE")),
        ("StoreTimeout", Some("TIMEOUT")),
        ("WaitTimeout", Some("WAIT_TIMEOUT")),
        ("LockNotOwned", Some("LOCK_NOT_OWNED")),
        ("LockLost", Some("LOCK_LOST")),
        ("ProtocolError", Some("PROTOCOL")),
        ("ConfigurationError", Some("CONFIGURATION")),
    ];
    for (class, code) in codes {
        module.getattr(class)?.setattr("code", code)?;
    }
    Ok(())
}
