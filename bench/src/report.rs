//! The results table: one row per figure with its baseline, ratio and target, printed as aligned
//! text and written as markdown. Targets are only marked (PASS/BELOW/ABOVE), never enforced.

/// What a measured figure counts.
#[derive(Clone, Copy)]
pub enum Unit {
    PerSecond,
    Bytes,
    Micros,
    /// Machine instructions (callgrind's count).
    Instructions,
}

/// The figure a row aims at.
#[derive(Clone, Copy)]
pub enum Target {
    /// measured / baseline at least this.
    RatioAtLeast(f64),
    /// measured / baseline at most this (a cost against its floor).
    RatioAtMost(f64),
    /// The measured figure at least this.
    AtLeast(f64),
    /// The measured figure at most this.
    AtMost(f64),
    /// None: the figure is shown for information.
    None,
}

/// One line of the table. `None` figures could not be measured (the reason goes in a note).
pub struct Row {
    pub name: String,
    pub unit: Unit,
    pub measured: Option<f64>,
    pub baseline: Option<f64>,
    pub target: Target,
}

const HEADER: [&str; 6] = ["name", "measured", "baseline", "ratio", "target", "mark"];

impl Row {
    fn ratio(&self) -> Option<f64> {
        Some(self.measured? / self.baseline?)
    }

    fn mark(&self) -> &'static str {
        let met = match self.target {
            Target::RatioAtLeast(min) => self.ratio().map(|ratio| ratio >= min),
            Target::RatioAtMost(max) => self.ratio().map(|ratio| ratio <= max),
            Target::AtLeast(min) => self.measured.map(|figure| figure >= min),
            Target::AtMost(max) => self.measured.map(|figure| figure <= max),
            Target::None => return "-",
        };
        match (met, self.target) {
            (None, _) => "n/a",
            (Some(true), _) => "PASS",
            (Some(false), Target::AtMost(_) | Target::RatioAtMost(_)) => "ABOVE",
            (Some(false), _) => "BELOW",
        }
    }

    fn cells(&self) -> [String; 6] {
        let figure = |value: Option<f64>| value.map_or("-".to_owned(), |v| with_unit(v, self.unit));
        let target = match self.target {
            Target::RatioAtLeast(min) => format!("ratio >= {min:.2}"),
            Target::RatioAtMost(max) => format!("ratio <= {max:.2}"),
            Target::AtLeast(min) => format!(">= {}", with_unit(min, self.unit)),
            Target::AtMost(max) => format!("<= {}", with_unit(max, self.unit)),
            Target::None => "-".to_owned(),
        };
        [
            self.name.clone(),
            figure(self.measured),
            figure(self.baseline),
            self.ratio().map_or("-".to_owned(), |r| format!("{r:.2}")),
            target,
            self.mark().to_owned(),
        ]
    }
}

/// The table as aligned text: the name column left-aligned, the others right-aligned.
pub fn text_table(rows: &[Row]) -> String {
    let lines: Vec<[String; 6]> = std::iter::once(HEADER.map(str::to_owned))
        .chain(rows.iter().map(Row::cells))
        .collect();
    let widths: Vec<usize> = (0..6)
        .map(|column| {
            lines
                .iter()
                .map(|line| line[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (index, line) in lines.iter().enumerate() {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(column, (cell, &width))| match column {
                0 => format!("{cell:<width$}"),
                _ => format!("{cell:>width$}"),
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
        if index == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            out.push('\n');
        }
    }
    out
}

/// The table as markdown.
pub fn markdown_table(rows: &[Row]) -> String {
    let mut out = format!("| {} |\n", HEADER.join(" | "));
    out.push_str("|:--|--:|--:|--:|--:|:-:|\n");
    for row in rows {
        out.push_str(&format!("| {} |\n", row.cells().join(" | ")));
    }
    out
}

fn with_unit(value: f64, unit: Unit) -> String {
    match unit {
        Unit::PerSecond => format!("{}/s", thousands(value.round() as u64)),
        Unit::Bytes => format!("{} B", thousands(value.round() as u64)),
        // Below 100 µs (a server's time per call), a tenth of a µs matters.
        Unit::Micros if value < 100.0 => format!("{value:.1} µs"),
        Unit::Micros => format!("{} µs", thousands(value.round() as u64)),
        Unit::Instructions => format!("{} instr", thousands(value.round() as u64)),
    }
}

/// `1234567` → `1,234,567`.
fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
