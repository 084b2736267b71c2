//! Rule texts parsed once per limiter and shared by its clones and threads: `PreparedRules` (the rules
//! and each rule's canonical text) by the text they were given as. A binding that takes rules as text
//! on every call asks its limiter ([`Limiter::prepared`](crate::Limiter::prepared)) and keeps no cache of
//! its own. Bounded: a new text in a full cache empties it first (texts are few in practice, and one
//! seen again is parsed again in microseconds).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::{Algorithm, Rules};
use crate::error::Result;

/// A rule text, parsed: the rules and each rule's canonical text (what a decision names as its rule).
///
/// ```
/// let limiter = ratelock::Limiter::memory();
/// let prepared = limiter.prepared("10 / second; 100/minute")?;
/// assert_eq!(prepared.rules().len(), 2);
/// assert_eq!(&*prepared.text(0), "10/second");
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug)]
pub struct PreparedRules {
    rules: Arc<Rules>,
    texts: Box<[Arc<str>]>,
}

impl PreparedRules {
    fn parse(text: &str, default: Algorithm) -> Result<Self> {
        let rules = Rules::parse_with_default(text, default)?;
        let texts = rules.iter().map(|rule| Arc::from(rule.to_string())).collect();
        Ok(PreparedRules {
            rules: Arc::new(rules),
            texts,
        })
    }

    /// The rules.
    pub fn rules(&self) -> &Arc<Rules> {
        &self.rules
    }

    /// The canonical text of rule `index` (as `Rule`'s `Display` writes it).
    ///
    /// # Panics
    ///
    /// When `index` is past the last rule (a decision's `rule_index` never is).
    pub fn text(&self, index: usize) -> Arc<str> {
        self.texts[index].clone()
    }
}

/// [`PreparedRules`] by their text, at most `capacity` of them, shared by a limiter's clones.
pub(crate) struct PreparedCache {
    by_text: RwLock<HashMap<Box<str>, Arc<PreparedRules>>>,
    capacity: usize,
}

impl PreparedCache {
    /// Distinct rule texts kept per limiter (the bound a binding's own memo of them takes too).
    pub(crate) const CAPACITY: usize = super::RuleCache::<()>::DEFAULT_CAPACITY;

    pub(crate) fn new(capacity: usize) -> Self {
        PreparedCache {
            by_text: RwLock::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// The rules of `text`: those parsed before, or parsed now (with `default` for rules that name no
    /// algorithm) and kept. A text that does not parse is an error each time and is not kept.
    pub(crate) fn get(&self, text: &str, default: Algorithm) -> Result<Arc<PreparedRules>> {
        let kept = self
            .by_text
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(prepared) = kept.get(text) {
            return Ok(prepared.clone());
        }
        drop(kept);
        let prepared = Arc::new(PreparedRules::parse(text, default)?);
        let mut kept = self
            .by_text
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if kept.len() >= self.capacity {
            kept.clear();
        }
        kept.insert(text.into(), prepared.clone());
        Ok(prepared)
    }

    /// How many texts are kept.
    fn len(&self) -> usize {
        self.by_text.read().map_or(0, |kept| kept.len())
    }
}

impl std::fmt::Debug for PreparedCache {
    /// The count, not the texts (a limiter in a log line stays short).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedCache")
            .field("texts", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_parsed_once_and_a_full_cache_starts_over() {
        let cache = PreparedCache::new(2);
        let first = cache.get("10/second", Algorithm::Gcra).unwrap();
        assert!(Arc::ptr_eq(
            &first,
            &cache.get("10/second", Algorithm::Gcra).unwrap()
        ));
        cache.get("20/second", Algorithm::Gcra).unwrap();
        assert_eq!(cache.len(), 2);
        // A third text empties the full cache first: "10/second" is parsed again afterwards.
        cache.get("30/second", Algorithm::Gcra).unwrap();
        assert_eq!(cache.len(), 1);
        assert!(!Arc::ptr_eq(
            &first,
            &cache.get("10/second", Algorithm::Gcra).unwrap()
        ));
    }

    #[test]
    fn a_text_that_does_not_parse_is_refused_each_time_and_not_kept() {
        let cache = PreparedCache::new(4);
        for _ in 0..2 {
            assert!(cache
                .get("ten/second", Algorithm::Gcra)
                .unwrap_err()
                .is_invalid_rule());
        }
        assert_eq!(cache.len(), 0);
    }
}
