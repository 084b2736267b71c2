//! `faults`: the full fault suite of the Rust clients (`make faults`). Seed after seed until the time
//! budget is spent: every scenario (limits of every algorithm, and each lock kind) under a seeded plan
//! of every proxy fault, under server faults that keep state, and under a restart that loses it; then,
//! once, the faults with heavier setups (Sentinel and Cluster failovers, memory pressure). Every
//! history is checked. Prints one table row per run (seed, scenario, fault, operations, ambiguous,
//! violations, slowest call) and the totals; exits 1 on any violation, naming the seed to replay.
//!
//! ```text
//! faults [BUDGET_SECONDS] [FIRST_SEED]
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use ratelock_testkit::fault::scenarios::{
    hold_clients, limit_clients, limit_clients_into, Faults, LockKind, RULES,
};
use ratelock_testkit::fault::server::{
    cluster_failover, memory_pressure, sentinel_failover, server_faults_keeping_state, server_restarted_empty,
};
use ratelock_testkit::fault::{FaultPlan, FaultProxy, EVERY_FAULT};
use ratelock_testkit::history::{check_calls, check_holds, check_limits, Findings, History};
use ratelock_testkit::{RedisCluster, RedisSentinels, RedisServer};

const TIMEOUT: Duration = Duration::from_millis(200);
const TTL: Duration = Duration::from_millis(300);
const HOLD: Duration = Duration::from_millis(3);

/// A scenario: limits, or the clients of one lock kind (with its permit count).
#[derive(Clone, Copy)]
enum Scenario {
    Limits,
    Holds(LockKind, u64),
}

impl Scenario {
    const ALL: [Scenario; 5] = [
        Scenario::Limits,
        Scenario::Holds(LockKind::Lock, 1),
        Scenario::Holds(LockKind::Semaphore(2), 2),
        Scenario::Holds(LockKind::Fair, 1),
        Scenario::Holds(LockKind::ReadWrite, 1),
    ];

    fn name(self) -> String {
        match self {
            Scenario::Limits => "limits (5 algorithms)".into(),
            Scenario::Holds(kind, _) => format!("{kind:?}"),
        }
    }

    /// Runs the scenario on `urls` while `faults` play; checks it (`losses`: times all state was lost).
    fn run(self, urls: &[String], faults: Faults<impl FnOnce()>, losses: u64) -> Findings {
        let slack = TIMEOUT.as_nanos() as u64;
        match self {
            Scenario::Limits => {
                let (history, rules) = limit_clients(urls, faults, &RULES, 2, 4_000, TIMEOUT);
                let ops = history.kept("limits");
                check_limits(&ops, &rules, losses).and(check_calls(&ops, slack))
            }
            Scenario::Holds(kind, permits) => {
                let history = hold_clients(urls, faults, kind, "faults:job", 2, 400, TTL, HOLD, TIMEOUT);
                let ops = history.kept("holds");
                check_holds(&ops, TTL.as_nanos() as u64, permits, losses == 0).and(check_calls(&ops, slack))
            }
        }
    }
}

/// The table, and its totals.
#[derive(Default)]
struct Table {
    runs: usize,
    operations: usize,
    ambiguous: usize,
    violations: usize,
    failing: Vec<u64>,
}

impl Table {
    fn row(&mut self, seed: u64, scenario: &str, fault: &str, found: Findings) {
        println!(
            "| {seed} | {scenario} | {fault} | {} | {} | {} | {:.1} ms |",
            found.operations,
            found.ambiguous,
            found.violations.len(),
            found.slowest_ns as f64 / 1e6
        );
        for violation in &found.violations {
            println!("  violation (seed {seed}): {violation}");
        }
        if !found.violations.is_empty() {
            self.failing.push(seed);
        }
        self.runs += 1;
        self.operations += found.operations;
        self.ambiguous += found.ambiguous;
        self.violations += found.violations.len();
    }
}

/// Each scenario under a seeded plan, server faults keeping state, and a restart losing it.
fn every_scenario_under_the_common_faults(table: &mut Table, seed: u64) {
    for scenario in Scenario::ALL {
        let mut server = RedisServer::start();
        let proxy = FaultProxy::start(server.port(), 2, seed);
        let plan = FaultPlan::seeded(seed, 2, &EVERY_FAULT, 10, Duration::from_millis(400));
        let urls = proxy.urls();
        let name = scenario.name();
        table.row(
            seed,
            &name,
            "proxy plan (every proxy fault)",
            scenario.run(&urls, plan.on(&proxy), 0),
        );
        let found = scenario.run(&urls, server_faults_keeping_state(&server), 0);
        table.row(seed, &name, "server: SIGSTOP, SCRIPT FLUSH, CLIENT KILL", found);
        let found = scenario.run(&urls, server_restarted_empty(&mut server), 1);
        table.row(seed, &name, "server: kill -9, restart empty", found);
    }
}

/// The faults with heavier setups, once: failovers (limits and the plain lock) and memory pressure.
fn failovers_and_memory_pressure(table: &mut Table, seed: u64) {
    for scenario in [Scenario::Limits, Scenario::Holds(LockKind::Lock, 1)] {
        let mut sentinels = RedisSentinels::start();
        let urls = vec![sentinels.url()];
        let found = scenario.run(&urls, sentinel_failover(&mut sentinels), 1);
        table.row(seed, &scenario.name(), "Sentinel failover", found);
        let cluster = RedisCluster::start(3, 1);
        let urls = vec![cluster.url()];
        let found = scenario.run(&urls, cluster_failover(&cluster), 1);
        table.row(seed, &scenario.name(), "Cluster failover (FORCE)", found);
    }
    let keys: Vec<&str> = RULES.iter().map(|(key, _)| *key).collect();
    for policy in ["allkeys-lru", "noeviction"] {
        let server = RedisServer::start();
        let history = History::new();
        let urls = vec![server.url()];
        let faults = memory_pressure(&server, policy, &history, &keys);
        let rules = limit_clients_into(&history, &urls, faults, &RULES, 2, 4_000, TIMEOUT);
        let ops = history.kept(&format!("maxmemory {policy}"));
        let found = check_limits(&ops, &rules, 0).and(check_calls(&ops, TIMEOUT.as_nanos() as u64));
        table.row(
            seed,
            "limits (5 algorithms)",
            &format!("maxmemory {policy}"),
            found,
        );
    }
}

fn main() -> ExitCode {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let budget = Duration::from_secs(args.first().copied().unwrap_or(720));
    let first_seed = args.get(1).copied().unwrap_or(20_261_125);
    let started = Instant::now();
    println!(
        "| seed | scenario | fault | operations | ambiguous | violations | slowest call |\n|---|---|---|---|---|---|---|"
    );
    let mut table = Table::default();
    failovers_and_memory_pressure(&mut table, first_seed);
    let mut seed = first_seed;
    while started.elapsed() < budget {
        every_scenario_under_the_common_faults(&mut table, seed);
        seed += 1;
    }
    println!(
        "\ntotals: {} runs (5 scenarios x 3 faults per seed, seeds {first_seed}..{}, and failovers and memory pressure once), {} operations checked, {} ambiguous, {} violations, {:.0} s",
        table.runs,
        seed - 1,
        table.operations,
        table.ambiguous,
        table.violations,
        started.elapsed().as_secs_f64()
    );
    if table.failing.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!(
            "replay a failing seed: faults <budget> <seed> (seeds {:?})",
            table.failing
        );
        ExitCode::FAILURE
    }
}
