//! Per-key overrides ("tenant 42 is on the Pro plan"): other limits for a key's rules, kept in the
//! store beside the key's state and read in the same call as the decision, so a plan change applies
//! on the next request in every process and language. Pure: what an override replaces, and the text
//! it is stored as; `lua/limit.lua` and the server module read the same text, and
//! `tests/vectors/overrides.json` proves they agree.
//!
//! An override rule replaces the limit and the burst of each rule of a call with the same window: the
//! same algorithm and period (a calendar rule: the same unit and offset). Rules it does not match
//! decide as given. The rule keeps its key, its `block` and its `shadow`, and so its state, which
//! carries over as the algorithm allows:
//!
//! | algorithm | the state under another limit |
//! |---|---|
//! | gcra, leaky_bucket | kept as time (the theoretical arrival time, the funnel's drain time): the share of the burst in use stays in use, and drains at the new rate |
//! | fixed_window, sliding_window, sliding_log | kept as counts in the same windows: a raised limit has room at once; a lowered one denies until the window has room under it |
//! | token_bucket | not kept: tokens are scaled by the rule's exact refill fraction, which the limit changes; the override counts in a bucket of its own (full at first), and the rule's own bucket is there again once the override is cleared |
//!
//! The override is kept at `<prefix>:{<escaped key>}:override` (the slot of the key's rules): per key,
//! not per prefix of keys, because a call reads only its own slot.

use std::fmt::Write as _;

use crate::rule::{Rule, Rules};

/// The last part of a key's override key, after `<prefix>:{<escaped key>}`.
pub const KEY_SUFFIX: &[u8] = b"override";

/// The rules an override puts in place of a key's own, by window.
///
/// ```
/// use ratelock::algorithm::overrides::Overrides;
/// let pro = Overrides::new("1000/minute; 100000/month calendar".parse()?);
/// assert_eq!(pro.to_text(), "g 1000 60000000 1000,cm 100000 0 100000");
/// let base: ratelock::Rule = "100/minute".parse()?;
/// assert_eq!(pro.applied(&base).map(|rule| rule.limit()), Some(1000));
/// assert!(pro.applied(&"100/hour".parse()?).is_none(), "another window: not replaced");
/// assert_eq!(Overrides::parse(pro.to_text().as_bytes()), Some(pro));
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overrides {
    rules: Vec<Rule>,
}

impl Overrides {
    /// The override of `rules` (their bans and shadow are not part of it: a key's rules keep theirs).
    pub fn new(rules: Rules) -> Self {
        Overrides {
            rules: rules.iter().cloned().collect(),
        }
    }

    /// The override's rules.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The stored text: each rule as `limit.lua` takes it (`code limit period burst`), joined by `,`.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for (i, rule) in self.rules.iter().enumerate() {
            let (code, period) = rule.wire_code_and_period();
            let separator = if i == 0 { "" } else { "," };
            let _ = write!(
                text,
                "{separator}{code} {} {period} {}",
                rule.limit(),
                rule.burst()
            );
        }
        text
    }

    /// Reads the stored text; `None` for anything no ratelock code writes.
    pub fn parse(raw: &[u8]) -> Option<Overrides> {
        let text = std::str::from_utf8(raw).ok()?;
        let rules = text
            .split(',')
            .map(|part| {
                let mut fields = part.split(' ');
                let code = fields.next()?;
                let limit = fields.next()?.parse().ok()?;
                let period = fields.next()?.parse().ok()?;
                let burst = fields.next()?.parse().ok()?;
                if fields.next().is_some() {
                    return None;
                }
                Rule::from_wire(code, limit, period, burst)
            })
            .collect::<Option<Vec<Rule>>>()?;
        (!rules.is_empty() && rules.len() <= crate::MAX_RULES).then_some(Overrides { rules })
    }

    /// What `base` becomes under this override: the first override rule of the same window, with
    /// `base`'s ban and shadow; `None` when none matches (`base` decides as it is).
    pub fn applied(&self, base: &Rule) -> Option<Rule> {
        let window = base.wire_code_and_period();
        let found = self
            .rules
            .iter()
            .find(|rule| rule.wire_code_and_period() == window)?;
        let rule = found.clone().keep_policies(base);
        (rule != *base).then_some(rule)
    }
}

/// `rules` as `overrides` replaces them, each keeping the state of the rule it replaces in the memory
/// store (a token bucket: a bucket of its own, as in Redis), with `cost` checked against each rule as
/// given and as replaced; `None`
/// when the override replaces none of them.
pub fn applied_rules(overrides: &Overrides, rules: &[Rule], cost: u64) -> crate::Result<Option<Rules>> {
    let mut replaced_any = false;
    let mut applied = Vec::with_capacity(rules.len());
    for base in rules {
        // The rule as given bounds a request's cost too (clients check it before any call).
        super::check_cost(base, cost)?;
        match overrides.applied(base) {
            Some(rule) => {
                super::check_cost(&rule, cost)?;
                let stored_as = match token_fields(base, &rule) {
                    Some(_) => format!("{}|{}", base.id(), rule.id()),
                    None => base.id().to_owned(),
                };
                applied.push(rule.stored_as(&stored_as));
                replaced_any = true;
            }
            None => applied.push(base.clone()),
        }
    }
    Ok(replaced_any.then(|| Rules::unchecked(applied)))
}

/// The hash fields a token bucket keeps under an override, `t:<override rule id>` and
/// `l:<override rule id>` (its own bucket: see the module's table); `None` for every other case,
/// where the rule's own fields hold its state.
pub fn token_fields(base: &Rule, applied: &Rule) -> Option<(String, String)> {
    (base.algorithm() == crate::Algorithm::TokenBucket && applied.id() != base.id())
        .then(|| (format!("t:{}", applied.id()), format!("l:{}", applied.id())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_round_trips_and_refuses_what_no_ratelock_code_writes() {
        let pro = Overrides::new("20/second burst 40; 5/day calendar at -05:30".parse().unwrap());
        assert_eq!(pro.to_text(), "g 20 1000000 40,cd 5 -330 5");
        assert_eq!(Overrides::parse(pro.to_text().as_bytes()), Some(pro));
        for bad in [
            "",
            "g 1 1000",
            "g 0 1000 1",
            "x 1 1000 1",
            "g 1 1000 1 9",
            "g 1 1000 1,",
            "cd 5 9999 5",
        ] {
            assert_eq!(Overrides::parse(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn a_rule_is_replaced_by_the_override_of_its_window_keeping_its_ban() {
        let pro = Overrides::new("1000/minute; 50/day calendar".parse().unwrap());
        let strict: Rule = "100/minute block 1 hour".parse().unwrap();
        let applied = pro.applied(&strict).unwrap();
        assert_eq!(applied.to_string(), "1000/minute block 1 hour");
        assert!(pro
            .applied(&"100/minute using token_bucket".parse().unwrap())
            .is_none());
        assert!(pro
            .applied(&"5/day calendar at +01:00".parse().unwrap())
            .is_none());
        assert!(Overrides::new("100/minute".parse().unwrap())
            .applied(&"100/minute".parse().unwrap())
            .is_none());
    }

    #[test]
    fn only_an_overridden_token_bucket_counts_in_fields_of_its_own() {
        let base: Rule = "10/second using token_bucket".parse().unwrap();
        let pro: Rule = "50/second using token_bucket".parse().unwrap();
        assert_eq!(
            token_fields(&base, &pro),
            Some(("t:tb50/1000".into(), "l:tb50/1000".into()))
        );
        assert_eq!(token_fields(&base, &base), None);
        let gcra: Rule = "10/second".parse().unwrap();
        assert_eq!(token_fields(&gcra, &"50/second".parse().unwrap()), None);
    }
}
