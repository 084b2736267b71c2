//! The storage key of an adapter's limit: a scope (a route, a view, a named group) and the request's
//! key, joined so that no two (scope, key) pairs ever meet. `scope="api"` with key `v2:bob` and
//! `scope="api:v2"` with key `bob` stay two buckets.

use crate::error::Result;
use crate::key::check_key;

/// `<scope>:<key>` with `%` and `:` in the scope written as `%25` and `%3A`. The scope then holds no
/// `:`, so the first `:` always ends it and the pair can be read back: the joining is injective.
/// An empty scope is allowed (`:<key>`). The joined key is checked like every user key (at most
/// [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES)), naming `key` when it is too long.
///
/// ```
/// use ratelock::http::scoped_key;
/// assert_eq!(scoped_key("api", b"v2:bob")?, b"api:v2:bob");
/// assert_eq!(scoped_key("api:v2", b"bob")?, b"api%3Av2:bob");
/// assert!(scoped_key("login", &vec![b'k'; 70_000]).unwrap_err().is_invalid_argument());
/// # Ok::<(), ratelock::Error>(())
/// ```
pub fn scoped_key(scope: &str, key: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(scope.len() + key.len() + 1);
    for &byte in scope.as_bytes() {
        match byte {
            b'%' => out.extend_from_slice(b"%25"),
            b':' => out.extend_from_slice(b"%3A"),
            other => out.push(other),
        }
    }
    out.push(b':');
    out.extend_from_slice(key);
    check_key("key", &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reads a joined key back into its scope and key.
    fn split(joined: &[u8]) -> (String, Vec<u8>) {
        let colon = joined.iter().position(|&b| b == b':').unwrap();
        let (mut scope, mut at) = (Vec::new(), 0);
        while at < colon {
            match &joined[at..colon] {
                [b'%', b'2', b'5', ..] => (scope.push(b'%'), at += 3),
                [b'%', b'3', b'A', ..] => (scope.push(b':'), at += 3),
                [byte, ..] => (scope.push(*byte), at += 1),
                [] => unreachable!(),
            };
        }
        (String::from_utf8(scope).unwrap(), joined[colon + 1..].to_vec())
    }

    proptest! {
        #[test]
        fn every_joined_key_reads_back_as_its_own_pair(scope in "[a-z:%3A5]{0,8}", key in proptest::collection::vec(any::<u8>(), 0..12)) {
            let joined = scoped_key(&scope, &key).unwrap();
            prop_assert_eq!(split(&joined), (scope, key));
        }
    }

    #[test]
    fn the_pairs_that_met_before_are_apart() {
        assert_ne!(
            scoped_key("api", b"v2:bob").unwrap(),
            scoped_key("api:v2", b"bob").unwrap()
        );
        assert_ne!(scoped_key("a%3A", b"b").unwrap(), scoped_key("a:", b"b").unwrap());
        assert_ne!(scoped_key("", b"a:b").unwrap(), scoped_key("a", b"b").unwrap());
    }
}
