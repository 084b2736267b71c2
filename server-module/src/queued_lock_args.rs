//! The arguments RATELOCK.FAIR_LOCK and RATELOCK.RW_LOCK share, read as `fair_lock.lua` and
//! `rw_lock.lua` read their ARGV (through `tonumber`), within what every ratelock client sends.
//!
//! Numbers are decimal integers from 0 to 2^53 (the range in which the scripts' Lua numbers, doubles,
//! are exact). Anything else counts as "not a number", as a `tonumber` that gives nil; the scripts'
//! `tonumber` would also take signs, fractions, hex and exponents, which no client sends.

use crate::args::parse_u64;

/// The largest number taken: 2^53, past which a Lua number (a double) is no longer exact.
const LARGEST_EXACT: u64 = 1 << 53;

/// A number as the scripts' `tonumber` gives it for what clients send, or `None` ("nil").
pub fn number(text: &[u8]) -> Option<u64> {
    parse_u64(text).filter(|&n| n <= LARGEST_EXACT)
}

/// A grant id as text. The scripts compare ids as bytes; the core keeps them as `String`, so an id
/// that is not UTF-8 is refused (ratelock's ids are ASCII).
pub fn grant_id(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|_| "ERR ratelock module: a grant id must be UTF-8 text".to_string())
}

/// The grant id a release, extend or withdraw names: its text, or "" when it is not UTF-8. The scripts
/// never store an empty id (an acquire refuses one), so such an id names no grant, as in the script,
/// where no stored id equals it.
pub fn named_id(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or("")
}

/// Checks the call's shape: `keys` KEYS and `args` ARGV, the script's contract (the tag already taken
/// off). The scripts would run on with nils; every ratelock client sends the full contract.
pub fn expect_shape(
    command: &str,
    keys: usize,
    argv: usize,
    want_keys: usize,
    want_args: usize,
) -> Result<(), String> {
    if keys == want_keys && argv == want_args {
        return Ok(());
    }
    Err(format!(
        "ERR ratelock module: {command} takes {want_keys} keys and {want_args} arguments (got {keys} and {argv})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_exact_decimal_integers() {
        assert_eq!(number(b"0"), Some(0));
        assert_eq!(number(b"007"), Some(7));
        assert_eq!(number(b"9007199254740992"), Some(1 << 53));
        assert_eq!(number(b"9007199254740993"), None);
        for bad in [&b""[..], b"-1", b"1.5", b"1e3", b"0x10", b" 5"] {
            assert_eq!(number(bad), None, "{bad:?}");
        }
    }
}
