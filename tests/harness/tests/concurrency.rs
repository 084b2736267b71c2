//! Concurrency truth: 4 OS processes × 16 tasks per algorithm hammer one key each with `100 per 2 s` on
//! one Redis. Every admission is bracketed by client times (same wall clock as Redis `TIME`); counting
//! only admissions that certainly fall inside a span, no span may hold more than the algorithm allows.

use std::collections::HashMap;
use std::process::{Command, Stdio};

use ratelock::clock::now_us;
use ratelock_testkit::RedisServer;

const LIMIT: usize = 100;
const PERIOD_US: u64 = 2_000_000;
const PROCESSES: usize = 4;
const TASKS: usize = 16;
const RUN_MS: u64 = 4_500;

type Admission = (u64, u64);

/// The most admissions whose decision times certainly lie within `[x, x + span)` for some x.
fn most_within(admissions: &[Admission], span: u64) -> usize {
    let mut sorted = admissions.to_vec();
    sorted.sort();
    let mut best = 0;
    for (i, &(start, _)) in sorted.iter().enumerate() {
        let inside = sorted[i..]
            .iter()
            .filter(|&&(b, a)| b >= start && a < start + span)
            .count();
        best = best.max(inside);
    }
    best
}

/// The most admissions certainly inside one aligned window `[k·P, (k+1)·P)`.
fn most_in_aligned_window(admissions: &[Admission]) -> usize {
    let mut windows: HashMap<u64, usize> = HashMap::new();
    for &(before, after) in admissions {
        if before / PERIOD_US == after / PERIOD_US {
            *windows.entry(before / PERIOD_US).or_default() += 1;
        }
    }
    windows.into_values().max().unwrap_or(0)
}

#[test]
fn many_processes_never_admit_more_than_the_rules_allow() {
    let server = RedisServer::start();
    let start_at = now_us() + 700_000;
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_hammer"))
                .args([
                    server.url(),
                    start_at.to_string(),
                    RUN_MS.to_string(),
                    TASKS.to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .expect("start a hammer process")
        })
        .collect();
    let mut admissions: HashMap<String, Vec<Admission>> = HashMap::new();
    for child in children {
        let output = child.wait_with_output().expect("hammer process");
        assert!(
            output.status.success(),
            "a hammer process failed: {:?}",
            output.status
        );
        for line in String::from_utf8(output.stdout).unwrap().lines() {
            let mut parts = line.split(' ');
            let (algorithm, before, after) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            admissions
                .entry(algorithm.to_owned())
                .or_default()
                .push((before.parse().unwrap(), after.parse().unwrap()));
        }
    }

    let emission_us = PERIOD_US / LIMIT as u64;
    let mut report = Vec::new();
    for algorithm in [
        "gcra",
        "token_bucket",
        "leaky_bucket",
        "fixed_window",
        "sliding_window",
        "sliding_log",
    ] {
        let admitted = admissions.get(algorithm).map(Vec::as_slice).unwrap_or_default();
        // The run covers more than two full periods: a working limiter admits at least two periods' worth.
        assert!(
            admitted.len() >= 2 * LIMIT,
            "{algorithm}: only {} admitted, the hammer did not saturate",
            admitted.len()
        );
        let in_period = most_within(admitted, PERIOD_US);
        match algorithm {
            "gcra" | "token_bucket" | "leaky_bucket" => {
                // A full burst plus what refills during the span.
                for span in [PERIOD_US / 10, PERIOD_US / 2, PERIOD_US, 2 * PERIOD_US] {
                    let bound = LIMIT + span.div_ceil(emission_us) as usize;
                    let most = most_within(admitted, span);
                    assert!(
                        most <= bound,
                        "{algorithm}: {most} admitted within {span} µs, bound {bound}"
                    );
                }
            }
            "fixed_window" => {
                let most = most_in_aligned_window(admitted);
                assert!(most <= LIMIT, "{algorithm}: {most} admitted in one window");
            }
            "sliding_window" => {
                let most = most_in_aligned_window(admitted);
                assert!(most <= LIMIT, "{algorithm}: {most} admitted in one window");
                assert!(
                    in_period <= 2 * LIMIT,
                    "{algorithm}: {in_period} within one period, bound 2×limit"
                );
            }
            "sliding_log" => {
                assert!(
                    in_period <= LIMIT,
                    "{algorithm}: {in_period} admitted within one period"
                );
            }
            _ => unreachable!(),
        }
        report.push(format!(
            "{algorithm}: {} admitted, at most {in_period} within one period",
            admitted.len()
        ));
    }
    println!("{}", report.join("\n"));
}
