//! The local wall clock in microseconds since the Unix epoch — the only clock read in the crate,
//! used by the memory store and by clients that choose to send their own `now` to Redis.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch, from the local wall clock.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_micros() as u64
}
