//! The few Structured Field values (RFC 9651) the rate-limit headers need, serialized canonically:
//! strings, byte sequences and the partition key, so every adapter writes the same bytes.

use sha2::{Digest, Sha256};

/// A structured-field String, appended to `out`: `"` + the text with `"` and `\` escaped + `"`. The
/// text must be printable ASCII (policy names come from rule texts, which are).
fn push_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(if (' '..='~').contains(&c) { c } else { '?' });
    }
    out.push('"');
}

/// [`push_string`] of `value`'s text, without a string of its own in between: the text is
/// written in place and escaped only when it has to be (a rule's text never has to).
pub(crate) fn push_string_of(out: &mut String, value: &impl std::fmt::Display) {
    use std::fmt::Write as _;
    let start = out.len();
    let _ = write!(out, "\"{value}\"");
    let text = &out[start + 1..out.len() - 1];
    if text
        .bytes()
        .any(|b| matches!(b, b'"' | b'\\') || !(b' '..=b'~').contains(&b))
    {
        let text = text.to_owned();
        out.truncate(start);
        push_string(out, &text);
    }
}

/// A structured-field Byte Sequence: `:` + base64 (with padding) + `:`.
pub(crate) fn byte_sequence(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4 + 2);
    out.push(':');
    for chunk in bytes.chunks(3) {
        let group = chunk
            .iter()
            .enumerate()
            .fold(0u32, |group, (i, &byte)| group | u32::from(byte) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(group >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out.push(':');
    out
}

/// The partition key of a request key: the first 12 bytes of its SHA-256, so a client's key (often its
/// address) is never sent back in clear, yet every response to one client names the same partition.
pub(crate) fn partition_key(key: &[u8]) -> String {
    byte_sequence(&Sha256::digest(key)[..12])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &str) -> String {
        let mut out = String::new();
        push_string(&mut out, text);
        out
    }

    #[test]
    fn strings_escape_quotes_and_backslashes() {
        assert_eq!(string(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(string("10/second"), "\"10/second\"");
        assert_eq!(string("é"), "\"?\"");
    }

    #[test]
    fn text_written_in_place_is_escaped_as_a_string_is() {
        for text in ["10/second", r#"a"b\c"#, "é", ""] {
            let mut out = String::from("x=");
            push_string_of(&mut out, &text);
            assert_eq!(out, format!("x={}", string(text)), "{text:?}");
        }
    }

    #[test]
    fn byte_sequences_are_padded_base64() {
        assert_eq!(byte_sequence(b""), "::");
        assert_eq!(byte_sequence(b"f"), ":Zg==:");
        assert_eq!(byte_sequence(b"fo"), ":Zm8=:");
        assert_eq!(byte_sequence(b"foo"), ":Zm9v:");
        assert_eq!(byte_sequence(b"foobar"), ":Zm9vYmFy:");
    }

    #[test]
    fn partition_keys_are_sixteen_characters_of_base64() {
        let pk = partition_key(b"203.0.113.7");
        assert_eq!(pk.len(), 18);
        assert_eq!(pk, partition_key(b"203.0.113.7"));
        assert_ne!(pk, partition_key(b"203.0.113.8"));
    }
}
