//! The overrides RATELOCK.LIMIT has read, kept by their stored text, so an override read again (a
//! tenant's every request) is not parsed and its rules not built again. Bounded like `rule_cache`: past
//! its size it starts over. Commands run on Redis's main thread, so the cache is that thread's own.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use ratelock::algorithm::overrides::Overrides;

/// Past this many distinct texts the cache starts over.
const MOST_TEXTS: usize = 4096;
/// The longest text kept (a longer one is parsed each time).
const LONGEST_TEXT: usize = 512;

thread_local! {
    static OVERRIDES: RefCell<HashMap<Box<[u8]>, Rc<Overrides>>> = RefCell::default();
}

/// The override `text` stands for (`None` for text no ratelock code writes, never kept).
pub fn overrides_of(text: &[u8]) -> Option<Rc<Overrides>> {
    if text.len() > LONGEST_TEXT {
        return Overrides::parse(text).map(Rc::new);
    }
    if let Some(found) = OVERRIDES.with_borrow(|kept| kept.get(text).cloned()) {
        return Some(found);
    }
    let parsed = Rc::new(Overrides::parse(text)?);
    OVERRIDES.with_borrow_mut(|kept| {
        if kept.len() >= MOST_TEXTS {
            kept.clear();
        }
        kept.insert(text.into(), parsed.clone());
    });
    Some(parsed)
}

#[cfg(test)]
mod tests {
    use super::overrides_of;

    #[test]
    fn a_text_is_parsed_once_and_bad_text_is_never_kept() {
        let first = overrides_of(b"g 10 1000000 10").unwrap();
        assert!(std::rc::Rc::ptr_eq(
            &first,
            &overrides_of(b"g 10 1000000 10").unwrap()
        ));
        assert!(overrides_of(b"g 0 1000000 10").is_none());
        assert!(overrides_of(b"g 0 1000000 10").is_none());
    }
}
