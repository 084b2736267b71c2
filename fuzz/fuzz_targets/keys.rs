//! Any prefix and user key: every key of one lock (and every rule of one limit key) shares one Redis
//! Cluster hash tag, and two different user keys never share a tag (the escaping is injective).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ratelock::key::{escape_into, LockKeys};

/// What Redis Cluster hashes: the bytes between the first `{` and the first `}` after it.
fn hash_tag(key: &[u8]) -> &[u8] {
    let open = key.iter().position(|&b| b == b'{').expect("a hash tag");
    let close = key[open + 1..]
        .iter()
        .position(|&b| b == b'}')
        .expect("a closed hash tag");
    &key[open + 1..open + 1 + close]
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (first, second) = data.split_at(split);
    let second = second.get(1..).unwrap_or_default();
    let keys = LockKeys::new("rl", first);
    let tag = hash_tag(&keys.lease);
    assert!(!tag.is_empty());
    assert_eq!(hash_tag(&keys.fence), tag);
    assert_eq!(hash_tag(&keys.channel), tag);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    escape_into(&mut a, first);
    escape_into(&mut b, second);
    assert_eq!(a == b, first == second, "escaping is injective");
});
