//! The short seeded fault suite: Rust clients through the fault proxy while a seeded plan of every
//! proxy fault plays, their histories read by the checker. Every named invariant holds (0 violations),
//! and the checker catches the bugs planted in the last two tests. A failing run prints its seed; run
//! it again with `RATELOCK_FAULT_SEED=<seed>`.

use std::collections::BTreeMap;
use std::time::Duration;

use ratelock_testkit::fault::scenarios::{
    hold_clients, limit_clients, limit_clients_into, lock_clients, FencedResource, LockKind, RULES,
};
use ratelock_testkit::fault::server::{
    cluster_failover, memory_pressure, sentinel_failover, server_faults_keeping_state, server_restarted_empty,
};
use ratelock_testkit::fault::{FaultKind, FaultPlan, FaultProxy, EVERY_FAULT};
use ratelock_testkit::history::{check_calls, check_holds, check_limits, check_locks, History, Op, Outcome};
use ratelock_testkit::{RedisCluster, RedisSentinels, RedisServer};

const TIMEOUT: Duration = Duration::from_millis(200);
const HOLD: Duration = Duration::from_millis(3);

fn seed() -> u64 {
    std::env::var("RATELOCK_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_125)
}

/// Checks a limiter run and a lock run under one kind of fault (`losses`: how often it lost all
/// state), prints their figures under `label`, and asserts that no invariant broke.
fn assert_limits_and_locks(
    label: &str,
    (limits, rules): (History, BTreeMap<String, ratelock::Rule>),
    locks: History,
    ttl: Duration,
    losses: u64,
) {
    let slack = TIMEOUT.as_nanos() as u64;
    let (ops, lock_ops) = (
        limits.kept(&format!("{label} limits")),
        locks.kept(&format!("{label} locks")),
    );
    let limits = check_limits(&ops, &rules, losses).and(check_calls(&ops, slack));
    let locks = check_locks(&lock_ops, ttl.as_nanos() as u64, losses == 0).and(check_calls(&lock_ops, slack));
    let admitted = ops.iter().filter(|op| op.allowed == Some(true)).count();
    eprintln!(
        "{label}: limits {} ops, {} ambiguous, {admitted} admitted, slowest {:.1} ms; locks {} ops, {} ambiguous, slowest {:.1} ms; violations {} + {}",
        ops.len(),
        limits.ambiguous,
        limits.slowest_ns as f64 / 1e6,
        lock_ops.len(),
        locks.ambiguous,
        locks.slowest_ns as f64 / 1e6,
        limits.violations.len(),
        locks.violations.len()
    );
    assert!(admitted > 20, "{label}: the clients ran");
    assert!(limits.violations.is_empty(), "{label}: {:#?}", limits.violations);
    assert!(locks.violations.is_empty(), "{label}: {:#?}", locks.violations);
}

#[test]
fn limits_hold_their_bounds_under_every_proxy_fault() {
    let seed = seed();
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 2, seed);
    let plan = FaultPlan::seeded(seed, 2, &EVERY_FAULT, 10, Duration::from_millis(400));
    let (history, rules) = limit_clients(&proxy.urls(), plan.on(&proxy), &RULES, 2, 4_000, TIMEOUT);
    let ops = history.kept("limits_hold_their_bounds_under_every_proxy_fault");
    let findings = check_limits(&ops, &rules, 0).and(check_calls(&ops, TIMEOUT.as_nanos() as u64));
    let admitted = ops.iter().filter(|op| op.allowed == Some(true)).count();
    eprintln!(
        "limits, seed {seed}: {} operations, {} ambiguous, {admitted} admitted, slowest {:.1} ms, {} violations",
        ops.len(),
        findings.ambiguous,
        findings.slowest_ns as f64 / 1e6,
        findings.violations.len()
    );
    assert!(
        findings.operations > 100 && admitted > 20,
        "the clients ran: {findings:?}"
    );
    assert!(
        findings.violations.is_empty(),
        "seed {seed}: {:#?}",
        findings.violations
    );
}

#[test]
fn one_lock_holder_at_a_time_under_every_proxy_fault() {
    let seed = seed() + 1;
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 2, seed);
    let plan = FaultPlan::seeded(seed, 2, &EVERY_FAULT, 10, Duration::from_millis(400));
    let ttl = Duration::from_millis(300);
    let history = lock_clients(
        &proxy.urls(),
        plan.on(&proxy),
        "faults:job",
        2,
        400,
        ttl,
        Duration::from_millis(3),
        TIMEOUT,
    );
    let ops = history.kept("one_lock_holder_at_a_time_under_every_proxy_fault");
    let findings =
        check_locks(&ops, ttl.as_nanos() as u64, true).and(check_calls(&ops, TIMEOUT.as_nanos() as u64));
    let grants = ops
        .iter()
        .filter(|op| op.op == "acquire" && op.outcome == Outcome::Ok)
        .count();
    eprintln!(
        "locks, seed {seed}: {} operations, {} ambiguous, {grants} grants, slowest {:.1} ms, {} violations",
        ops.len(),
        findings.ambiguous,
        findings.slowest_ns as f64 / 1e6,
        findings.violations.len()
    );
    assert!(grants > 20, "the clients took turns: {findings:?}");
    assert!(
        findings.violations.is_empty(),
        "seed {seed}: {:#?}",
        findings.violations
    );
}

#[test]
fn limits_and_locks_hold_under_server_faults_that_keep_state() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 2, 11);
    let urls = proxy.urls();
    let limits = limit_clients(
        &urls,
        server_faults_keeping_state(&server),
        &RULES,
        2,
        3_000,
        TIMEOUT,
    );
    let ttl = Duration::from_millis(300);
    let faults = server_faults_keeping_state(&server);
    let locks = lock_clients(&urls, faults, "faults:server", 2, 400, ttl, HOLD, TIMEOUT);
    assert_limits_and_locks("server faults keeping state", limits, locks, ttl, 0);
}

#[test]
fn after_a_restart_without_persistence_limits_allow_one_extra_limit_and_tokens_still_rise() {
    let mut server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 2, 12);
    let urls = proxy.urls();
    let limits = limit_clients(
        &urls,
        server_restarted_empty(&mut server),
        &RULES,
        2,
        3_000,
        TIMEOUT,
    );
    let ttl = Duration::from_millis(500);
    let faults = server_restarted_empty(&mut server);
    let locks = lock_clients(&urls, faults, "faults:restart", 2, 400, ttl, HOLD, TIMEOUT);
    assert_limits_and_locks("restart without persistence", limits, locks, ttl, 1);
}

#[test]
fn a_sentinel_failover_loses_state_once_and_tokens_still_rise() {
    let mut setup = RedisSentinels::start();
    let limits = limit_clients(
        &[setup.url()],
        sentinel_failover(&mut setup),
        &RULES,
        2,
        4_000,
        TIMEOUT,
    );
    let mut setup = RedisSentinels::start();
    let ttl = Duration::from_millis(500);
    let (url, faults) = ([setup.url()], sentinel_failover(&mut setup));
    let locks = lock_clients(&url, faults, "faults:failover", 2, 400, ttl, HOLD, TIMEOUT);
    assert_limits_and_locks("sentinel failover", limits, locks, ttl, 1);
}

#[test]
fn a_cluster_failover_loses_state_at_most_once_and_tokens_still_rise() {
    let cluster = RedisCluster::start(3, 1);
    let limits = limit_clients(
        &[cluster.url()],
        cluster_failover(&cluster),
        &RULES,
        2,
        4_000,
        TIMEOUT,
    );
    let cluster = RedisCluster::start(3, 1);
    let ttl = Duration::from_millis(500);
    let locks = lock_clients(
        &[cluster.url()],
        cluster_failover(&cluster),
        "faults:cluster",
        2,
        400,
        ttl,
        HOLD,
        TIMEOUT,
    );
    assert_limits_and_locks("cluster failover", limits, locks, ttl, 1);
}

#[test]
fn evicted_limit_keys_count_as_losses_and_oom_refusals_admit_nothing_extra() {
    let keys: Vec<&str> = RULES.iter().map(|(key, _)| *key).collect();
    for policy in ["allkeys-lru", "allkeys-random", "noeviction"] {
        let server = RedisServer::start();
        let history = History::new();
        let url = vec![server.url()];
        let faults = memory_pressure(&server, policy, &history, &keys);
        let rules = limit_clients_into(&history, &url, faults, &RULES, 2, 4_000, TIMEOUT);
        let ops = history.kept("evicted_limit_keys_count_as_losses_and_oom_refusals_admit_nothing_extra");
        let findings = check_limits(&ops, &rules, 0).and(check_calls(&ops, TIMEOUT.as_nanos() as u64));
        let losses = ops.iter().filter(|op| op.op == "state_loss").count();
        let refused = ops
            .iter()
            .filter(|op| op.op == "hit" && op.outcome != Outcome::Ok)
            .count();
        let admitted = ops.iter().filter(|op| op.allowed == Some(true)).count();
        eprintln!(
            "maxmemory {policy}: {} ops, {admitted} admitted, {refused} refused, {losses} limit keys evicted, {} violations",
            ops.len(),
            findings.violations.len()
        );
        assert!(admitted > 20, "the clients ran");
        assert!(
            findings.violations.is_empty(),
            "{policy}: {:#?}",
            findings.violations
        );
    }
}

/// Every lock kind but the plain lock (above): holds of each kind never break their sharing rule.
const KINDS: [(LockKind, u64); 3] = [
    (LockKind::Semaphore(2), 2),
    (LockKind::Fair, 1),
    (LockKind::ReadWrite, 1),
];

#[test]
fn semaphores_fair_and_read_write_locks_hold_under_every_proxy_fault_and_a_restart() {
    let ttl = Duration::from_millis(300);
    for (round, (kind, permits)) in KINDS.into_iter().enumerate() {
        let seed = seed() + 10 + round as u64;
        let mut server = RedisServer::start();
        let proxy = FaultProxy::start(server.port(), 2, seed);
        let plan = FaultPlan::seeded(seed, 2, &EVERY_FAULT, 8, Duration::from_millis(400));
        let hold = Duration::from_millis(3);
        let urls = proxy.urls();
        let history = hold_clients(
            &urls,
            plan.on(&proxy),
            kind,
            "faults:kinds",
            2,
            400,
            ttl,
            hold,
            TIMEOUT,
        );
        let ops =
            history.kept("semaphores_fair_and_read_write_locks_hold_under_every_proxy_fault_and_a_restart");
        let kept = check_holds(&ops, ttl.as_nanos() as u64, permits, true)
            .and(check_calls(&ops, TIMEOUT.as_nanos() as u64));
        let restart = server_restarted_empty(&mut server);
        let history = hold_clients(
            &urls,
            restart,
            kind,
            "faults:kinds-restart",
            2,
            400,
            ttl,
            hold,
            TIMEOUT,
        );
        let lost_ops = history
            .kept("semaphores_fair_and_read_write_locks_hold_under_every_proxy_fault_and_a_restart lost");
        let lost = check_holds(&lost_ops, ttl.as_nanos() as u64, permits, false)
            .and(check_calls(&lost_ops, TIMEOUT.as_nanos() as u64));
        let grants = |ops: &[Op]| {
            ops.iter()
                .filter(|op| op.op.starts_with("acquire") && op.outcome == Outcome::Ok)
                .count()
        };
        eprintln!(
            "{kind:?}, seed {seed}: plan {} ops, {} grants, {} ambiguous; restart {} ops, {} grants; violations {} + {}",
            ops.len(),
            grants(&ops),
            kept.ambiguous,
            lost_ops.len(),
            grants(&lost_ops),
            kept.violations.len(),
            lost.violations.len()
        );
        assert!(grants(&ops) > 20, "{kind:?}: the clients took turns");
        assert!(
            kept.violations.is_empty(),
            "{kind:?}, seed {seed}: {:#?}",
            kept.violations
        );
        assert!(
            lost.violations.is_empty(),
            "{kind:?}, seed {seed}: {:#?}",
            lost.violations
        );
    }
}

#[test]
fn the_checker_catches_a_semaphore_with_one_permit_too_many() {
    // Planted bug: three permits handed out where two were promised.
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 4);
    let plan = FaultPlan::seeded(4, 1, &[FaultKind::Latency], 1, Duration::from_millis(300));
    let ttl = Duration::from_millis(300);
    let history = hold_clients(
        &proxy.urls(),
        plan.on(&proxy),
        LockKind::Semaphore(3),
        "faults:permits",
        6,
        100,
        ttl,
        Duration::from_millis(20),
        TIMEOUT,
    );
    let findings = check_holds(
        &history.kept("the_checker_catches_a_semaphore_with_one_permit_too_many"),
        ttl.as_nanos() as u64,
        2,
        true,
    );
    assert!(
        findings
            .violations
            .iter()
            .any(|v| v.contains("3 permits certainly held")),
        "{:?}",
        findings.violations.first()
    );
    eprintln!("planted extra permit: {}", findings.violations[0]);
}

#[test]
fn the_checker_catches_a_limit_one_higher_than_promised() {
    // Planted bug: the clients run a limit of 21/second while the checker holds them to 20/second,
    // as an off-by-one in a bound would. Without faults, so every admission is certain.
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 3);
    let plan = FaultPlan::seeded(3, 1, &[FaultKind::Latency], 1, Duration::from_millis(50));
    let (history, _) = limit_clients(
        &proxy.urls(),
        plan.on(&proxy),
        &[("log", "21/second using sliding_log")],
        1,
        200,
        TIMEOUT,
    );
    let promised = BTreeMap::from([(
        "log".to_owned(),
        "20/second using sliding_log".parse::<ratelock::Rules>().unwrap()[0].clone(),
    )]);
    let findings = check_limits(
        &history.kept("the_checker_catches_a_limit_one_higher_than_promised"),
        &promised,
        0,
    );
    assert!(
        !findings.violations.is_empty(),
        "the checker must see 21 admissions in one second"
    );
    eprintln!("planted off-by-one: {}", findings.violations[0]);
}

#[test]
fn the_checker_catches_two_holders_and_a_resource_that_ignores_tokens() {
    // Planted bug 1: two clients whose lock stores are different servers (a split brain) hold the
    // "same" lock at once.
    let (first, second) = (RedisServer::start(), RedisServer::start());
    let history = History::new();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        for (client, server) in [("a", &first), ("b", &second)] {
            let store = ratelock::Store::connect(&server.url(), &Default::default())
                .await
                .unwrap();
            let lock = ratelock::DistributedLock::new(&store, "split", Default::default()).unwrap();
            let invoke_ns = history.now_ns();
            let guard = lock.acquire(Duration::from_secs(1)).await.unwrap();
            history.push(Op {
                client: client.into(),
                op: "acquire".into(),
                key: "split".into(),
                invoke_ns,
                complete_ns: history.now_ns(),
                outcome: Outcome::Ok,
                allowed: None,
                token: Some(guard.fencing_token()),
                timeout_ns: None,
            });
            std::mem::forget(guard);
        }
    });
    let findings = check_locks(
        &history.kept("the_checker_catches_two_holders_and_a_resource_that_ignores_tokens"),
        30_000_000_000,
        true,
    );
    assert!(
        findings
            .violations
            .iter()
            .any(|v| v.contains("both certainly held")),
        "{findings:?}"
    );
    // Planted bug 2: a resource log in which a lower token was taken after a higher one.
    let log = History::new();
    let resource = FencedResource::default();
    assert!(resource.write(&log, "a", "r", 10));
    assert!(
        !resource.write(&log, "b", "r", 9),
        "the real resource refuses the stale token"
    );
    let mut ops = log.kept("the_checker_catches_two_holders_and_a_resource_that_ignores_tokens");
    ops[1].allowed = Some(true); // as a resource that ignores tokens would have answered
    let findings = check_locks(&ops, 1, true);
    assert!(
        findings
            .violations
            .iter()
            .any(|v| v.contains("took token 9 after token 10")),
        "{findings:?}"
    );
}
