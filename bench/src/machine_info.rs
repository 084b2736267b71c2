//! What the figures were measured on: date (UTC), CPUs, CPU model, OS and redis-server version,
//! for the header of RESULTS.md.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// Labelled facts about this machine and run, in display order.
pub fn describe() -> Vec<(&'static str, String)> {
    vec![
        ("date", utc_now()),
        ("nproc", cpu_count()),
        ("cpu", cpu_model()),
        (
            "os",
            format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        ),
        (
            "redis-server --version",
            first_line_of("redis-server", &["--version"]),
        ),
        (
            "redis-benchmark --version",
            first_line_of("redis-benchmark", &["--version"]),
        ),
    ]
}

fn cpu_count() -> String {
    let from_nproc = first_line_of("nproc", &[]);
    if from_nproc.parse::<u32>().is_ok() {
        return from_nproc;
    }
    std::thread::available_parallelism().map_or("unknown".to_owned(), |n| n.to_string())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

fn first_line_of(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .and_then(|text| text.lines().next().map(|line| line.trim().to_owned()))
        .unwrap_or_else(|| format!("{program}: not found"))
}

/// The current time from `date -u`, or seconds since the Unix epoch if `date` is missing.
fn utc_now() -> String {
    let from_date = first_line_of("date", &["-u", "+%Y-%m-%d %H:%M:%S UTC"]);
    if from_date.ends_with("UTC") {
        return from_date;
    }
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{seconds} s after the Unix epoch")
}
