//! Who holds a grant: each handle's random owner token (one per process: [`ProcessOwner`]), and the
//! retry jitter seeded from it.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::error::{Error, Result};

/// 128 bits from the operating system's CSPRNG, as hex.
pub(crate) fn owner_token() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::StoreUnavailable(format!("no randomness for an owner token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A handle's owner token, drawn again in each process: a handle made before a fork is another owner
/// in the child (gunicorn `--preload`, Celery prefork, `multiprocessing`). Inherited as it was, the
/// parent's token let a child re-enter the parent's re-entrant hold, and gave every process the same
/// grant ids (`<owner>:<n>`, the counter forked with it): a permit one worker held was renewed, not
/// refused, for the next, so two permits admitted any number of workers.
#[derive(Debug)]
pub(crate) struct ProcessOwner {
    /// The process generation the token was drawn in, and the token.
    drawn: Mutex<(u64, Arc<str>)>,
}

impl ProcessOwner {
    /// A fresh token for this process.
    pub(crate) fn new() -> Result<Self> {
        Ok(ProcessOwner {
            drawn: Mutex::new((crate::process::generation(), Arc::from(owner_token()?))),
        })
    }

    /// This process's token: the one drawn here, or a fresh one on the first ask after a fork (from
    /// the OS's randomness; without it, the parent's token mixed with this process's id and fork
    /// count, distinct for every child all the same).
    pub(crate) fn token(&self) -> Arc<str> {
        let generation = crate::process::generation();
        let mut drawn = self.drawn.lock();
        if drawn.0 != generation {
            let fresh = owner_token().unwrap_or_else(|_| derived_token(&drawn.1, generation));
            *drawn = (generation, Arc::from(fresh));
        }
        drawn.1.clone()
    }
}

/// 128 bits as hex from `parent`, this process's id and `generation`: a child's token where the OS
/// gives no randomness (owner tokens must differ, not be secret).
fn derived_token(parent: &str, generation: u64) -> String {
    use std::hash::{Hash, Hasher};
    let half = |salt: u64| {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (parent, std::process::id(), generation, salt).hash(&mut hasher);
        hasher.finish()
    };
    format!("{:016x}{:016x}", half(1), half(2))
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
