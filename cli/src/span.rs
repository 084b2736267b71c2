//! Durations on the command line: a number and a unit (`500ms`, `30s`, `5m`, `2h`, `1d`), or a bare
//! number of seconds.

use std::time::Duration;

/// Parses a duration; the error names what was wrong (clap prints it beside the argument).
pub fn parse_span(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 500ms, 30s, 5m, 2h)"))?;
    let seconds = match unit.trim() {
        "ms" => value / 1000.0,
        "" | "s" | "sec" | "secs" => value,
        "m" | "min" | "mins" => value * 60.0,
        "h" | "hr" | "hrs" => value * 3600.0,
        "d" | "day" | "days" => value * 86_400.0,
        other => return Err(format!("unknown unit {other:?} (expected ms, s, m, h or d)")),
    };
    if !(seconds.is_finite() && (0.0..=366.0 * 86_400.0).contains(&seconds)) {
        return Err(format!("{text:?} is out of range (0 to 366 days)"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// A store call's time limit: a span from 1 ms (a zero limit failed every call, with another exit
/// code per command).
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let span = parse_span(text)?;
    if span < Duration::from_millis(1) {
        return Err(format!("{:?} is out of range (1 ms to 366 days)", text.trim()));
    }
    Ok(span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_is_at_least_a_millisecond() {
        assert!(parse_timeout("0").is_err());
        assert!(parse_timeout("0.5ms").is_err());
        assert_eq!(parse_timeout("1ms"), Ok(Duration::from_millis(1)));
    }

    #[test]
    fn units_and_errors() {
        assert_eq!(parse_span("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_span("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_span("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_span("1.5m"), Ok(Duration::from_secs(90)));
        assert!(parse_span("5 fortnights").unwrap_err().contains("fortnights"));
        assert!(parse_span("soon").unwrap_err().contains("not a duration"));
        assert!(parse_span("400d").unwrap_err().contains("out of range"));
    }
}
