//! A projection, not a measurement, of decisions/s on a Redis Cluster of 1, 3 and 6 masters: this
//! machine's few cores cannot show a cluster scaling, so the figure is built from two measured parts.
//!
//! - The key spread, measured: real clusters of 3 and 6 masters (every node loads ratelock's module
//!   when it is built) take one hit on each of 10,000 distinct user keys through `ratelock::Limiter` on
//!   `redis+cluster://`; each master's share of the keys is counted (DBSIZE) and checked against the
//!   slots the keys hash to (tests/harness/src/slot.rs and each master's slot ranges).
//! - The server µs per decision, measured on one server: the server-cost rows of the module's and
//!   limit.lua's single GCRA rule (measured here when server-cost did not run).
//!
//! Projected decisions/s = masters × (1e6 / µs per decision) × (mean / max keys per master): the
//! busiest master saturates first. It assumes each master has a core of its own and that nothing but
//! command execution limits a master (commandstats' µs leave out network I/O and parsing).

use std::collections::HashMap;

use ratelock::{Limiter, Rules};
use ratelock_testkit::slot::key_slot;
use ratelock_testkit::{RedisCluster, RedisServer};

use crate::redis_benchmark::command_stat;
use crate::report::{Row, Target, Unit};
use crate::server_cost::{self, Figure, LUA_GCRA_NAME, MODULE_GCRA_NAME};

const USER_KEYS: usize = 10_000;
const RULE: &str = "100/minute";
const MASTER_COUNTS: [usize; 2] = [3, 6];
/// Tasks sending the spread's hits (only to send them sooner; the spread does not depend on it).
const TASKS: usize = 32;

/// How the keys fell on the masters.
struct Spread {
    masters: usize,
    keys_per_master: Vec<u64>,
}

impl Spread {
    fn mean_over_max(&self) -> f64 {
        let max = self.keys_per_master.iter().copied().max().unwrap_or(0) as f64;
        let total: u64 = self.keys_per_master.iter().sum();
        (total as f64 / self.masters as f64) / max
    }

    fn shares(&self) -> String {
        let total: u64 = self.keys_per_master.iter().sum();
        let shares: Vec<String> = self
            .keys_per_master
            .iter()
            .map(|keys| format!("{:.1}%", *keys as f64 * 100.0 / total as f64))
            .collect();
        shares.join(" / ")
    }
}

/// The projection rows, from the server-cost figures already in `measured` (or measured now).
pub async fn rows(measured: &[Row], notes: &mut Vec<String>) -> Vec<Row> {
    let module = server_cost::module_path();
    let mut paths = vec![("limit.lua", LUA_GCRA_NAME)];
    if module.is_some() {
        paths.insert(0, ("module", MODULE_GCRA_NAME));
    }
    let figure_of = |name: &str, figures: &[Figure]| {
        figures
            .iter()
            .find(|(figure, ..)| figure == name)
            .map(|(_, rate, micros)| (*rate, *micros))
            .unwrap_or((None, None))
    };
    let from_rows: Vec<Figure> = paths
        .iter()
        .map(|(_, name)| {
            let figure = |prefix: &str| {
                measured
                    .iter()
                    .find(|row| row.name == format!("{prefix}: {name}"))
                    .and_then(|row| row.measured)
            };
            (
                (*name).to_owned(),
                figure("saturated calls/s"),
                figure("server µs per call"),
            )
        })
        .collect();
    let figures = if from_rows.iter().all(|(_, _, micros)| micros.is_some()) {
        from_rows
    } else {
        notes.push(
            "cluster projection: server-cost did not run, so its single GCRA rows were measured for it"
                .into(),
        );
        server_cost::single_gcra_figures(notes)
    };

    let mut spreads = vec![Spread {
        masters: 1,
        keys_per_master: vec![USER_KEYS as u64],
    }];
    for masters in MASTER_COUNTS {
        let spread = key_spread(masters, module.as_deref(), notes).await;
        notes.push(format!(
            "cluster projection, key spread on {masters} masters (measured): {USER_KEYS} user keys, one GCRA \
             key each, {} of the keys per master; mean/max {:.3}",
            spread.shares(),
            spread.mean_over_max()
        ));
        spreads.push(spread);
    }
    notes.push(
        "cluster projection: decisions/s = masters × (1e6 / server µs per decision) × (mean / max keys per \
         master), from the single-server µs of the GCRA rule; a ceiling that assumes a core per master and \
         leaves out network I/O and parsing (the saturated calls/s of one server are well below 1e6 / µs), \
         so read the ratio between master counts, not the figures as rates a cluster would reach"
            .to_owned(),
    );

    let mut rows = Vec::new();
    for (label, name) in &paths {
        let (rate, micros) = figure_of(name, &figures);
        if let Some(rate) = rate {
            let by_rate: Vec<String> = spreads
                .iter()
                .map(|spread| {
                    let projected = spread.masters as f64 * rate * spread.mean_over_max();
                    format!("{} master(s) {projected:.0}/s", spread.masters)
                })
                .collect();
            notes.push(format!(
                "cluster projection, {label} one GCRA rule, from one server's saturated calls/s ({rate:.0}/s) \
                 instead of its µs (same formula, still a projection): {}",
                by_rate.join(", ")
            ));
        }
        let Some(micros) = micros else {
            notes.push(format!("cluster projection, {label}: no server µs measured"));
            continue;
        };
        notes.push(format!(
            "cluster projection, {label} one GCRA rule: {micros:.2} server µs per decision on one server"
        ));
        let one_master = 1e6 / micros;
        for spread in &spreads {
            rows.push(Row {
                name: format!(
                    "projection: decisions/s, {} master{}, {label} one GCRA rule vs 1 master",
                    spread.masters,
                    if spread.masters == 1 { "" } else { "s" }
                ),
                unit: Unit::PerSecond,
                measured: Some(spread.masters as f64 * one_master * spread.mean_over_max()),
                baseline: Some(one_master),
                target: Target::None,
            });
        }
    }
    rows
}

/// Starts a cluster of `masters` masters (loading `module` on every node), sends one hit for each of
/// `USER_KEYS` keys through a `Limiter`, and counts each master's keys.
async fn key_spread(masters: usize, module: Option<&std::path::Path>, notes: &mut Vec<String>) -> Spread {
    let module_text = module.map(|so| so.display().to_string());
    let cluster = match &module_text {
        Some(so) => RedisCluster::start_with(masters, 0, &["--loadmodule", so]),
        None => RedisCluster::start(masters, 0),
    };
    // A cluster just started on a busy 2-core machine can take over a second to answer its first
    // calls (one `make bench` run lost a hit to the default 1 s); the spread does not depend on latency.
    let options = ratelock::LimiterOptions::default().with_timeout(std::time::Duration::from_secs(5));
    let limiter = Limiter::connect_with(&cluster.url(), options)
        .await
        .expect("connect a limiter to the projection's cluster");
    let rules: Rules = RULE.parse().expect("the projection's rule");
    send_hits(&limiter, &rules).await;

    let nodes = cluster.nodes();
    let keys_per_master: Vec<u64> = nodes
        .iter()
        .map(|node| {
            redis::cmd("DBSIZE")
                .query(&mut node.connection())
                .expect("DBSIZE on a cluster master")
        })
        .collect();
    assert_eq!(
        keys_per_master,
        keys_by_slot(nodes, &rules),
        "the masters' keys differ from the slots their keys hash to"
    );
    if module.is_some() {
        let module_calls: f64 = nodes
            .iter()
            .filter_map(|node| command_stat(&mut node.connection(), "ratelock.limit", "calls"))
            .sum();
        let micros: Vec<String> = nodes
            .iter()
            .filter_map(|node| command_stat(&mut node.connection(), "ratelock.limit", "usec_per_call"))
            .map(|micros| format!("{micros:.1}"))
            .collect();
        notes.push(format!(
            "cluster projection, {masters} masters: the module served {module_calls:.0} of the {USER_KEYS} hits; \
             µs per call on each master, unsaturated: {}",
            micros.join(" / ")
        ));
    }
    Spread {
        masters,
        keys_per_master,
    }
}

/// One hit on each user key, from `TASKS` tasks.
async fn send_hits(limiter: &Limiter, rules: &Rules) {
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let (limiter, rules) = (limiter.clone(), rules.clone());
            tokio::spawn(async move {
                for key in (task..USER_KEYS).step_by(TASKS) {
                    limiter
                        .hit(user_key(key), &rules, 1)
                        .await
                        .expect("a projection hit");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a projection task panicked");
    }
}

fn user_key(number: usize) -> String {
    format!("bench:spread:{number}")
}

/// How many of the storage keys each node's slot ranges take, from the keys' hash slots.
fn keys_by_slot(nodes: &[RedisServer], rules: &Rules) -> Vec<u64> {
    let rule = rules.iter().next().expect("one rule");
    let ranges: Vec<Vec<(u16, u16)>> = nodes.iter().map(own_slot_ranges).collect();
    let mut counts: HashMap<usize, u64> = HashMap::new();
    for number in 0..USER_KEYS {
        let key = ratelock::key::storage_key("rl", user_key(number).as_bytes(), rule);
        let slot = key_slot(&key);
        let node = ranges
            .iter()
            .position(|owned| owned.iter().any(|&(first, last)| (first..=last).contains(&slot)))
            .expect("every slot has a master");
        *counts.entry(node).or_default() += 1;
    }
    (0..nodes.len())
        .map(|node| counts.get(&node).copied().unwrap_or(0))
        .collect()
}

/// The slot ranges a node serves, from its own line of `CLUSTER NODES` (`myself`).
fn own_slot_ranges(node: &RedisServer) -> Vec<(u16, u16)> {
    let text: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query(&mut node.connection())
        .expect("CLUSTER NODES");
    let line = text
        .lines()
        .find(|line| line.contains("myself"))
        .expect("CLUSTER NODES names the node itself");
    line.split_whitespace()
        .skip(8)
        .filter_map(|range| {
            let (first, last) = range.split_once('-').unwrap_or((range, range));
            Some((first.parse().ok()?, last.parse().ok()?))
        })
        .collect()
}
