//! Client clock jumps, injected through the core's clock (`ratelock::clock::jump_local_clock`, the
//! clock a `ClockSource::Local` limiter sends), never by faking the process clock: the history keeps
//! its own monotonic clock. With the server's clock deciding (the default), jumps of an hour either way
//! change nothing the checker can see. With the client's clock deciding, the same jumps let a window
//! open early, and the checker says so: why the server's clock is the default. (A test binary of its
//! own: the jump is process-wide.)

use std::collections::BTreeMap;
use std::time::Duration;

use ratelock::{ClockSource, Limiter, LimiterOptions, Rule, Rules, Store, StoreOptions};
use ratelock_testkit::history::{check_calls, check_limits, History, Op, Outcome};
use ratelock_testkit::RedisServer;

const RULES: [(&str, &str); 3] = [
    ("fixed", "20/second using fixed_window"),
    ("log", "20/second using sliding_log"),
    ("gcra", "20/second"),
];
const HOUR_US: i64 = 3_600_000_000;

/// Four clients hit every key for 2.4 s while the local clock jumps an hour back, then forward, then
/// back again, then home; returns the history and each key's rule.
fn run(clock: ClockSource) -> (History, BTreeMap<String, Rule>) {
    let server = RedisServer::start();
    let history = History::new();
    let parsed: Vec<(String, Rules)> = RULES
        .iter()
        .map(|(key, text)| (format!("{key}:{clock:?}"), text.parse().unwrap()))
        .collect();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stop_at = history.now_ns() + 2_400_000_000;
    let clients: Vec<_> = (0..4)
        .map(|n| {
            let options = LimiterOptions::default().with_clock(clock);
            let store = Store::new(&server.url(), &StoreOptions::default()).unwrap();
            let limiter = Limiter::with_store(store, options).unwrap();
            let (history, parsed) = (history.clone(), parsed.clone());
            runtime.spawn(async move {
                for round in 0..5_000 {
                    if history.now_ns() > stop_at {
                        break;
                    }
                    let (key, rules) = &parsed[round % parsed.len()];
                    let invoke_ns = history.now_ns();
                    let answer = limiter.hit(key, rules, 1).await;
                    history.push(Op {
                        client: format!("rust-{n}"),
                        op: "hit".into(),
                        key: key.clone(),
                        invoke_ns,
                        complete_ns: history.now_ns(),
                        outcome: if answer.is_ok() {
                            Outcome::Ok
                        } else {
                            Outcome::Fail
                        },
                        allowed: answer.ok().map(|d| d.allowed),
                        token: None,
                        timeout_ns: Some(1_000_000_000),
                    });
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            })
        })
        .collect();
    for jump in [-HOUR_US, 2 * HOUR_US, -2 * HOUR_US, HOUR_US] {
        std::thread::sleep(Duration::from_millis(500));
        ratelock::clock::jump_local_clock(jump);
    }
    runtime.block_on(async {
        for client in clients {
            client.await.unwrap();
        }
    });
    let rules = parsed
        .into_iter()
        .map(|(key, rules)| (key, rules[0].clone()))
        .collect();
    (history, rules)
}

#[test]
fn the_client_clock_does_not_matter_when_the_server_clock_decides() {
    let (history, rules) = run(ClockSource::Store);
    let ops = history.kept("clock jumps, server clock");
    let findings = check_limits(&ops, &rules, 0).and(check_calls(&ops, 200_000_000));
    let admitted = ops.iter().filter(|op| op.allowed == Some(true)).count();
    eprintln!(
        "server clock, local clock jumping ±1 h: {} ops, {admitted} admitted, {} violations",
        ops.len(),
        findings.violations.len()
    );
    assert!(admitted > 20);
    assert!(findings.violations.is_empty(), "{:#?}", findings.violations);

    let (history, rules) = run(ClockSource::Local);
    let ops = history.kept("clock jumps, client clock");
    let findings = check_limits(&ops, &rules, 0);
    eprintln!(
        "client clock deciding, the same jumps: {} violations, e.g. {:?}",
        findings.violations.len(),
        findings.violations.first()
    );
    assert!(
        !findings.violations.is_empty(),
        "with the client's clock deciding, a jump opens windows early, and the checker sees it"
    );
}
