//! Conversions of JavaScript arguments (numbers are f64, durations are milliseconds), each failing with
//! an `ERR_RATELOCK_INVALID_ARGUMENT` that names the argument.

use std::time::Duration;

use napi::bindgen_prelude::{Buffer, Either};

use crate::errors::{invalid_argument, Result};

/// The largest integer a JavaScript number holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// A key: a string (UTF-8) or a Buffer, as given.
pub(crate) fn key(value: Either<String, Buffer>) -> Vec<u8> {
    match value {
        Either::A(text) => text.into_bytes(),
        Either::B(bytes) => bytes.to_vec(),
    }
}

/// A cost: a safe integer >= 1 (default 1).
pub(crate) fn cost(value: Option<f64>) -> Result<u64> {
    match value {
        None => Ok(1),
        Some(n) if n.fract() == 0.0 && (1.0..=MAX_SAFE_INTEGER).contains(&n) => Ok(n as u64),
        Some(n) => Err(invalid_argument(
            "cost",
            format!("expected an integer >= 1, got {n}"),
        )),
    }
}

/// A count (permits): a safe integer >= 1.
pub(crate) fn count(name: &str, value: f64) -> Result<u64> {
    if value.fract() == 0.0 && (1.0..=MAX_SAFE_INTEGER).contains(&value) {
        Ok(value as u64)
    } else {
        Err(invalid_argument(
            name,
            format!("expected an integer >= 1, got {value}"),
        ))
    }
}

/// An explicit time in milliseconds since the Unix epoch (fractions allowed), as µs.
pub(crate) fn now_us(value: Option<f64>) -> Result<Option<u64>> {
    match value {
        None => Ok(None),
        Some(ms) if ms.is_finite() && ms >= 0.0 && ms * 1000.0 <= ratelock::clock::MAX_NOW_US as f64 => {
            Ok(Some((ms * 1000.0).round() as u64))
        }
        Some(ms) => Err(invalid_argument(
            "nowMs",
            format!(
                "expected milliseconds since the Unix epoch, at most 2^52 µs, got {}",
                ratelock::excerpt::of(&ms.to_string())
            ),
        )),
    }
}

/// A positive duration in milliseconds.
pub(crate) fn millis(name: &str, value: f64) -> Result<Duration> {
    if value.is_finite() && value > 0.0 && value < 1e12 {
        Ok(Duration::from_secs_f64(value / 1000.0))
    } else {
        Err(invalid_argument(
            name,
            format!(
                "expected a positive, finite number of milliseconds, got {}",
                ratelock::excerpt::of(&value.to_string())
            ),
        ))
    }
}

/// A reservation's longest wait in milliseconds: finite, from 0, to the nearest µs.
pub(crate) fn max_wait(value: f64) -> Result<Duration> {
    if value == 0.0 {
        return Ok(Duration::ZERO);
    }
    millis("maxWaitMs", value).map(|_| Duration::from_micros((value * 1000.0).round() as u64))
}

/// A duration as milliseconds for JavaScript.
pub(crate) fn to_millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
