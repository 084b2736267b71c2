//! `ratelock._native.LockOptions`: the options of every lock kind, read once from Python keyword
//! arguments into the core's `LockOptions` and the store's call timeout, and what a lock handle is built
//! from. An option left `None` keeps the core's default; any other value must have the right type and
//! range (each error names its argument).

use std::time::Duration;

use pyo3::prelude::*;

use crate::convert;

/// The options of a lock handle; each kind reads the ones it has.
#[pyclass(name = "LockOptions", module = "ratelock._native", frozen)]
#[derive(Clone)]
pub(crate) struct PyLockOptions {
    options: ratelock::LockOptions,
    timeout: Duration,
}

#[pymethods]
impl PyLockOptions {
    #[new]
    #[pyo3(signature = (
        *, ttl=None, waiter_ttl=None, auto_renew=None, reentrant=None, prefer_writers=None, prefix=None,
        timeout=None, metrics=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        ttl: Option<&Bound<'_, PyAny>>,
        waiter_ttl: Option<&Bound<'_, PyAny>>,
        auto_renew: Option<&Bound<'_, PyAny>>,
        reentrant: Option<&Bound<'_, PyAny>>,
        prefer_writers: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
        metrics: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let PyLockOptions {
            mut options,
            timeout: mut call_timeout,
        } = PyLockOptions::default();
        set(&mut options.ttl, "ttl", ttl, convert::seconds_of)?;
        set(
            &mut options.waiter_ttl,
            "waiter_ttl",
            waiter_ttl,
            convert::seconds_of,
        )?;
        set(&mut options.auto_renew, "auto_renew", auto_renew, convert::flag)?;
        set(&mut options.reentrant, "reentrant", reentrant, convert::flag)?;
        set(
            &mut options.prefer_writers,
            "prefer_writers",
            prefer_writers,
            convert::flag,
        )?;
        set(&mut options.prefix, "prefix", prefix, convert::text)?;
        set(&mut call_timeout, "timeout", timeout, convert::seconds_of)?;
        if let Some(hook) = crate::metrics::hook_of(metrics)? {
            options = options.with_hook(hook);
        }
        Ok(PyLockOptions {
            options,
            timeout: call_timeout,
        })
    }
}

impl Default for PyLockOptions {
    /// The core's lock options, and calls to the store that time out after a second.
    fn default() -> Self {
        PyLockOptions {
            options: ratelock::LockOptions::default(),
            timeout: Duration::from_secs(1),
        }
    }
}

/// Sets `option` to the argument `name` as `read` reads it (naming it in its errors), when it was given.
fn set<T>(
    option: &mut T,
    name: &str,
    given: Option<&Bound<'_, PyAny>>,
    read: fn(&str, &Bound<'_, PyAny>) -> PyResult<T>,
) -> PyResult<()> {
    if let Some(value) = given {
        *option = read(name, value)?;
    }
    Ok(())
}

/// Where a lock handle's store comes from (a lock of any kind takes it with `store()`, a
/// `DistributedLock`, which may run on Redlock, with `lock_store()`) and its lock options, from the
/// `url` and `options` arguments its constructor was given (no I/O: stores connect on first use).
pub(crate) fn lock_parts(
    _py: Python<'_>,
    url: Option<&Bound<'_, PyAny>>,
    options: Option<&PyLockOptions>,
) -> PyResult<(crate::stores::StoreChoice, ratelock::LockOptions)> {
    let PyLockOptions { options, timeout } =
        options.map_or_else(PyLockOptions::default, PyLockOptions::clone);
    let choice = crate::stores::Target::of(url)?.with_timeout(timeout);
    Ok((choice, options))
}
