//! Redis strings made once, when the module loads, and shared by every call: the hash field names of
//! the scripts' layouts and the words the module replicates (`PXAT`). A call that reads or writes a
//! field, or propagates a command, hands Redis these instead of allocating a new string each time.
//! Redis only reads them and counts references, and they are never freed.

use std::sync::OnceLock;

use crate::api::{api, RString};

/// The words made at load.
const WORDS: [&[u8]; 12] = [
    b"t", b"l", b"v", b"w", b"c", b"p", b"o", b"n", b"f", b"i", b"e", b"PXAT",
];

/// The shared strings, in the order of [`WORDS`].
struct Shared([*mut RString; WORDS.len()]);

// SAFETY: module commands run on Redis's main thread, the only one that touches these strings (their
// reference counts included); the table itself never changes after load.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

static SHARED: OnceLock<Shared> = OnceLock::new();

/// Makes the shared strings. Called once, at load, after `Api::load`.
pub fn create() {
    SHARED.get_or_init(|| {
        // SAFETY: a string made outside any context (a null context): owned by the module, not freed by
        // auto memory.
        Shared(WORDS.map(|word| unsafe {
            (api().create_string)(std::ptr::null_mut(), word.as_ptr().cast(), word.len())
        }))
    });
}

/// The shared string of `word`, when it is one of [`WORDS`].
pub fn shared(word: &[u8]) -> Option<*mut RString> {
    let table = SHARED.get()?;
    WORDS.iter().position(|w| *w == word).map(|i| table.0[i])
}
