//! The rate-limit response headers of one decision, in every style adapters offer: the IETF drafts'
//! `RateLimit-Policy` and `RateLimit` fields (drafts 6, 7, 8 and 11, the latest) and the legacy
//! `X-RateLimit-*` trio. Seconds are always rounded up, so a client that waits as told is never early.

use std::fmt::Write as _;
use std::str::FromStr;
use std::time::Duration;

use super::structured;
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::excerpt;
use crate::rule::{Rule, Rules};

/// Which draft of draft-ietf-httpapi-ratelimit-headers the standard fields follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HeaderStyle {
    /// `RateLimit-Policy: 10;w=1` with `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`.
    Draft6,
    /// `RateLimit-Policy: 10;w=1` with `RateLimit: limit=10, remaining=9, reset=1`.
    Draft7,
    /// `RateLimit-Policy: "10/second";q=10;w=1` with `RateLimit: "10/second";r=9;t=1`, where `t` is
    /// the time until the policy's quota is whole again.
    Draft8,
    /// The latest draft (11, May 2026): draft 8's fields, where a denial's `t` is the time until quota
    /// is available again (the same moment as `Retry-After`).
    Draft11,
}

impl HeaderStyle {
    /// The style adapters use unless told otherwise: the latest draft.
    pub const LATEST: HeaderStyle = HeaderStyle::Draft11;

    /// The style's name as every binding spells it: `draft-6`, `draft-7`, `draft-8`, `draft-11`.
    pub fn as_str(self) -> &'static str {
        match self {
            HeaderStyle::Draft6 => "draft-6",
            HeaderStyle::Draft7 => "draft-7",
            HeaderStyle::Draft8 => "draft-8",
            HeaderStyle::Draft11 => "draft-11",
        }
    }
}

impl FromStr for HeaderStyle {
    type Err = Error;

    /// `draft-6`, `draft-7`, `draft-8`, `draft-11` or `latest`.
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "draft-6" => Ok(HeaderStyle::Draft6),
            "draft-7" => Ok(HeaderStyle::Draft7),
            "draft-8" => Ok(HeaderStyle::Draft8),
            "draft-11" | "latest" => Ok(HeaderStyle::Draft11),
            _ => Err(Error::invalid_argument(
                "standard_headers",
                format!(
                    "expected draft-6, draft-7, draft-8, draft-11 or latest, got {:?}",
                    excerpt::of(text)
                ),
            )),
        }
    }
}

/// Which rate-limit headers a response carries.
///
/// ```
/// use ratelock::http::{HeaderOptions, HeaderStyle};
/// let options = HeaderOptions::default();
/// assert_eq!(options.standard, Some(HeaderStyle::Draft11));
/// assert!(!options.legacy);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeaderOptions {
    /// The IETF fields in this style, or none.
    pub standard: Option<HeaderStyle>,
    /// `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (Unix seconds).
    pub legacy: bool,
    /// A `pk` parameter (drafts 8 and 11) naming the client's partition by a hash of its key.
    pub partition_key: bool,
}

impl Default for HeaderOptions {
    fn default() -> Self {
        HeaderOptions {
            standard: Some(HeaderStyle::LATEST),
            legacy: false,
            partition_key: false,
        }
    }
}

/// A response header: its name as the drafts spell it, and its value.
pub type Header = (&'static str, String);

/// Whole seconds in `span`, rounded up.
pub(crate) fn ceil_seconds(span: Duration) -> u64 {
    span.as_micros().div_ceil(1_000_000) as u64
}

/// A rule's window in whole seconds (at least 1: the drafts have no sub-second windows).
fn window_seconds(rule: &Rule) -> u64 {
    ceil_seconds(rule.period()).max(1)
}

impl HeaderOptions {
    /// Appends the headers of `decision` over `rules` to `out`. `key` is the request's key (for the
    /// partition key); `now_unix_ms` is the wall clock, read by the caller (for `X-RateLimit-Reset`).
    ///
    /// A degraded decision (the store failed and the failure policy answered) carries no quota
    /// headers: its figures are not the store's.
    pub fn write(
        &self,
        decision: &Decision,
        rules: &Rules,
        key: &[u8],
        now_unix_ms: u64,
        out: &mut Vec<Header>,
    ) {
        let Some(rule) = rules.get(decision.rule_index) else {
            return;
        };
        if decision.degraded {
            return;
        }
        // The limit the store decided on: a key's override (a tenant's plan) replaces the rule's.
        let limit = limit_of(decision, decision.rule_index, rule);
        let remaining = decision.remaining;
        let reset = ceil_seconds(decision.reset_after);
        if let Some(style) = self.standard {
            let pk = (self.partition_key && matches!(style, HeaderStyle::Draft8 | HeaderStyle::Draft11))
                .then(|| structured::partition_key(key));
            let (policy, named) = policies(style, rules, decision, pk.as_deref());
            match style {
                HeaderStyle::Draft6 => {
                    out.push(("RateLimit-Policy", policy));
                    out.push(("RateLimit-Limit", limit.to_string()));
                    out.push(("RateLimit-Remaining", remaining.to_string()));
                    out.push(("RateLimit-Reset", reset.to_string()));
                }
                HeaderStyle::Draft7 => {
                    out.push(("RateLimit-Policy", policy));
                    out.push((
                        "RateLimit",
                        format!("limit={limit}, remaining={remaining}, reset={reset}"),
                    ));
                }
                HeaderStyle::Draft8 | HeaderStyle::Draft11 => {
                    let t = if style == HeaderStyle::Draft11 && !decision.allowed {
                        ceil_seconds(decision.retry_after)
                    } else {
                        reset
                    };
                    // The deciding rule's name, as the policy field already spells it.
                    let mut item = String::with_capacity(named.len() + 32);
                    item.push_str(&policy[named]);
                    let _ = write!(item, ";r={remaining};t={t}");
                    if let Some(pk) = &pk {
                        item.push_str(";pk=");
                        item.push_str(pk);
                    }
                    out.push(("RateLimit-Policy", policy));
                    out.push(("RateLimit", item));
                }
            }
        }
        if self.legacy {
            let reset_at =
                (u128::from(now_unix_ms) * 1000 + decision.reset_after.as_micros()).div_ceil(1_000_000);
            out.push(("X-RateLimit-Limit", limit.to_string()));
            out.push(("X-RateLimit-Remaining", remaining.to_string()));
            out.push(("X-RateLimit-Reset", reset_at.to_string()));
        }
    }
}

/// Rule `index`'s limit as the store decided it (an override's, where the key has one), else as given.
/// A decision told by its deciding rule's figures alone (a binding's, across its FFI) has the deciding
/// rule's limit and no other.
fn limit_of(decision: &Decision, index: usize, rule: &Rule) -> u64 {
    match decision.rule(index) {
        Some(decided) => decided.limit,
        None if index == decision.rule_index && decision.limit > 0 => decision.limit,
        None => rule.limit(),
    }
}

/// `RateLimit-Policy`: every rule checked, in the order given, written in one string; with the place in
/// it of the rule at `named` (its quoted name in drafts 8 and 11, which the `RateLimit` field repeats).
fn policies(
    style: HeaderStyle,
    rules: &Rules,
    decision: &Decision,
    pk: Option<&str>,
) -> (String, std::ops::Range<usize>) {
    let named = decision.rule_index;
    let mut policy = String::with_capacity(48 * rules.len());
    let mut name_at = 0..0;
    for (index, rule) in rules.iter().enumerate() {
        if index > 0 {
            policy.push_str(", ");
        }
        let window = window_seconds(rule);
        let limit = limit_of(decision, index, rule);
        match style {
            HeaderStyle::Draft6 | HeaderStyle::Draft7 => {
                let _ = write!(policy, "{limit};w={window}");
            }
            HeaderStyle::Draft8 | HeaderStyle::Draft11 => {
                let start = policy.len();
                structured::push_string_of(&mut policy, rule);
                if index == named {
                    name_at = start..policy.len();
                }
                let _ = write!(policy, ";q={limit};w={window}");
                if let Some(pk) = pk {
                    policy.push_str(";pk=");
                    policy.push_str(pk);
                }
            }
        }
    }
    (policy, name_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Outcome;

    fn decision(allowed: bool, remaining: u64, reset_ms: u64, retry_ms: u64) -> Decision {
        Decision::from_outcomes(smallvec::smallvec![Outcome {
            allowed,
            limit: 10,
            remaining,
            reset_after_us: reset_ms * 1000,
            retry_after_us: retry_ms * 1000,
        }])
    }

    fn render(options: HeaderOptions, decision: &Decision, rules: &str) -> Vec<Header> {
        let mut out = Vec::new();
        options.write(
            decision,
            &rules.parse().unwrap(),
            b"k",
            1_700_000_000_250,
            &mut out,
        );
        out
    }

    fn style(style: HeaderStyle) -> HeaderOptions {
        HeaderOptions {
            standard: Some(style),
            ..HeaderOptions::default()
        }
    }

    #[test]
    fn every_draft_has_its_own_fields_and_rounds_seconds_up() {
        let allowed = decision(true, 9, 100, 0);
        let draft6 = render(style(HeaderStyle::Draft6), &allowed, "10/second");
        assert_eq!(draft6[0], ("RateLimit-Policy", "10;w=1".into()));
        assert_eq!(draft6[3], ("RateLimit-Reset", "1".into()));
        let draft7 = render(style(HeaderStyle::Draft7), &allowed, "10/second");
        assert_eq!(draft7[1].1, "limit=10, remaining=9, reset=1");
        let draft8 = render(style(HeaderStyle::Draft8), &allowed, "10/second; 100/hour");
        assert_eq!(draft8[0].1, "\"10/second\";q=10;w=1, \"100/hour\";q=100;w=3600");
        assert_eq!(draft8[1].1, "\"10/second\";r=9;t=1");
    }

    #[test]
    fn a_keys_override_is_the_limit_every_field_names() {
        // The store decided on the key's override (1000/minute), not on the rule as given.
        let overridden = Decision::from_outcomes(smallvec::smallvec![Outcome {
            allowed: true,
            limit: 1000,
            remaining: 999,
            reset_after_us: 60_000,
            retry_after_us: 0,
        }]);
        let draft6 = render(style(HeaderStyle::Draft6), &overridden, "100/minute");
        assert_eq!(draft6[0].1, "1000;w=60");
        assert_eq!(draft6[1], ("RateLimit-Limit", "1000".into()));
        let draft7 = render(style(HeaderStyle::Draft7), &overridden, "100/minute");
        assert_eq!(draft7[1].1, "limit=1000, remaining=999, reset=1");
        let draft8 = render(style(HeaderStyle::Draft8), &overridden, "100/minute");
        assert_eq!(draft8[0].1, "\"100/minute\";q=1000;w=60");
        let legacy = HeaderOptions {
            standard: None,
            legacy: true,
            ..HeaderOptions::default()
        };
        let legacy = render(legacy, &overridden, "100/minute");
        assert_eq!(legacy[0], ("X-RateLimit-Limit", "1000".into()));
    }

    #[test]
    fn the_latest_draft_tells_a_denied_client_when_quota_returns() {
        let denied = decision(false, 0, 9_000, 1_200);
        let draft8 = render(style(HeaderStyle::Draft8), &denied, "10/10s");
        assert_eq!(draft8[1].1, "\"10 per 10 seconds\";r=0;t=9");
        let latest = render(HeaderOptions::default(), &denied, "10/10s");
        assert_eq!(latest[1].1, "\"10 per 10 seconds\";r=0;t=2");
    }

    #[test]
    fn legacy_reset_is_the_unix_second_rounded_up_and_partition_keys_are_opt_in() {
        let options = HeaderOptions {
            standard: Some(HeaderStyle::Draft11),
            legacy: true,
            partition_key: true,
        };
        let headers = render(options, &decision(true, 9, 100, 0), "10/second");
        assert!(headers[0]
            .1
            .ends_with(&format!(";pk={}", structured::partition_key(b"k"))));
        assert_eq!(headers[4], ("X-RateLimit-Reset", "1700000001".into()));
    }

    #[test]
    fn degraded_decisions_carry_no_quota_headers() {
        let mut degraded = decision(true, 9, 100, 0);
        degraded.degraded = true;
        assert!(render(HeaderOptions::default(), &degraded, "10/second").is_empty());
    }

    #[test]
    fn style_names_read_back() {
        for style in [
            HeaderStyle::Draft6,
            HeaderStyle::Draft7,
            HeaderStyle::Draft8,
            HeaderStyle::Draft11,
        ] {
            assert_eq!(style.as_str().parse::<HeaderStyle>().unwrap(), style);
        }
        assert_eq!("latest".parse::<HeaderStyle>().unwrap(), HeaderStyle::LATEST);
        assert!("draft-9"
            .parse::<HeaderStyle>()
            .unwrap_err()
            .to_string()
            .contains("standard_headers"));
    }
}
