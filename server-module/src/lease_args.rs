//! The arguments of the lock and semaphore commands, read as their scripts read them: owner tokens and
//! permit ids as the core's text, numbers as decimal integers (`now` is read by `args::now_or_clock`).
//!
//! Numbers are plain decimal integers (what every ratelock client sends). Lua's `tonumber` would also
//! take "1e3", "0x10" or "2.5"; where the script answers an error for a missing number, the module
//! answers that error for those too, and where the script has no error path (`now`, a lease length it
//! does not check) the module answers an error of its own rather than guess.

use crate::args::parse_u64;

/// An owner token or permit id as the core takes it: byte `b` becomes the char numbered `b` (Latin-1),
/// a mapping that keeps equality and turns back exactly ([`token_bytes`]), so any bytes compare in the
/// core as they compare in the script.
pub fn token_text(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// The bytes of a token made by [`token_text`].
pub fn token_bytes(text: &str) -> Vec<u8> {
    text.chars().map(|c| c as u8).collect()
}

/// A grant's fencing token as a release or extend names it. The script compares `tonumber` of both
/// sides, so a token that is not a number names no grant: it reads as `u64::MAX`, which no grant has
/// (tokens stay below 2^53).
pub fn named_fence(arg: Option<&[u8]>) -> u64 {
    arg.and_then(parse_u64).unwrap_or(u64::MAX)
}

/// A grant's owner token as a release or extend names it; an absent one reads as "", which no grant
/// has (an acquire refuses an empty owner), as the script's `nil` equals no stored owner.
pub fn named_owner(arg: Option<&[u8]>) -> String {
    token_text(arg.unwrap_or_default())
}

/// A count or length the script requires to be at least 1 (`tonumber(x) >= 1`).
pub fn at_least_one(arg: Option<&[u8]>) -> Option<u64> {
    arg.and_then(parse_u64).filter(|&n| n >= 1)
}

/// The longest lease a call may ask for, in µs (about 142 years): a lease end stays below 2^53, where
/// every path keeps it exact, and no sum with the clock can wrap. ratelock's own clients ask for 366
/// days at most; a longer one overflowed (a lease of 2^64 - 1 µs ended 1 ms after it was granted).
pub const MAX_LEASE_US: u64 = 1 << 52;

/// An acquire's lease length `ttl_us` (at least 1 µs, as the script checks) refused past
/// [`MAX_LEASE_US`], which the script takes.
pub fn within_lease_bound(ttl_us: u64, call: &str) -> Result<u64, String> {
    match ttl_us <= MAX_LEASE_US {
        true => Ok(ttl_us),
        false => Err(format!("ERR ratelock module: {call}'s lease is past 2^52 µs")),
    }
}

/// A new lease length for an extend, which the scripts do not check: a decimal integer, maybe
/// negative; an error naming `call` for anything else, where the script would fail on its arithmetic.
pub fn extend_length(arg: Option<&[u8]>, call: &str) -> Result<i64, String> {
    let text = arg.unwrap_or_default();
    let magnitude = parse_u64(text.strip_prefix(b"-").unwrap_or(text)).and_then(|n| i64::try_from(n).ok());
    match magnitude.filter(|&n| n.unsigned_abs() <= MAX_LEASE_US) {
        Some(n) if text.starts_with(b"-") => Ok(-n),
        Some(n) => Ok(n),
        None => Err(format!(
            "ERR ratelock module: {call} needs a lease length in µs (an integer, at most 2^52 either way)"
        )),
    }
}
