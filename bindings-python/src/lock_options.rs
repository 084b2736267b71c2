//! `ratelock._native.LockOptions`: the options of every lock kind, read once from Python keyword
//! arguments into the core's `LockOptions` and the store's call timeout, and what a lock handle is built
//! from. An option left `None` keeps the core's default; any other value must have the right type and
//! range (each error names its argument).

use std::time::Duration;

use pyo3::prelude::*;

use crate::convert;

/// The options of a lock handle; each kind reads the ones it has.
#[pyclass(name = "LockOptions", module = "ratelock._native", frozen)]
pub(crate) struct PyLockOptions {
    options: ratelock::LockOptions,
    timeout: Duration,
}

#[pymethods]
impl PyLockOptions {
    #[new]
    #[pyo3(signature = (
        *, ttl=None, waiter_ttl=None, auto_renew=None, reentrant=None, prefer_writers=None, prefix=None,
        timeout=None
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
    ) -> PyResult<Self> {
        let mut options = ratelock::LockOptions::default();
        if let Some(ttl) = ttl {
            options = options.with_ttl(convert::seconds_of("ttl", ttl)?);
        }
        if let Some(waiter_ttl) = waiter_ttl {
            options = options.with_waiter_ttl(convert::seconds_of("waiter_ttl", waiter_ttl)?);
        }
        if let Some(auto_renew) = auto_renew {
            options = options.with_auto_renew(convert::flag("auto_renew", auto_renew)?);
        }
        if let Some(reentrant) = reentrant {
            options = options.with_reentrant(convert::flag("reentrant", reentrant)?);
        }
        if let Some(prefer_writers) = prefer_writers {
            options = options.with_prefer_writers(convert::flag("prefer_writers", prefer_writers)?);
        }
        if let Some(prefix) = prefix {
            options = options.with_prefix(convert::text("prefix", prefix)?);
        }
        let timeout = match timeout {
            Some(timeout) => convert::seconds_of("timeout", timeout)?,
            None => Duration::from_secs(1),
        };
        Ok(PyLockOptions { options, timeout })
    }
}

/// The store a lock handle uses and its lock options, from the `url` and `options` arguments its
/// constructor was given (no I/O: stores connect on first use).
pub(crate) fn lock_parts(
    py: Python<'_>,
    url: Option<&Bound<'_, PyAny>>,
    options: Option<&PyLockOptions>,
) -> PyResult<(ratelock::Store, ratelock::LockOptions)> {
    let (options, timeout) = match options {
        Some(given) => (given.options.clone(), given.timeout),
        None => (ratelock::LockOptions::default(), Duration::from_secs(1)),
    };
    let store = crate::stores::Target::of(url)?.store_blocking(py, timeout)?;
    Ok((store, options))
}
