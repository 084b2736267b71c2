//! The canonical text of a rule: what `Display` prints and the parser reads back unchanged.

use std::fmt;

use super::{Algorithm, Rule};

const UNITS: [(u64, &str); 5] = [
    (86_400_000, "day"),
    (3_600_000, "hour"),
    (60_000, "minute"),
    (1_000, "second"),
    (1, "ms"),
];

/// A whole number of milliseconds as (count, the largest unit that divides it).
fn span(ms: u64) -> (u64, &'static str) {
    let (size, unit) = UNITS
        .into_iter()
        .find(|(size, _)| ms.is_multiple_of(*size))
        .unwrap_or((1, "ms"));
    (ms / size, unit)
}

fn plural(unit: &str) -> &'static str {
    if unit == "ms" {
        ""
    } else {
        "s"
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (count, unit) = span(self.period_us / 1000);
        if let Some(calendar) = self.calendar {
            write!(f, "{}/{}", self.limit, calendar.unit().name())?;
        } else if count == 1 {
            write!(f, "{}/{unit}", self.limit)?;
        } else {
            write!(f, "{} per {count} {unit}{}", self.limit, plural(unit))?;
        }
        if self.algorithm.uses_burst() && self.burst != self.limit {
            write!(f, " burst {}", self.burst)?;
        }
        if let Some(calendar) = self.calendar {
            write!(f, " {}", calendar.words())?;
        } else if self.algorithm != Algorithm::Gcra {
            write!(f, " using {}", self.algorithm)?;
        }
        if let Some(block_us) = self.block_us() {
            let (count, unit) = span(block_us / 1000);
            let unit_s = if count == 1 { "" } else { plural(unit) };
            write!(f, " block {count} {unit}{unit_s}")?;
        }
        if self.shadow {
            write!(f, " shadow")?;
        }
        Ok(())
    }
}
