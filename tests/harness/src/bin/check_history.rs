//! `check_history`: reads one JSON-lines history (written by the Rust, Python or Node driver) and checks
//! it against ratelock's promises, printing one line of figures and every violation; exits 1 when there
//! is one. For the Python and Node fault scenarios.
//!
//! ```text
//! check_history HISTORY --limits KEY=RULE... [--state-losses N] [--slack-ms MS]
//! check_history HISTORY --locks TTL_MS [--state-lost] [--slack-ms MS]
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use ratelock::Rules;
use ratelock_testkit::history::{check_calls, check_limits, check_locks, load, Findings};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(findings) => {
            println!(
                "operations {} ambiguous {} violations {} slowest_ms {:.1}",
                findings.operations,
                findings.ambiguous,
                findings.violations.len(),
                findings.slowest_ns as f64 / 1e6
            );
            for violation in &findings.violations {
                println!("violation: {violation}");
            }
            if findings.violations.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(problem) => {
            eprintln!("check_history: {problem}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<Findings, String> {
    let path = PathBuf::from(args.first().ok_or("give the history's path first")?);
    let ops = load(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let number = |name: &str| -> Result<Option<u64>, String> {
        match args.iter().position(|a| a == name) {
            None => Ok(None),
            Some(i) => args
                .get(i + 1)
                .and_then(|v| v.parse().ok())
                .map(Some)
                .ok_or_else(|| format!("{name} needs a number")),
        }
    };
    let slack_ns = number("--slack-ms")?.unwrap_or(200) * 1_000_000;
    let calls = check_calls(&ops, slack_ns);
    if let Some(ttl_ms) = number("--locks")? {
        let state_kept = !args.iter().any(|a| a == "--state-lost");
        return Ok(check_locks(&ops, ttl_ms * 1_000_000, state_kept).and(calls));
    }
    let start = args
        .iter()
        .position(|a| a == "--limits")
        .ok_or("give --limits KEY=RULE... or --locks TTL_MS")?;
    let mut rules = BTreeMap::new();
    for pair in args[start + 1..].iter().take_while(|a| !a.starts_with("--")) {
        let (key, text) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not KEY=RULE"))?;
        let parsed: Rules = text.parse().map_err(|e| format!("{text:?}: {e}"))?;
        rules.insert(key.to_owned(), parsed[0].clone());
    }
    Ok(check_limits(&ops, &rules, number("--state-losses")?.unwrap_or(0)).and(calls))
}
