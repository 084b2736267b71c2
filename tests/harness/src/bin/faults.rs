//! `faults`: the full fault suite of the Rust clients (`make faults`): every scenario (limits and locks)
//! under every fault (a seeded plan of every proxy fault, server faults that keep state, a restart that
//! loses it), seed after seed until the time budget is spent, each history checked. Prints one table row
//! per run (scenario, fault, operations, ambiguous, violations, slowest call) and the totals; exits 1 on
//! any violation, naming the seed to replay.
//!
//! ```text
//! faults [BUDGET_SECONDS] [FIRST_SEED]
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use ratelock_testkit::fault::scenarios::{limit_clients, lock_clients};
use ratelock_testkit::fault::server::{server_faults_keeping_state, server_restarted_empty};
use ratelock_testkit::fault::{FaultKind, FaultPlan, FaultProxy};
use ratelock_testkit::history::{check_calls, check_limits, check_locks, Findings};
use ratelock_testkit::RedisServer;

const EVERY_FAULT: [FaultKind; 6] = [
    FaultKind::Latency,
    FaultKind::Stall,
    FaultKind::HalfOpen,
    FaultKind::Partition,
    FaultKind::Cut,
    FaultKind::Throttle,
];
const RULES: [(&str, &str); 5] = [
    ("gcra", "20/second"),
    ("bucket", "20/second using token_bucket"),
    ("fixed", "20/second using fixed_window"),
    ("sliding", "20/second using sliding_window"),
    ("log", "20/second using sliding_log"),
];
const TIMEOUT: Duration = Duration::from_millis(200);
const TTL: Duration = Duration::from_millis(300);

/// How one run of a scenario under a fault may end: the lock check knows whether state was kept.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    ProxyPlan,
    ServerKeepsState,
    ServerLosesState,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::ProxyPlan => "proxy plan (every proxy fault)",
            Fault::ServerKeepsState => "server: SIGSTOP, SCRIPT FLUSH, CLIENT KILL",
            Fault::ServerLosesState => "server: kill -9, restart empty",
        }
    }
}

fn run(scenario: &str, fault: Fault, seed: u64) -> Findings {
    let mut server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 2, seed);
    let plan = FaultPlan::seeded(seed, 2, &EVERY_FAULT, 10, Duration::from_millis(400));
    let slack = TIMEOUT.as_nanos() as u64;
    let ops = match (scenario, fault) {
        ("limits", _) => {
            let (history, rules) = match fault {
                Fault::ProxyPlan => limit_clients(&proxy.urls(), plan.on(&proxy), &RULES, 2, 4_000, TIMEOUT),
                Fault::ServerKeepsState => limit_clients(
                    &proxy.urls(),
                    server_faults_keeping_state(&server),
                    &RULES,
                    2,
                    4_000,
                    TIMEOUT,
                ),
                Fault::ServerLosesState => limit_clients(
                    &proxy.urls(),
                    server_restarted_empty(&mut server),
                    &RULES,
                    2,
                    4_000,
                    TIMEOUT,
                ),
            };
            let ops = history.ops();
            let losses = u64::from(fault == Fault::ServerLosesState);
            return check_limits(&ops, &rules, losses).and(check_calls(&ops, slack));
        }
        (_, Fault::ProxyPlan) => lock_clients(
            &proxy.urls(),
            plan.on(&proxy),
            "faults:job",
            2,
            400,
            TTL,
            hold(),
            TIMEOUT,
        ),
        (_, Fault::ServerKeepsState) => lock_clients(
            &proxy.urls(),
            server_faults_keeping_state(&server),
            "faults:job",
            2,
            400,
            TTL,
            hold(),
            TIMEOUT,
        ),
        (_, Fault::ServerLosesState) => lock_clients(
            &proxy.urls(),
            server_restarted_empty(&mut server),
            "faults:job",
            2,
            400,
            TTL,
            hold(),
            TIMEOUT,
        ),
    }
    .ops();
    let state_kept = fault != Fault::ServerLosesState;
    check_locks(&ops, TTL.as_nanos() as u64, state_kept).and(check_calls(&ops, slack))
}

fn hold() -> Duration {
    Duration::from_millis(3)
}

fn main() -> ExitCode {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let budget = Duration::from_secs(args.first().copied().unwrap_or(300));
    let first_seed = args.get(1).copied().unwrap_or(20_261_125);
    let started = Instant::now();
    println!(
        "| seed | scenario | fault | operations | ambiguous | violations | slowest call |\n|---|---|---|---|---|---|---|"
    );
    let (mut runs, mut operations, mut ambiguous, mut violations) = (0, 0, 0, 0);
    let mut seed = first_seed;
    let mut failing = Vec::new();
    'seeds: while started.elapsed() < budget {
        for scenario in ["limits", "locks"] {
            for fault in [Fault::ProxyPlan, Fault::ServerKeepsState, Fault::ServerLosesState] {
                if started.elapsed() >= budget {
                    break 'seeds;
                }
                let found = run(scenario, fault, seed);
                println!(
                    "| {seed} | {scenario} | {} | {} | {} | {} | {:.1} ms |",
                    fault.name(),
                    found.operations,
                    found.ambiguous,
                    found.violations.len(),
                    found.slowest_ns as f64 / 1e6
                );
                for violation in &found.violations {
                    println!("  violation (seed {seed}): {violation}");
                }
                if !found.violations.is_empty() {
                    failing.push(seed);
                }
                runs += 1;
                operations += found.operations;
                ambiguous += found.ambiguous;
                violations += found.violations.len();
            }
        }
        seed += 1;
    }
    println!(
        "\ntotals: {runs} runs (2 scenarios x 3 faults per seed, seeds {first_seed}..{}), {operations} operations checked, {ambiguous} ambiguous, {violations} violations",
        seed.saturating_sub(1).max(first_seed)
    );
    if failing.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("replay a failing seed: faults <budget> <seed> (seeds {failing:?})");
        ExitCode::FAILURE
    }
}
