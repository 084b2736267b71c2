//! Property tests for rules: every valid rule prints as text that parses back to the same rule,
//! several rules round-trip together (bans, shadow and calendar windows included), and no input text makes the parser panic.

use std::time::Duration;

use proptest::prelude::*;
use ratelock::{Algorithm, Calendar, CalendarUnit, Rule, Rules, MAX_OFFSET_MINUTES};

fn any_rule() -> impl Strategy<Value = Rule> {
    let algorithm = prop::sample::select(Algorithm::ALL.to_vec());
    let period_ms = prop_oneof![
        1u64..=1_000,
        (1u64..=120).prop_map(|n| n * 1_000),
        (1u64..=90).prop_map(|n| n * 60_000),
        (1u64..=48).prop_map(|n| n * 3_600_000),
        (1u64..=366).prop_map(|n| n * 86_400_000),
        1u64..=31_622_400_000,
    ];
    let block_ms = prop_oneof![
        Just(None),
        (1u64..=1_000).prop_map(Some),
        (1u64..=90).prop_map(|n| Some(n * 60_000)),
        (1u64..=31_622_400_000).prop_map(Some),
    ];
    let unit = prop::sample::select(vec![
        CalendarUnit::Hour,
        CalendarUnit::Day,
        CalendarUnit::Week,
        CalendarUnit::Month,
        CalendarUnit::Year,
    ]);
    let calendar = prop_oneof![
        3 => Just(None),
        1 => (unit, -MAX_OFFSET_MINUTES..=MAX_OFFSET_MINUTES).prop_map(Some),
    ];
    (
        algorithm,
        1u64..=1_000_000,
        period_ms,
        1u64..=1_000_000,
        block_ms,
        any::<bool>(),
        calendar,
    )
        .prop_filter_map(
            "valid rules only",
            |(algorithm, limit, period_ms, burst, block_ms, shadow, calendar)| {
                let burst = if algorithm.uses_burst() { burst } else { limit };
                let rule = match calendar {
                    Some((unit, offset)) => {
                        Rule::on_calendar(limit, Calendar::new(unit).at_offset(offset).ok()?).ok()?
                    }
                    None => Rule::build(algorithm, limit, Duration::from_millis(period_ms), burst).ok()?,
                };
                match (block_ms, shadow) {
                    (Some(ms), _) => rule.with_block(Duration::from_millis(ms)).ok(),
                    (None, true) => rule.with_shadow().ok(),
                    (None, false) => Some(rule),
                }
            },
        )
}

proptest! {
    #[test]
    fn display_parses_back_to_the_same_rule(rule in any_rule()) {
        let text = rule.to_string();
        let parsed: Rule = text.parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(parsed.algorithm(), rule.algorithm());
        prop_assert_eq!(parsed.limit(), rule.limit());
        prop_assert_eq!(parsed.period(), rule.period());
        prop_assert_eq!(parsed.burst(), rule.burst());
        prop_assert_eq!(parsed.id(), rule.id());
        prop_assert_eq!(parsed.block(), rule.block());
        prop_assert_eq!(parsed.is_shadow(), rule.is_shadow());
        prop_assert_eq!(parsed.calendar(), rule.calendar());
        prop_assert_eq!(parsed, rule);
    }

    #[test]
    fn several_rules_round_trip_together(rules in prop::collection::vec(any_rule(), 1..5)) {
        let mut unique: Vec<Rule> = Vec::new();
        for rule in rules {
            if !unique.iter().any(|kept| kept.id() == rule.id()) {
                unique.push(rule);
            }
        }
        let rules = Rules::new(unique).unwrap();
        let parsed: Rules = rules.to_string().parse().unwrap();
        prop_assert_eq!(parsed, rules);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,40}") {
        let _ = text.parse::<Rules>();
    }

    #[test]
    fn rule_like_text_never_panics(text in "[0-9]{0,25}[ /]{0,2}(per )?[0-9]{0,5} ?[a-z_]{0,14}( burst [0-9]{0,22})?( using [a-z_]{0,15})?( block [0-9]{0,20} ?[a-z]{0,8})?( shadow)?( calendar( at [+-]?[0-9]{0,3}:?[0-9]{0,3})?)?[;,]?") {
        if let Err(err) = text.parse::<Rules>() {
            prop_assert!(err.is_invalid_rule(), "{text:?}: {err:?}");
        }
    }
}
