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
    /// Checks that `rules` holds from 1 to [`MAX_RULES`](super::MAX_RULES) rules, none twice (in time
    /// linear in their number).
    pub fn new(rules: Vec<Rule>) -> Result<Self> {
        if rules.is_empty() {
            return Err(Error::invalid_rule("", "", "at least one rule is needed"));
        }
        let whole = |rules: &[Rule]| {
            rules
                .iter()
                .take(4)
                .map(Rule::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        };
        if rules.len() > super::MAX_RULES {
            return Err(super::too_many(&whole(&rules), rules.len()));
        }
        let mut seen = std::collections::HashSet::with_capacity(rules.len());
        for rule in &rules {
            if !seen.insert(rule.id()) {
                return Err(Error::invalid_rule(
                    &whole(&rules),
                    &rule.to_string(),
                    "the same rule appears twice",
                ));
            }
        }
        Ok(Rules(rules))
    }

    /// Rules already checked elsewhere (an override's replacements of checked rules, which may repeat
    /// a rule where two were replaced by one).
    pub(crate) fn unchecked(rules: Vec<Rule>) -> Self {
        Rules(rules)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_RULES;

    fn text(count: usize) -> String {
        (1..=count)
            .map(|i| format!("{i}/hour"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    #[test]
    fn at_most_max_rules_are_checked_together_and_the_error_says_so() {
        assert_eq!(text(MAX_RULES).parse::<Rules>().unwrap().len(), MAX_RULES);
        for count in [MAX_RULES + 1, 200_000] {
            let error = text(count).parse::<Rules>().unwrap_err();
            assert!(error.is_invalid_rule(), "{error}");
            assert!(
                error.to_string().contains(&format!("{count} rules in one limit")),
                "{error}"
            );
            assert!(
                error.to_string().len() < 400,
                "the message quotes an excerpt, not the whole text"
            );
        }
        let built: Vec<Rule> = (1..=MAX_RULES as u64 + 1)
            .map(|limit| Rule::new(limit, std::time::Duration::from_secs(3600)).unwrap())
            .collect();
        assert!(Rules::new(built).unwrap_err().to_string().contains("at most 100"));
    }

    #[test]
    fn a_rule_twice_is_named() {
        let error = "5/second; 10/minute; 5/second".parse::<Rules>().unwrap_err();
        assert!(
            error.to_string().contains("the same rule appears twice"),
            "{error}"
        );
    }
}
