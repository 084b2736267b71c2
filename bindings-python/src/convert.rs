//! Conversions of Python arguments, each failing with a typed `InvalidArgument` that names the argument.

use std::time::Duration;

use pyo3::exceptions::PyUnicodeEncodeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyString};
use ratelock::excerpt;

use crate::errors::InvalidArgument;

/// A key: `str` (UTF-8) or `bytes`, as given. A `str` that is not valid Unicode text (a lone surrogate,
/// which UTF-8 cannot encode) is an `InvalidArgument`, never silently replaced.
pub(crate) fn key(value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    Ok(key_bytes(value)?.as_bytes().to_vec())
}

/// A key as a bytes object to borrow from for the length of a call: `bytes` as given (no copy), a `str`
/// as its UTF-8 encoding.
pub(crate) fn key_bytes<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    named_bytes("key", value)
}

/// A lock name: `str` (UTF-8) or `bytes`; an error names the `name` argument.
pub(crate) fn name(value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    Ok(named_bytes("name", value)?.as_bytes().to_vec())
}

fn named_bytes<'py>(argument: &str, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    if let Ok(text) = value.cast::<PyString>() {
        return text
            .encode_utf8()
            .map_err(|err| not_unicode(argument, value.py(), err));
    }
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(bytes.clone());
    }
    Err(InvalidArgument::new_err(format!(
        "invalid argument `{argument}`: expected str or bytes, got {}",
        value.get_type().name()?
    )))
}

/// The error for a `str` that UTF-8 cannot encode (a lone surrogate such as `"\ud800"`); other errors
/// pass through unchanged.
pub(crate) fn not_unicode(argument: &str, py: Python<'_>, err: PyErr) -> PyErr {
    if !err.is_instance_of::<PyUnicodeEncodeError>(py) {
        return err;
    }
    InvalidArgument::new_err(format!(
        "invalid argument `{argument}`: not valid Unicode text (it holds a lone surrogate); \
         pass bytes for a key that is not text"
    ))
}

/// Rule text: a str (`"10/second; 1000/hour"`).
pub(crate) fn rule_text<'a, 'py>(value: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PyString>> {
    value.cast::<PyString>().map_err(|_| {
        let got = value
            .get_type()
            .name()
            .map_or_else(|_| "?".to_owned(), |name| name.to_string());
        InvalidArgument::new_err(format!(
            "invalid argument `rules`: expected rule text (str), got {got}"
        ))
    })
}

/// A cost: an int from 1 to 2^64 - 1 (not a bool, not a float).
pub(crate) fn cost(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    let bad = || {
        InvalidArgument::new_err(format!(
            "invalid argument `cost`: expected an int >= 1, got {}",
            shown(value)
        ))
    };
    if value.is_instance_of::<PyBool>() {
        return Err(bad());
    }
    match value.extract::<u64>() {
        Ok(cost) if cost >= 1 => Ok(cost),
        _ => Err(bad()),
    }
}

/// A count (permits): an int from 1 to 2^64 - 1 (not a bool).
pub(crate) fn count(name: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    match value.extract::<u64>() {
        Ok(n) if n >= 1 && !value.is_instance_of::<PyBool>() => Ok(n),
        _ => Err(InvalidArgument::new_err(format!(
            "invalid argument `{name}`: expected an int >= 1, got {}",
            shown(value)
        ))),
    }
}

/// A count of processes sharing the limits (`instances`): an int from 1 to `ratelock::MAX_INSTANCES`
/// (not a bool), 1 when not given; a negative or huge int is an `InvalidArgument` too, never a bare
/// `OverflowError`.
pub(crate) fn instances(value: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(1);
    };
    match value.extract::<u64>() {
        Ok(n) if (1..=ratelock::MAX_INSTANCES).contains(&n) && !value.is_instance_of::<PyBool>() => Ok(n),
        _ => Err(InvalidArgument::new_err(format!(
            "invalid argument `instances`: expected an int from 1 to {}, got {}",
            ratelock::MAX_INSTANCES,
            shown(value)
        ))),
    }
}

/// A time in µs since the epoch, or `None`: an int from 0 to `ratelock::clock::MAX_NOW_US` (2^52, the
/// bound of every path: the scripts compute in doubles, exact up to 2^53).
pub(crate) fn now_us(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    match value.extract::<u64>() {
        Ok(now) if now <= ratelock::clock::MAX_NOW_US && !value.is_instance_of::<PyBool>() => Ok(Some(now)),
        _ => Err(InvalidArgument::new_err(format!(
            "invalid argument `now_us`: expected an int of microseconds since the epoch, from 0 to 2**52, got {}",
            shown(value)
        ))),
    }
}

/// A duration in seconds (int or float, finite, > 0).
pub(crate) fn seconds(name: &str, value: f64) -> PyResult<Duration> {
    if value.is_finite() && value > 0.0 && value < 1e9 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(InvalidArgument::new_err(format!(
            "invalid argument `{name}`: expected a positive, finite number of seconds, got {}",
            excerpt::of(&value.to_string())
        )))
    }
}

/// A duration in seconds given as any Python object: an int or float (not a bool), finite and > 0.
/// Any other type is an `InvalidArgument` naming the argument, like a bad value.
pub(crate) fn seconds_of(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    match value.extract::<f64>() {
        Ok(seconds) if !value.is_instance_of::<PyBool>() => self::seconds(name, seconds),
        _ => Err(InvalidArgument::new_err(format!(
            "invalid argument `{name}`: expected a positive, finite number of seconds, got {}",
            described(value)
        ))),
    }
}

/// A reservation's longest wait in seconds: an int or float (not a bool), finite, from 0; to the
/// nearest µs (the unit every store counts in).
pub(crate) fn max_wait_of(value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    wait_from_zero("max_wait", value)
}

/// How long to wait, given as any Python object: `None` for no limit, else seconds from 0 as for
/// `max_wait_of` (0 is a wait that ends at once: one try).
pub(crate) fn wait_of(timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Duration> {
    match timeout.filter(|value| !value.is_none()) {
        Some(value) => wait_from_zero("timeout", value),
        None => Ok(Duration::MAX),
    }
}

/// A wait in seconds: an int or float (not a bool), finite, from 0; to the nearest µs.
fn wait_from_zero(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    match value.extract::<f64>() {
        Ok(seconds) if !value.is_instance_of::<PyBool>() && seconds == 0.0 => Ok(Duration::ZERO),
        Ok(seconds) if !value.is_instance_of::<PyBool>() => {
            self::seconds(name, seconds).map(|_| Duration::from_micros((seconds * 1e6).round() as u64))
        }
        _ => Err(InvalidArgument::new_err(format!(
            "invalid argument `{name}`: expected a finite number of seconds from 0, got {}",
            described(value)
        ))),
    }
}

/// A yes/no option: a `bool` and nothing else.
pub(crate) fn flag(name: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    value.cast::<PyBool>().map(|flag| flag.is_true()).map_err(|_| {
        InvalidArgument::new_err(format!(
            "invalid argument `{name}`: expected True or False, got {}",
            described(value)
        ))
    })
}

/// A text option: a `str` and nothing else.
pub(crate) fn text(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    match value.cast::<PyString>() {
        Ok(text) => Ok(text
            .to_cow()
            .map_err(|err| not_unicode(name, value.py(), err))?
            .into_owned()),
        Err(_) => Err(InvalidArgument::new_err(format!(
            "invalid argument `{name}`: expected str, got {}",
            described(value)
        ))),
    }
}

/// A value for an error message: its `str()`, as a bounded excerpt.
fn shown(value: &Bound<'_, PyAny>) -> String {
    let text = value
        .str()
        .map_or_else(|_| "?".to_owned(), |text| text.to_string());
    excerpt::of(&text).into_owned()
}

/// A value for an error message: its repr (a bounded excerpt) and type, e.g. `'10' (str)`.
fn described(value: &Bound<'_, PyAny>) -> String {
    let repr = value.repr().map_or_else(
        |_| "?".to_owned(),
        |repr| excerpt::of(&repr.to_string()).into_owned(),
    );
    let kind = value
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |name| name.to_string());
    format!("{repr} ({kind})")
}
