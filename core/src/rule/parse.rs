//! The rule text parser: `"10/second"`, `"10 per 2 minutes"`, `"100/minute burst 20 using token_bucket"`,
//! `"500/day calendar at +02:00"`, several rules joined by `;` or `,`. Every error names the part of the
//! text that was wrong.

use std::time::Duration;

use super::{Algorithm, Calendar, CalendarUnit, Rule};
use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
enum Token<'a> {
    Number(u64, &'a str),
    Word(String, &'a str),
    /// An offset from UTC (`+02:00`, `-5`), in minutes.
    Offset(i32, &'a str),
    Slash,
}

/// Parses one or more rules separated by `;` or `,`.
pub(super) fn parse_rules(text: &str, default: Algorithm) -> Result<Vec<Rule>> {
    if text.trim().is_empty() {
        return Err(Error::invalid_rule(text, text, "empty rule text"));
    }
    let count = text.split([';', ',']).count();
    if count > super::MAX_RULES {
        return Err(super::too_many(text, count));
    }
    text.split([';', ','])
        .map(|segment| parse_rule(text, segment, default))
        .collect()
}

fn parse_rule(text: &str, segment: &str, default: Algorithm) -> Result<Rule> {
    let fail = |part: &str, reason: &str| Error::invalid_rule(text, part, reason);
    if segment.trim().is_empty() {
        return Err(fail(segment, "empty rule between separators"));
    }
    let tokens = tokenize(text, segment)?;
    let mut tokens = tokens.into_iter().peekable();

    let limit = match tokens.next() {
        Some(Token::Number(n, _)) => n,
        Some(other) => {
            return Err(fail(
                token_text(&other),
                "a rule starts with a number (the limit)",
            ))
        }
        None => return Err(fail(segment, "empty rule")),
    };
    match tokens.next() {
        Some(Token::Slash) => {}
        Some(Token::Word(word, _)) if word == "per" => {}
        Some(other) => return Err(fail(token_text(&other), "expected '/' or 'per' after the limit")),
        None => return Err(fail(segment.trim(), "missing period (e.g. '/second')")),
    }
    let count = match tokens.peek() {
        Some(Token::Number(n, raw)) => {
            if *n == 0 {
                return Err(fail(raw, "the period count must be at least 1"));
            }
            let n = *n;
            tokens.next();
            n
        }
        _ => 1,
    };
    let unit = tokens.next();
    let unit_word = match &unit {
        Some(Token::Word(word, raw)) => Some((calendar_unit(word), *raw)),
        _ => None,
    };
    // A month or a year has no fixed length: only its calendar form means something.
    let unit_ms = match unit_word {
        Some((Some(unit @ (CalendarUnit::Month | CalendarUnit::Year)), _)) => unit.longest_us() / 1000,
        _ => unit_of(&fail, segment, unit)?,
    };
    let period_ms = count
        .checked_mul(unit_ms)
        .ok_or_else(|| fail(segment.trim(), "period is too long"))?;

    let mut burst = None;
    let mut algorithm = None;
    let mut block = None;
    let mut shadow = None;
    let mut calendar: Option<(&str, i32)> = None;
    while let Some(token) = tokens.next() {
        match token {
            Token::Word(word, raw) if word == "calendar" => {
                if calendar.is_some() {
                    return Err(fail(raw, "calendar given twice"));
                }
                let mut offset = 0;
                if matches!(tokens.peek(), Some(Token::Word(word, _)) if word == "at") {
                    tokens.next();
                    offset = match tokens.next() {
                        Some(Token::Offset(minutes, _)) => minutes,
                        Some(Token::Word(word, _)) if word == "utc" || word == "z" => 0,
                        _ => {
                            return Err(fail(
                                raw,
                                "'calendar at' must be followed by an offset from UTC (e.g. '+02:00')",
                            ))
                        }
                    };
                }
                calendar = Some((raw, offset));
            }
            Token::Word(word, raw) if word == "shadow" => {
                if shadow.is_some() {
                    return Err(fail(raw, "shadow given twice"));
                }
                shadow = Some(raw);
            }
            Token::Word(word, raw) if word == "block" => {
                if block.is_some() {
                    return Err(fail(raw, "block given twice"));
                }
                let count = match tokens.peek() {
                    Some(Token::Number(n, _)) => {
                        let n = *n;
                        tokens.next();
                        n
                    }
                    _ => 1,
                };
                let unit_ms = match tokens.next() {
                    Some(Token::Word(word, unit)) => unit_millis(&word).ok_or_else(|| {
                        fail(unit, "unknown unit (expected ms, second, minute, hour or day)")
                    })?,
                    _ => {
                        return Err(fail(
                            raw,
                            "'block' must be followed by a duration (e.g. 'block 15 minutes')",
                        ))
                    }
                };
                let ms = count
                    .checked_mul(unit_ms)
                    .filter(|&ms| ms >= 1)
                    .ok_or_else(|| fail(raw, "block must be from 1 ms to 366 days"))?;
                block = Some((raw, ms));
            }
            Token::Word(word, raw) if word == "burst" => {
                if burst.is_some() {
                    return Err(fail(raw, "burst given twice"));
                }
                match tokens.next() {
                    Some(Token::Number(n, _)) => burst = Some(n),
                    _ => return Err(fail(raw, "'burst' must be followed by a number")),
                }
            }
            Token::Word(word, raw) if word == "using" => {
                if algorithm.is_some() {
                    return Err(fail(raw, "algorithm given twice"));
                }
                match tokens.next() {
                    Some(Token::Word(_, name)) => {
                        let alg = name.parse::<Algorithm>().map_err(|_| {
                            fail(
                                name,
                                "unknown algorithm (expected gcra, token_bucket, leaky_bucket, \
                                 fixed_window, sliding_window or sliding_log)",
                            )
                        })?;
                        algorithm = Some(alg);
                    }
                    _ => return Err(fail(raw, "'using' must be followed by an algorithm name")),
                }
            }
            other => {
                return Err(fail(
                    token_text(&other),
                    "unexpected text (expected 'burst N', 'using ALGORITHM', 'block DURATION', 'calendar' \
                     or 'shadow')",
                ))
            }
        }
    }

    if let Some((raw, offset)) = calendar {
        return calendar_rule(
            text,
            segment,
            limit,
            (count, unit_word),
            (raw, offset),
            algorithm,
            burst,
        )
        .and_then(|rule| with_policies(rule, block, shadow, &fail));
    }
    if let Some((Some(unit @ (CalendarUnit::Month | CalendarUnit::Year)), raw)) = unit_word {
        return Err(fail(
            raw,
            &format!(
                "a {} has no fixed length: add 'calendar' for calendar {}s (e.g. '10000/{} calendar'), \
                 or count days",
                unit.name(),
                unit.name(),
                unit.name()
            ),
        ));
    }
    let algorithm = algorithm.unwrap_or(default);
    if burst.is_some() && !algorithm.uses_burst() {
        return Err(fail(
            segment.trim(),
            "burst applies only to gcra, token_bucket and leaky_bucket",
        ));
    }
    let period = Duration::from_millis(period_ms);
    let rule = Rule::build(algorithm, limit, period, burst.unwrap_or(limit)).map_err(|err| match err {
        Error::InvalidRule { part, reason, .. } => {
            let part = if segment.contains(part.as_str()) {
                part
            } else {
                segment.trim().to_owned()
            };
            Error::invalid_rule(text, &part, reason)
        }
        other => other,
    })?;
    with_policies(rule, block, shadow, &fail)
}

/// `rule` with the ban and shadow words the text gave it.
fn with_policies(
    rule: Rule,
    block: Option<(&str, u64)>,
    shadow: Option<&str>,
    fail: &impl Fn(&str, &str) -> Error,
) -> Result<Rule> {
    let rule = match block {
        Some((raw, ms)) => rule
            .with_block(Duration::from_millis(ms))
            .map_err(|_| fail(raw, "block must be from 1 ms to 366 days"))?,
        None => rule,
    };
    match shadow {
        Some(raw) => rule
            .with_shadow()
            .map_err(|_| fail(raw, "a shadow rule cannot block (the ban would enforce it)")),
        None => Ok(rule),
    }
}

/// A calendar rule: `count` must be 1 and the unit one of [`CalendarUnit`]'s, counted with fixed_window.
fn calendar_rule(
    text: &str,
    segment: &str,
    limit: u64,
    (count, unit): (u64, Option<(Option<CalendarUnit>, &str)>),
    (raw, offset): (&str, i32),
    algorithm: Option<Algorithm>,
    burst: Option<u64>,
) -> Result<Rule> {
    let fail = |part: &str, reason: &str| Error::invalid_rule(text, part, reason);
    let Some((Some(unit), unit_raw)) = unit else {
        let part = unit.map_or(segment.trim(), |(_, raw)| raw);
        return Err(fail(
            part,
            "a calendar window is one hour, day, week, month or year",
        ));
    };
    if count != 1 {
        return Err(fail(
            unit_raw,
            "a calendar window is one unit long (e.g. '500/day calendar', not 'per 2 days')",
        ));
    }
    if let Some(other) = algorithm.filter(|&algorithm| algorithm != Algorithm::FixedWindow) {
        return Err(super::calendar_is_fixed_window(text, other.name()));
    }
    if burst.is_some() {
        return Err(fail(
            segment.trim(),
            "burst applies only to gcra, token_bucket and leaky_bucket",
        ));
    }
    let calendar = Calendar::new(unit)
        .at_offset(offset)
        .map_err(|_| fail(raw, "the offset from UTC must be within ±23:59"))?;
    Rule::on_calendar(limit, calendar).map_err(|err| match err {
        Error::InvalidRule { reason, .. } => fail(segment.trim(), &reason),
        other => other,
    })
}

/// The unit after a count: its length in ms, or the error naming what stood there instead.
fn unit_of(fail: &impl Fn(&str, &str) -> Error, segment: &str, token: Option<Token<'_>>) -> Result<u64> {
    match token {
        Some(Token::Word(word, raw)) => unit_millis(&word).ok_or_else(|| {
            fail(
                raw,
                "unknown unit (expected ms, second, minute, hour, day, week, or month or year with 'calendar')",
            )
        }),
        Some(other) => Err(fail(
            token_text(&other),
            "expected a unit (ms, second, minute, hour, day)",
        )),
        None => Err(fail(
            segment.trim(),
            "missing unit (ms, second, minute, hour or day)",
        )),
    }
}

/// The calendar unit a unit word names, if any (`month` and `year` have no other meaning).
fn calendar_unit(word: &str) -> Option<CalendarUnit> {
    Some(match word {
        "h" | "hr" | "hrs" | "hour" | "hours" => CalendarUnit::Hour,
        "d" | "day" | "days" => CalendarUnit::Day,
        "w" | "wk" | "wks" | "week" | "weeks" => CalendarUnit::Week,
        "mo" | "mon" | "mons" | "month" | "months" => CalendarUnit::Month,
        "y" | "yr" | "yrs" | "year" | "years" => CalendarUnit::Year,
        _ => return None,
    })
}

/// `+HH:MM`, `-HH`, `+HHMM` at `segment[start..]` (its sign included): minutes east of UTC and the
/// bytes read, or `None` when it is not an offset.
fn offset_at(segment: &str, start: usize) -> Option<(i32, usize)> {
    let bytes = segment.as_bytes();
    let sign = if bytes[start] == b'-' { -1 } else { 1 };
    let mut i = start + 1;
    let digits = |from: usize| bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let hours_len = digits(i);
    let (hours, minutes) = match hours_len {
        1 | 2 => {
            let hours: i32 = segment[i..i + hours_len].parse().ok()?;
            i += hours_len;
            if bytes.get(i) == Some(&b':') {
                if digits(i + 1) != 2 {
                    return None;
                }
                let minutes: i32 = segment[i + 1..i + 3].parse().ok()?;
                i += 3;
                (hours, minutes)
            } else {
                (hours, 0)
            }
        }
        4 => {
            let hours: i32 = segment[i..i + 2].parse().ok()?;
            let minutes: i32 = segment[i + 2..i + 4].parse().ok()?;
            i += 4;
            (hours, minutes)
        }
        _ => return None,
    };
    (minutes < 60).then_some((sign * (hours * 60 + minutes), i - start))
}

fn tokenize<'a>(text: &str, segment: &'a str) -> Result<Vec<Token<'a>>> {
    let mut tokens = Vec::new();
    let bytes = segment.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'/' {
            tokens.push(Token::Slash);
            i += 1;
        } else if (c == b'+' || c == b'-') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
            let (minutes, len) = offset_at(segment, start).ok_or_else(|| {
                let end = (start + 1..=segment.len())
                    .find(|&end| end == segment.len() || bytes[end].is_ascii_whitespace())
                    .unwrap_or(segment.len());
                Error::invalid_rule(
                    text,
                    &segment[start..end],
                    "an offset from UTC is written +HH:MM or -HH:MM",
                )
            })?;
            i += len;
            tokens.push(Token::Offset(minutes, &segment[start..i]));
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
                i += 1;
            }
            let raw = &segment[start..i];
            let value = raw
                .replace('_', "")
                .parse::<u64>()
                .map_err(|_| Error::invalid_rule(text, raw, "number is too large"))?;
            tokens.push(Token::Number(value, raw));
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'-' {
            while i < bytes.len() && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_' || bytes[i] == b'-')
            {
                i += 1;
            }
            let raw = &segment[start..i];
            tokens.push(Token::Word(raw.to_ascii_lowercase(), raw));
        } else {
            let end = segment[start..]
                .char_indices()
                .nth(1)
                .map_or(segment.len(), |(offset, _)| start + offset);
            return Err(Error::invalid_rule(
                text,
                &segment[start..end],
                "unexpected character",
            ));
        }
    }
    Ok(tokens)
}

fn token_text<'a>(token: &Token<'a>) -> &'a str {
    match token {
        Token::Number(_, raw) | Token::Word(_, raw) | Token::Offset(_, raw) => raw,
        Token::Slash => "/",
    }
}

fn unit_millis(word: &str) -> Option<u64> {
    Some(match word {
        "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        "w" | "wk" | "wks" | "week" | "weeks" => 7 * 86_400_000,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rules;
    use crate::{Calendar, CalendarUnit};

    fn rule(text: &str) -> Rule {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn error_part(text: &str) -> String {
        match text.parse::<Rules>() {
            Err(Error::InvalidRule { part, .. }) => part,
            other => panic!("{text}: expected an invalid-rule error, got {other:?}"),
        }
    }

    #[test]
    fn accepts_the_documented_forms() {
        assert_eq!(rule("10/second"), rule("10/s"));
        assert_eq!(rule("10 per second"), rule("10/sec"));
        assert_eq!(rule("10 per 2 minutes").period(), Duration::from_secs(120));
        assert_eq!(rule("10/2minutes").period(), Duration::from_secs(120));
        assert_eq!(rule("100/minute burst 20").burst(), 20);
        assert_eq!(
            rule("100/minute using sliding_log").algorithm(),
            Algorithm::SlidingLog
        );
        assert_eq!(
            rule("100 PER Minute USING Token-Bucket").algorithm(),
            Algorithm::TokenBucket
        );
        assert_eq!(rule("5/250ms").period(), Duration::from_millis(250));
        assert_eq!(rule("1/d").period(), Duration::from_secs(86_400));
        assert_eq!(rule("1_000/h").limit(), 1000);
        let rules: Rules = "10/second; 1000/hour using fixed_window, 5 per 3 days"
            .parse()
            .unwrap();
        assert_eq!(rules.len(), 3);
        assert_eq!(
            rule("5/minute block 15 minutes").block(),
            Some(Duration::from_secs(900))
        );
        assert_eq!(rule("5/m block 90s").block(), Some(Duration::from_secs(90)));
        assert_eq!(rule("5/m block hour").block(), Some(Duration::from_secs(3600)));
        assert_eq!(
            rule("5/m using fixed_window block 2 days").to_string(),
            "5/minute using fixed_window block 2 days"
        );
        assert_eq!(rule("5/m").block(), None);
        assert!(rule("5/m shadow").is_shadow());
        assert_eq!(
            rule("5/m SHADOW using fixed_window").to_string(),
            "5/minute using fixed_window shadow"
        );
        assert!(!rule("5/m").is_shadow());
    }

    #[test]
    fn errors_name_the_bad_part() {
        assert_eq!(error_part("10/fortnight"), "fortnight");
        assert_eq!(error_part("ten/second"), "ten");
        assert_eq!(error_part("10/second; 5 per 0 minutes"), "0");
        assert_eq!(error_part("0/second"), "0");
        assert_eq!(error_part("10/s using magic"), "magic");
        assert_eq!(error_part("10/s burst"), "burst");
        assert_eq!(error_part("10/s; "), " ");
        assert_eq!(error_part(""), "");
        assert_eq!(error_part("99999999999999999999999/s"), "99999999999999999999999");
        assert_eq!(error_part("10/s!"), "!");
        assert_eq!(error_part("10 second"), "second");
        assert_eq!(
            error_part("10/s burst 5 using fixed_window"),
            "10/s burst 5 using fixed_window"
        );
        assert_eq!(error_part("20000/s using sliding_log"), "20000");
        assert_eq!(error_part("10/s; 10/second"), "10/second");
        assert_eq!(error_part("10 per 400 days"), "10 per 400 days");
        assert_eq!(error_part("2000/ms"), "2000");
        assert_eq!(error_part("5/m block"), "block");
        assert_eq!(error_part("5/m block 15 fortnights"), "fortnights");
        assert_eq!(error_part("5/m block 0 minutes"), "block");
        assert_eq!(error_part("5/m block 400 days"), "block");
        assert_eq!(error_part("5/m block 1m block 2m"), "block");
        assert_eq!(error_part("5/m shadow shadow"), "shadow");
        assert_eq!(error_part("5/m block 1m shadow"), "shadow");
    }

    #[test]
    fn calendar_windows_parse_and_print_back() {
        let monthly = rule("10000/month calendar");
        assert_eq!(monthly.algorithm(), Algorithm::FixedWindow);
        assert_eq!(monthly.calendar(), Some(Calendar::new(CalendarUnit::Month)));
        assert_eq!(monthly.to_string(), "10000/month calendar");
        assert_eq!(monthly.id(), "fw10000/month");
        let berlin = rule("500/day calendar at +02:00");
        assert_eq!(berlin.to_string(), "500/day calendar at +02:00");
        assert_eq!(berlin.calendar().map(Calendar::offset_minutes), Some(120));
        assert_eq!(rule("500/d CALENDAR at +0200"), berlin);
        assert_eq!(rule("500/day calendar at +2"), berlin);
        assert_eq!(rule("5/h calendar at -05:30").id(), "fw5/hour-330");
        assert_eq!(rule("5/week calendar at UTC"), rule("5 per week calendar"));
        assert_eq!(
            rule("5/year calendar using fixed_window block 1 day").to_string(),
            "5/year calendar block 1 day"
        );
        assert_ne!(rule("500/day calendar"), rule("500/day using fixed_window"));
        assert_eq!(rule("5/week").period(), Duration::from_secs(7 * 86_400));
        assert!(rule("5/week").calendar().is_none());
    }

    #[test]
    fn calendar_errors_name_the_bad_part() {
        assert_eq!(error_part("10000/month"), "month");
        assert_eq!(error_part("1/year using fixed_window"), "year");
        assert_eq!(error_part("5 per 2 days calendar"), "days");
        assert_eq!(error_part("5/minute calendar"), "minute");
        assert_eq!(error_part("5/day calendar using gcra"), "gcra");
        assert_eq!(error_part("5/day calendar at"), "calendar");
        assert_eq!(error_part("5/day calendar at +25:00"), "calendar");
        assert_eq!(error_part("5/day calendar at +2:7"), "+2:7");
        assert_eq!(error_part("5/day calendar calendar"), "calendar");
        assert_eq!(error_part("5/day calendar burst 3"), "5/day calendar burst 3");
        assert!("5/day calendar"
            .parse::<Rule>()
            .unwrap()
            .using(Algorithm::Gcra)
            .is_err());
    }

    #[test]
    fn non_ascii_text_is_an_error_not_a_panic() {
        assert_eq!(error_part("10/sécond"), "é");
        assert_eq!(error_part("１０/s"), "１");
    }

    #[test]
    fn errors_on_huge_text_quote_a_bounded_excerpt() {
        for text in [
            "9".repeat(10 << 20),
            "x".repeat(10 << 20),
            format!("10/s using {}", "y".repeat(10 << 20)),
            format!("10/s;{}", " ".repeat(10 << 20)),
        ] {
            let err = text.parse::<Rules>().unwrap_err();
            let message = err.to_string();
            assert!(err.is_invalid_rule());
            assert!(message.len() < 400, "{} bytes", message.len());
            assert!(message.contains(&format!("({} bytes)", text.len())), "{message}");
        }
        assert_eq!(
            error_part("10/fortnight"),
            "fortnight",
            "short parts are quoted whole"
        );
    }
}
