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

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let period_ms = self.period_us / 1000;
        let (size, unit) = UNITS
            .into_iter()
            .find(|(size, _)| period_ms.is_multiple_of(*size))
            .unwrap_or((1, "ms"));
        let count = period_ms / size;
        if count == 1 {
            write!(f, "{}/{unit}", self.limit)?;
        } else {
            let plural = if unit == "ms" { "" } else { "s" };
            write!(f, "{} per {count} {unit}{plural}", self.limit)?;
        }
        if self.algorithm.uses_burst() && self.burst != self.limit {
            write!(f, " burst {}", self.burst)?;
        }
        if self.algorithm != Algorithm::Gcra {
            write!(f, " using {}", self.algorithm)?;
        }
        Ok(())
    }
}
