//! Bounded quotes of user input for error messages: a rule text or URL of any size is echoed as at most
//! its first [`EXCERPT_CHARS`] characters and its length, so an error never grows with its input.

use std::borrow::Cow;

/// How many characters of a long input an error message quotes.
pub const EXCERPT_CHARS: usize = 64;

/// `text` itself when it has at most [`EXCERPT_CHARS`] characters; else its first [`EXCERPT_CHARS`]
/// characters, an ellipsis and its length in bytes.
///
/// ```
/// use ratelock::excerpt;
/// assert_eq!(excerpt::of("10/fortnight"), "10/fortnight");
/// let long = "9".repeat(1_000_000);
/// assert_eq!(excerpt::of(&long), format!("{}… (1000000 bytes)", "9".repeat(64)));
/// ```
pub fn of(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}… ({} bytes)", &text[..end], text.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_quoted_whole_and_long_text_is_cut_on_a_character() {
        assert_eq!(of(""), "");
        let exactly = "é".repeat(EXCERPT_CHARS);
        assert_eq!(of(&exactly), exactly);
        let longer = "é".repeat(EXCERPT_CHARS + 1);
        assert_eq!(of(&longer), format!("{exactly}… (130 bytes)"));
    }
}
