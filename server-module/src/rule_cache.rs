//! The rules RATELOCK.LIMIT has built, kept by their five arguments (`alg limit period burst block`), so a
//! rule seen before is not parsed, checked and built again on every call: a deployment sends the same
//! few rules millions of times. Only rules that built are kept; a bad one is refused each time with the
//! same error. Commands run on Redis's main thread, so the cache is that thread's own.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use ratelock::Rule;

/// Past this many distinct rules the cache starts over (a bound on its memory; real deployments send
/// a handful).
const MOST_RULES: usize = 4096;
/// The longest argument text kept: five arguments of at most 20 bytes each, and their separators.
const LONGEST_KEY: usize = 112;

thread_local! {
    static RULES: RefCell<HashMap<Box<[u8]>, Rule, BuildHasherDefault<Fnv>>> = RefCell::default();
}

/// The rule of these five arguments: the one built before, or `build`'s (kept when it is a rule).
pub fn rule_of(parts: [&[u8]; 5], build: impl FnOnce() -> Result<Rule, String>) -> Result<Rule, String> {
    let mut key = [0u8; LONGEST_KEY];
    let mut len = 0;
    for part in parts {
        if len + part.len() + 1 > LONGEST_KEY {
            return build();
        }
        key[len..len + part.len()].copy_from_slice(part);
        key[len + part.len()] = b' ';
        len += part.len() + 1;
    }
    let key = &key[..len];
    if let Some(rule) = RULES.with_borrow(|rules| rules.get(key).cloned()) {
        return Ok(rule);
    }
    let rule = build()?;
    RULES.with_borrow_mut(|rules| {
        if rules.len() >= MOST_RULES {
            rules.clear();
        }
        rules.insert(key.into(), rule.clone());
    });
    Ok(rule)
}

/// FNV-1a: a short key hashed in a few ns (the keys are the module's own callers' rule texts, and a
/// full cache only starts over).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &byte in bytes {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

#[cfg(test)]
mod tests {
    use super::rule_of;
    use ratelock::{Algorithm, Rule};
    use std::time::Duration;

    fn built(limit: u64) -> Result<Rule, String> {
        Rule::build(Algorithm::Gcra, limit, Duration::from_secs(60), limit).map_err(|e| e.to_string())
    }

    #[test]
    fn a_rule_is_built_once_and_told_apart_by_every_argument() {
        let mut builds = 0;
        for _ in 0..3 {
            let rule = rule_of([b"g", b"100", b"60000000", b"100", b"0"], || {
                builds += 1;
                built(100)
            });
            assert_eq!(rule.unwrap().limit(), 100);
        }
        assert_eq!(builds, 1);
        let other = rule_of([b"g", b"10", b"060000000", b"100", b"0"], || built(10));
        assert_eq!(other.unwrap().limit(), 10);
        // "1 00" and "10 0" are different rules, not one text.
        let split = rule_of([b"g", b"10", b"0", b"100", b"0"], || built(7));
        assert_eq!(split.unwrap().limit(), 7);
        // The block is part of the rule: the same four numbers with a ban are another rule.
        let blocking = rule_of([b"g", b"100", b"60000000", b"100", b"1000"], || built(3));
        assert_eq!(blocking.unwrap().limit(), 3);
    }

    #[test]
    fn a_refused_rule_is_not_kept() {
        assert!(rule_of([b"g", b"0", b"1000", b"1", b"0"], || built(0)).is_err());
        assert_eq!(
            rule_of([b"g", b"0", b"1000", b"1", b"0"], || built(5))
                .unwrap()
                .limit(),
            5
        );
    }
}
