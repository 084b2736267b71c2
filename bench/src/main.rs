//! ratelock-bench: throughput of the Rust client (limiter and locks) against redis-benchmark on the same
//! scripts and server, lock hand-off latency, memory-store decisions per second, Redis memory per key,
//! and the circuit breaker's figures while the server is down.
//!
//! With no arguments every section runs and bench/RESULTS.md is rewritten. Naming sections runs only
//! those and prints their table without touching RESULTS.md (a partial run is no record), e.g.
//! `cargo run --release -p ratelock-bench -- server-cost`. The sections are listed in `SECTIONS`.

mod client_overhead;
mod client_throughput;
mod cluster_projection;
mod cluster_throughput;
mod contract_floors;
mod deny_cache_flood;
mod lock_comparison;
mod lock_handoff;
mod lock_scripts;
mod lock_server_cost;
mod lock_throughput;
mod machine_info;
mod memory_throughput;
mod module_throughput;
mod native_floor;
mod outage;
mod pairing;
mod policy_cost;
mod redis_benchmark;
mod redis_comparison;
mod redis_rs_throughput;
mod report;
mod script_call;
mod server_cost;
mod server_instructions;
mod server_tails;

use std::time::Duration;

use ratelock::store::MemoryStore;
use ratelock::{Limiter, Rules};
use ratelock_testkit::RedisServer;

use crate::memory_throughput::MemoryRate;
use crate::report::{Row, Target, Unit};

/// The user key of every measurement.
const KEY: &str = "bench:gcra";
/// Fast enough that nothing the Redis runs send is ever denied.
const RULE: &str = "1000000/second";
/// The same rate with a burst so deep that every memory-store hit is allowed (and written).
const RULE_ALWAYS_ALLOWED: &str = "1000000/second burst 1000000000";
const MEMORY_WARM_UP: Duration = Duration::from_millis(500);
const MEMORY_MEASURE: Duration = Duration::from_secs(1);
const MEMORY_TARGET_PER_SECOND: f64 = 10_000_000.0;

/// The sections a run can be limited to (command-line arguments), in the order a full run takes them.
const SECTIONS: [&str; 12] = [
    "redis-comparison",
    "client-overhead",
    "lock-comparison",
    "cluster",
    "memory",
    "outage",
    "module-throughput",
    "server-cost",
    "server-instructions",
    "policy-cost",
    "deny-cache",
    "cluster-projection",
];

#[tokio::main]
async fn main() {
    let named: Vec<String> = std::env::args().skip(1).collect();
    if let Some(unknown) = named.iter().find(|name| !SECTIONS.contains(&name.as_str())) {
        eprintln!(
            "unknown section {unknown:?}; the sections are {}",
            SECTIONS.join(", ")
        );
        std::process::exit(2);
    }
    let runs = |section: &str| named.is_empty() || named.iter().any(|name| name == section);
    // Only the first four sections use this shared server; the others start their own.
    let server = SECTIONS[..4].iter().any(|s| runs(s)).then(RedisServer::start);
    let rules: Rules = RULE.parse().expect("bench rule");
    let mut notes = Vec::new();
    let mut rows = Vec::new();
    let mut tables = Vec::new();

    if let Some(server) = &server {
        if runs("redis-comparison") {
            rows.extend(redis_comparison::rows(server, KEY, &rules, &mut notes).await);
        }
        if runs("client-overhead") {
            let (overhead_rows, ladder) = client_overhead::rows(server, &rules, &mut notes).await;
            rows.extend(overhead_rows);
            tables.push(("Client overhead and tails (µs)", ladder));
        }
        if runs("lock-comparison") {
            rows.extend(lock_comparison::rows(server, &mut notes).await);
        }
        if runs("cluster") {
            let window = client_throughput::Window {
                warm_up: Duration::from_millis(500),
                measure: Duration::from_secs(3),
            };
            rows.extend(cluster_throughput::rows(server, &rules, window, &mut notes).await);
        }
    }
    if runs("memory") {
        rows.extend(memory_rows(&mut notes));
    }
    if runs("outage") {
        rows.extend(outage::rows(&mut notes).await);
    }
    if runs("module-throughput") {
        let window = client_throughput::Window {
            warm_up: Duration::from_millis(500),
            measure: Duration::from_secs(3),
        };
        rows.extend(module_throughput::rows(&rules, window, &mut notes).await);
    }
    if runs("server-cost") {
        let (cost_rows, tails) = server_cost::rows(&mut notes);
        rows.extend(cost_rows);
        tables.push((
            "Server time per call, as the server's latency histogram shows it (µs)",
            tails,
        ));
    }
    if runs("server-instructions") {
        rows.extend(server_instructions::rows(&mut notes));
    }
    if runs("policy-cost") {
        rows.extend(policy_cost::rows(&mut notes));
    }
    if runs("deny-cache") {
        rows.extend(deny_cache_flood::rows(&mut notes).await);
    }
    if runs("cluster-projection") {
        // After server-cost: it projects from that section's single GCRA rows when they ran.
        let projected = cluster_projection::rows(&rows, &mut notes).await;
        rows.extend(projected);
    }

    let table = report::text_table(&rows);
    println!("\n{table}");
    for (title, ladder) in &tables {
        println!("\n{title}\n{ladder}");
    }
    for note in &notes {
        println!("- {note}");
    }
    if named.is_empty() {
        write_results(&table, &rows, &notes, &tables);
    } else {
        println!("\nonly {} ran: bench/RESULTS.md left as it was", named.join(", "));
    }
}

/// `Limiter::hit` on the memory store against the store's own `check`, for a mostly denying rule
/// (after its burst, one hit per µs is allowed) and for an always allowing one.
fn memory_rows(notes: &mut Vec<String>) -> Vec<Row> {
    let clock_ns = memory_throughput::clock_read_ns(Duration::from_millis(300));
    notes.push(format!(
        "one read of the memory store's clock (ratelock::clock::process_now_us) takes {clock_ns:.1} ns here"
    ));
    let (fork_ns, getpid_ns) = memory_throughput::fork_check_ns(Duration::from_millis(300));
    notes.push(format!(
        "fork detection on the memory path (one PerProcess lookup per call: the pthread_atfork generation) \
         costs {fork_ns:.1} ns here; a getpid() per call would cost {getpid_ns:.1} ns"
    ));
    let mut rows: Vec<Row> = [RULE, RULE_ALWAYS_ALLOWED]
        .into_iter()
        .map(|text| {
            let rules: Rules = text.parse().expect("bench rule");
            let hits = memory_throughput::limiter_hits(
                &Limiter::memory(),
                &rules,
                KEY,
                MEMORY_WARM_UP,
                MEMORY_MEASURE,
            );
            let checks = memory_throughput::store_checks(
                &MemoryStore::unbounded(),
                &rules,
                KEY,
                MEMORY_WARM_UP,
                MEMORY_MEASURE,
            );
            notes.push(format!(
                "memory `{text}`: Limiter::hit allowed {}, MemoryStore::check allowed {} of the calls",
                percent(&hits),
                percent(&checks)
            ));
            Row {
                name: format!("memory hit `{text}`, 1 thread vs MemoryStore::check"),
                unit: Unit::PerSecond,
                measured: Some(hits.per_second),
                baseline: Some(checks.per_second),
                target: Target::AtLeast(MEMORY_TARGET_PER_SECOND),
            }
        })
        .collect();
    rows.push(hooked_memory_row());
    rows.push(metered_memory_row());
    rows
}

/// Memory hits with the OpenTelemetry metrics hook, an SDK meter provider installed (a reader that
/// exports nothing until asked), against the same hits with no hook: what metrics cost a decision
/// where there is no I/O to hide it.
fn metered_memory_row() -> Row {
    use opentelemetry::metrics::MeterProvider;
    let rules: Rules = RULE.parse().expect("bench rule");
    let bare =
        memory_throughput::limiter_hits(&Limiter::memory(), &rules, KEY, MEMORY_WARM_UP, MEMORY_MEASURE);
    let exporter = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
    let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
        .with_reader(opentelemetry_sdk::metrics::PeriodicReader::builder(exporter).build())
        .build();
    let metrics = ratelock::otel::Metrics::new(&provider.meter("ratelock"));
    let options = ratelock::LimiterOptions::default().with_hook(std::sync::Arc::new(metrics));
    let store = ratelock::Store::Memory(MemoryStore::unbounded());
    let metered_limiter = Limiter::with_store(store, options).expect("bench limiter");
    let metered =
        memory_throughput::limiter_hits(&metered_limiter, &rules, KEY, MEMORY_WARM_UP, MEMORY_MEASURE);
    Row {
        name: format!("memory hit `{RULE}`, OpenTelemetry metrics (SDK provider) vs no hook"),
        unit: Unit::PerSecond,
        measured: Some(metered.per_second),
        baseline: Some(bare.per_second),
        target: Target::None,
    }
}

/// A hook that counts decisions: what attaching one costs a memory hit, against none.
struct CountingHook(std::sync::atomic::AtomicU64);

impl ratelock::hook::Hook for CountingHook {
    fn on_decision(
        &self,
        _call: &ratelock::hook::LimitCall<'_>,
        _answer: &mut ratelock::Result<ratelock::Decision>,
        _how: ratelock::hook::Answered,
    ) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Memory hits with one counting hook attached, against the same hits with none (one run each, back
/// to back): the decision hook's cost where there is no I/O to hide it.
fn hooked_memory_row() -> Row {
    let rules: Rules = RULE.parse().expect("bench rule");
    let bare =
        memory_throughput::limiter_hits(&Limiter::memory(), &rules, KEY, MEMORY_WARM_UP, MEMORY_MEASURE);
    let options =
        ratelock::LimiterOptions::default().with_hook(std::sync::Arc::new(CountingHook(Default::default())));
    let store = ratelock::Store::Memory(MemoryStore::unbounded());
    let hooked_limiter = Limiter::with_store(store, options).expect("bench limiter");
    let hooked =
        memory_throughput::limiter_hits(&hooked_limiter, &rules, KEY, MEMORY_WARM_UP, MEMORY_MEASURE);
    Row {
        name: format!("memory hit `{RULE}`, one counting hook attached vs none"),
        unit: Unit::PerSecond,
        measured: Some(hooked.per_second),
        baseline: Some(bare.per_second),
        target: Target::None,
    }
}

fn percent(rate: &MemoryRate) -> String {
    format!("{:.1}%", rate.allowed_share * 100.0)
}

/// Overwrites bench/RESULTS.md with the machine facts, the table and the notes.
fn write_results(table: &str, rows: &[Row], notes: &[String], tables: &[(&str, String)]) {
    let mut text = String::from(
        "# ratelock-bench results\n\nWritten by `cargo run --release -p ratelock-bench` (`make bench`).\n\n",
    );
    for (label, value) in machine_info::describe() {
        text.push_str(&format!("- {label}: {value}\n"));
    }
    text.push('\n');
    text.push_str(&report::markdown_table(rows));
    text.push('\n');
    for note in notes {
        text.push_str(&format!("- {note}\n"));
    }
    for (title, markdown) in tables {
        text.push_str(&format!("\n## {title}\n\n{markdown}"));
    }
    text.push_str("\n<details><summary>as printed</summary>\n\n```text\n");
    text.push_str(table);
    text.push_str("```\n\n</details>\n");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/RESULTS.md");
    match std::fs::write(path, text) {
        Ok(()) => println!("\nwrote {path}"),
        Err(err) => eprintln!("\ncould not write {path}: {err}"),
    }
}
