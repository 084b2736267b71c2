//! Who holds a grant: each handle's random owner token, and the retry jitter seeded from it.

use std::time::Duration;

use crate::error::{Error, Result};

/// 128 bits from the operating system's CSPRNG, as hex.
pub(crate) fn owner_token() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::StoreUnavailable(format!("no randomness for an owner token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A small xorshift generator for retry jitter (not for secrets), seeded from the owner token.
pub(crate) struct Jitter(u64);

impl Jitter {
    pub(crate) fn new(owner: &str) -> Self {
        let seed = u64::from_str_radix(&owner[..16], 16).unwrap_or(0x9e37_79b9_7f4a_7c15);
        Jitter(seed | 1)
    }

    pub(crate) fn up_to(&mut self, max: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let cap = max.min(Duration::from_millis(20)).as_micros() as u64;
        Duration::from_micros(if cap == 0 { 0 } else { self.0 % cap })
    }
}
