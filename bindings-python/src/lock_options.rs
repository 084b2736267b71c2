//! The keyword arguments shared by `FairLockHandle` and `ReadWriteLockHandle`, read into the core's
//! `LockOptions`. `None` keeps the core's default; anything else must have the right type and range.

use std::time::Duration;

use pyo3::prelude::*;

use crate::convert;

/// The optional keyword arguments of a fair or read-write lock handle, as given.
pub(crate) struct LockArguments<'a, 'py> {
    pub(crate) ttl: Option<&'a Bound<'py, PyAny>>,
    pub(crate) waiter_ttl: Option<&'a Bound<'py, PyAny>>,
    pub(crate) auto_renew: Option<&'a Bound<'py, PyAny>>,
    pub(crate) prefer_writers: Option<&'a Bound<'py, PyAny>>,
    pub(crate) prefix: Option<&'a Bound<'py, PyAny>>,
    pub(crate) timeout: Option<&'a Bound<'py, PyAny>>,
}

/// What a handle is built from: the lock's options and the store's call timeout.
pub(crate) struct Parsed {
    pub(crate) options: ratelock::LockOptions,
    pub(crate) timeout: Duration,
}

impl LockArguments<'_, '_> {
    /// Reads every given argument (each error names its argument); the rest keep their defaults.
    pub(crate) fn parse(&self) -> PyResult<Parsed> {
        let mut options = ratelock::LockOptions::default();
        if let Some(ttl) = given(self.ttl) {
            options = options.with_ttl(convert::seconds_of("ttl", ttl)?);
        }
        if let Some(waiter_ttl) = given(self.waiter_ttl) {
            options = options.with_waiter_ttl(convert::seconds_of("waiter_ttl", waiter_ttl)?);
        }
        if let Some(auto_renew) = given(self.auto_renew) {
            options = options.with_auto_renew(convert::flag("auto_renew", auto_renew)?);
        }
        if let Some(prefer_writers) = given(self.prefer_writers) {
            options = options.with_prefer_writers(convert::flag("prefer_writers", prefer_writers)?);
        }
        if let Some(prefix) = given(self.prefix) {
            options = options.with_prefix(convert::text("prefix", prefix)?);
        }
        let timeout = match given(self.timeout) {
            Some(timeout) => convert::seconds_of("timeout", timeout)?,
            None => Duration::from_secs(1),
        };
        Ok(Parsed { options, timeout })
    }
}

/// The value if one was given (`None` counts as not given).
fn given<'a, 'py>(value: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    value.filter(|value| !value.is_none())
}
