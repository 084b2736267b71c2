//! How decisions and findings are printed: one line of text for a person, or JSON for a script.

use std::io::Write;

use ratelock::Decision;
use serde_json::{json, Value};

use crate::exit::Exit;

/// Prints `text` and a newline on standard output. A reader that has gone (`ratelock ... | head -0`)
/// is no failure: what it would have read is dropped, and the exit code stays the command's (a
/// `println!` panicked there, exit 101, after the hit was spent).
pub fn line(text: &str) -> Result<(), Exit> {
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Exit::Failed(format!("writing to standard output: {err}")))
        }
        _ => Ok(()),
    }
}

/// Prints `text` and a newline on standard error, with every URL's password masked. A standard error
/// that cannot be written is no failure: the command's outcome (a lock to give back, an exit code)
/// matters more than the note (an `eprintln!` panicked there, and left the lock taken).
pub fn warning(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "ratelock: {}", crate::store_url::masked(text));
}

/// A decision as JSON: the deciding rule's figures (durations in ms) and every rule's.
pub fn decision_json(decision: &Decision, rules: &ratelock::Rules) -> Value {
    let per_rule: Vec<Value> = decision
        .rules()
        .zip(rules.iter())
        .map(|(outcome, rule)| {
            json!({
                "rule": rule.to_string(),
                "allowed": outcome.allowed,
                "limit": outcome.limit,
                "remaining": outcome.remaining,
                "reset_after_ms": outcome.reset_after.as_micros() as f64 / 1000.0,
                "retry_after_ms": outcome.retry_after.as_micros() as f64 / 1000.0,
            })
        })
        .collect();
    json!({
        "allowed": decision.allowed,
        "limit": decision.limit,
        "remaining": decision.remaining,
        "reset_after_ms": decision.reset_after.as_micros() as f64 / 1000.0,
        "retry_after_ms": decision.retry_after.as_micros() as f64 / 1000.0,
        "rule": rules.get(decision.rule_index).map(ToString::to_string),
        "reason": decision.reason.name(),
        "would_deny": decision.would_deny,
        "rules": per_rule,
    })
}

/// A decision as one line: `allowed: 7 of 10 left (10/second), full again in 300 ms`.
pub fn decision_line(decision: &Decision, rules: &ratelock::Rules) -> String {
    let rule = rules
        .get(decision.rule_index)
        .map_or_else(String::new, ToString::to_string);
    let reason = match decision.reason.name() {
        "rule" => String::new(),
        other => format!(" [{other}]"),
    };
    if decision.allowed {
        format!(
            "allowed{reason}: {} of {} left ({rule}), full again in {}",
            decision.remaining,
            decision.limit,
            human(decision.reset_after)
        )
    } else {
        format!(
            "denied{reason} by {rule}: retry in {} ({} of {} left, full again in {})",
            human(decision.retry_after),
            decision.remaining,
            decision.limit,
            human(decision.reset_after)
        )
    }
}

/// A duration for people: `0 ms`, `300 ms`, `2.5 s`, `4 min 10 s`, `3 h 2 min`, `2 d 4 h`.
pub fn human(span: std::time::Duration) -> String {
    let ms = span.as_millis();
    match ms {
        0..=999 => format!("{} ms", (span.as_micros() as f64 / 1000.0).round()),
        1_000..=59_999 => format!("{:.1} s", span.as_secs_f64()),
        60_000..=3_599_999 => format!("{} min {} s", ms / 60_000, ms % 60_000 / 1000),
        3_600_000..=86_399_999 => format!("{} h {} min", ms / 3_600_000, ms % 3_600_000 / 60_000),
        _ => format!("{} d {} h", ms / 86_400_000, ms % 86_400_000 / 3_600_000),
    }
}
