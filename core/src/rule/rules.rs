//! `Rules`: the non-empty, duplicate-free set of rules checked together, all or nothing, for one key.

use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use super::{parse, Algorithm, Rule};
use crate::error::{Error, Result};

/// One or more rules checked together in one round trip: if any denies, none is spent.
///
/// ```
/// use ratelock::{Algorithm, Rules};
/// let rules: Rules = "10/second; 1000/hour using fixed_window".parse()?;
/// assert_eq!(rules.len(), 2);
/// assert_eq!(rules[1].algorithm(), Algorithm::FixedWindow);
/// assert_eq!(rules.to_string(), "10/second; 1000/hour using fixed_window");
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rules(Vec<Rule>);

impl Rules {
    /// Checks that `rules` is non-empty and holds no rule twice.
    pub fn new(rules: Vec<Rule>) -> Result<Self> {
        if rules.is_empty() {
            return Err(Error::invalid_rule("", "", "at least one rule is needed"));
        }
        for (i, rule) in rules.iter().enumerate() {
            if rules[..i].contains(rule) {
                let text = rules.iter().map(Rule::to_string).collect::<Vec<_>>().join("; ");
                return Err(Error::invalid_rule(
                    &text,
                    &rule.to_string(),
                    "the same rule appears twice",
                ));
            }
        }
        Ok(Rules(rules))
    }

    /// Parses rule text; rules without `using` take `default`.
    ///
    /// ```
    /// use ratelock::{Algorithm, Rules};
    /// let rules = Rules::parse_with_default("5 per 2 minutes", Algorithm::TokenBucket)?;
    /// assert_eq!(rules[0].algorithm(), Algorithm::TokenBucket);
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn parse_with_default(text: &str, default: Algorithm) -> Result<Self> {
        Self::new(parse::parse_rules(text, default)?)
    }

    /// The rules as a slice.
    pub fn as_slice(&self) -> &[Rule] {
        &self.0
    }
}

impl Deref for Rules {
    type Target = [Rule];

    fn deref(&self) -> &[Rule] {
        &self.0
    }
}

impl From<Rule> for Rules {
    fn from(rule: Rule) -> Self {
        Rules(vec![rule])
    }
}

impl FromStr for Rules {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        Self::parse_with_default(text, Algorithm::Gcra)
    }
}

impl fmt::Display for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, rule) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{rule}")?;
        }
        Ok(())
    }
}
