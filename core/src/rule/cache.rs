//! `RuleCache`: values made once per rule text, bounded; when it is full it starts over (texts are few in
//! practice). Parsing is the limiter's own ([`Limiter::prepared`](crate::Limiter::prepared)); a binding
//! keeps a `RuleCache` only of values in its own language made from the prepared rules (the WebAssembly
//! package's rule texts as JavaScript strings), or of rules that belong to no limiter (an HTTP
//! adapter's).

use std::collections::HashMap;

/// Parsed rule texts (or anything a binding makes from them) by text, at most `capacity` of them.
///
/// ```
/// use ratelock::{RuleCache, Rules};
/// let mut cache: RuleCache<Rules> = RuleCache::new(2);
/// let rules = cache.get_or_try_insert("10/second", |text| text.parse::<Rules>())?;
/// assert_eq!(rules.len(), 1);
/// assert!(cache.get_or_try_insert("ten/second", |text| text.parse::<Rules>()).is_err());
/// assert_eq!(cache.len(), 1); // nothing kept for a text that failed
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RuleCache<T> {
    parsed: HashMap<String, T>,
    capacity: usize,
}

impl<T> RuleCache<T> {
    /// The capacity the bindings use: distinct rule texts kept per limiter.
    pub const DEFAULT_CAPACITY: usize = 1024;

    /// An empty cache holding at most `capacity` texts (at least 1).
    pub fn new(capacity: usize) -> Self {
        RuleCache {
            parsed: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// The entry for `text`, made by `make` the first time it is asked for. An error from `make` is
    /// returned and nothing is kept. A new text in a full cache empties it first.
    pub fn get_or_try_insert<E>(
        &mut self,
        text: &str,
        make: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<&T, E> {
        if !self.parsed.contains_key(text) {
            let made = make(text)?;
            if self.parsed.len() >= self.capacity {
                self.parsed.clear();
            }
            self.parsed.insert(text.to_owned(), made);
        }
        Ok(&self.parsed[text])
    }

    /// How many texts are kept.
    pub fn len(&self) -> usize {
        self.parsed.len()
    }

    /// True when no text is kept.
    pub fn is_empty(&self) -> bool {
        self.parsed.is_empty()
    }

    /// Forgets every text.
    pub fn clear(&mut self) {
        self.parsed.clear();
    }
}

impl<T> Default for RuleCache<T> {
    fn default() -> Self {
        RuleCache::new(Self::DEFAULT_CAPACITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_cache_starts_over_and_keeps_the_newest_text() {
        let mut cache: RuleCache<usize> = RuleCache::new(2);
        let mut made = 0;
        for text in ["a", "b", "a", "c", "a"] {
            cache
                .get_or_try_insert(text, |t| {
                    made += 1;
                    Ok::<_, ()>(t.len())
                })
                .unwrap();
        }
        // "a" and "b" fill it; "a" again is a hit; "c" empties it first; "a" is made again.
        assert_eq!(made, 4);
        assert_eq!(cache.len(), 2);
    }
}
