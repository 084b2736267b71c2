//! Decimal digits of an integer on the stack: what the module writes into Redis and replicates, with no
//! heap allocation per number.

/// The decimal digits of a `u64` (at most 20), held inline.
#[derive(Clone, Copy)]
pub struct Digits {
    buffer: [u8; 20],
    start: usize,
}

impl Digits {
    /// The digits of `n`, as `n.to_string()` writes them.
    ///
    /// ```ignore
    /// assert_eq!(Digits::of(1700).as_bytes(), b"1700");
    /// ```
    pub fn of(mut n: u64) -> Digits {
        let mut buffer = [0u8; 20];
        let mut start = buffer.len();
        loop {
            start -= 1;
            buffer[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Digits { buffer, start }
    }

    /// The digits as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buffer[self.start..]
    }
}

#[cfg(test)]
mod tests {
    use super::Digits;

    #[test]
    fn digits_match_to_string() {
        for n in [0, 1, 9, 10, 99, 100, 1_700_000_000_000_000, u64::MAX] {
            assert_eq!(Digits::of(n).as_bytes(), n.to_string().as_bytes());
        }
    }
}
