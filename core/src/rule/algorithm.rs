//! The rate-limiting algorithms a rule can use, their names in rule text and their codes on the wire.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// Which algorithm decides a rule.
///
/// ```
/// use ratelock::Algorithm;
/// assert_eq!("sliding_log".parse::<Algorithm>().unwrap(), Algorithm::SlidingLog);
/// assert_eq!(Algorithm::default(), Algorithm::Gcra);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Algorithm {
    /// Generic cell rate algorithm: one timestamp per key, exact retry times (the default).
    #[default]
    Gcra,
    /// Token bucket with exact fractional refill.
    TokenBucket,
    /// Leaky bucket as a meter (the "funnel"): capacity = burst, leaks limit per period.
    LeakyBucket,
    /// Fixed window: a counter per window of `floor(now / period)`.
    FixedWindow,
    /// Sliding window counter: the two-counter weighted approximation.
    SlidingWindow,
    /// Sliding log: one entry per admitted unit; exact, memory O(limit).
    SlidingLog,
}

impl Algorithm {
    /// All algorithms, in a fixed order.
    pub const ALL: [Algorithm; 6] = [
        Algorithm::Gcra,
        Algorithm::TokenBucket,
        Algorithm::LeakyBucket,
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::SlidingLog,
    ];

    /// The name used in rule text (`using token_bucket`).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Gcra => "gcra",
            Algorithm::TokenBucket => "token_bucket",
            Algorithm::LeakyBucket => "leaky_bucket",
            Algorithm::FixedWindow => "fixed_window",
            Algorithm::SlidingWindow => "sliding_window",
            Algorithm::SlidingLog => "sliding_log",
        }
    }

    /// Short code used in storage keys and passed to `limit.lua` (see its header).
    ///
    /// ```
    /// assert_eq!(ratelock::Algorithm::TokenBucket.code(), "tb");
    /// ```
    pub fn code(self) -> &'static str {
        match self {
            Algorithm::Gcra => "g",
            Algorithm::TokenBucket => "tb",
            Algorithm::LeakyBucket => "lb",
            Algorithm::FixedWindow => "fw",
            Algorithm::SlidingWindow => "sw",
            Algorithm::SlidingLog => "sl",
        }
    }

    /// Whether the rule's `burst` means anything for this algorithm.
    pub fn uses_burst(self) -> bool {
        matches!(
            self,
            Algorithm::Gcra | Algorithm::TokenBucket | Algorithm::LeakyBucket
        )
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let normalized = text.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        Algorithm::ALL
            .into_iter()
            .find(|alg| alg.name() == normalized || alg.name().replace('_', "") == normalized)
            .ok_or_else(|| {
                Error::invalid_rule(
                    text,
                    text,
                    "unknown algorithm (expected gcra, token_bucket, leaky_bucket, fixed_window, \
                     sliding_window or sliding_log)",
                )
            })
    }
}
