//! The Redis half of the bench: the client's GCRA hit rate beside redis-benchmark's rate for the
//! same EVALSHA on the same server, and the MEMORY USAGE of the key one hit leaves behind.

use crate::pairing::Pairing;
use std::time::Duration;

use ratelock::{Limiter, Rules};
use ratelock_testkit::RedisServer;

use crate::client_throughput::{self, Window};
use crate::redis_benchmark::{self, BenchmarkRun};
use crate::report::{Row, Target, Unit};
use crate::script_call::{ScriptCall, LIMIT_SCRIPT};

const CLIENT_WINDOW: Window = Window {
    warm_up: Duration::from_millis(500),
    measure: Duration::from_secs(3),
};
/// How long each redis-benchmark run should take, sized from the client's rate just measured.
const BASELINE_SECONDS: f64 = 3.0;
const MEMORY_USAGE_TARGET_BYTES: f64 = 80.0;
/// A shorter user key and rule id than the bench's, for comparison (Redis rounds allocations up).
const TYPICAL_KEY: &str = "user:42";
const TYPICAL_RULE: &str = "100/minute";
/// A user key long enough to push the storage key past jemalloc's 32-byte class.
const LONG_KEY: &str = "tenant:acme-corporation:user:1234567";

const PAIRINGS: [Pairing; 2] = [
    Pairing {
        tasks: 1,
        clients: 1,
        pipeline: 1,
        target_ratio: 0.85,
    },
    Pairing {
        tasks: 64,
        clients: 50,
        pipeline: 16,
        target_ratio: 0.8,
    },
];

pub async fn rows(
    server: &RedisServer,
    key: &'static str,
    rules: &Rules,
    notes: &mut Vec<String>,
) -> Vec<Row> {
    let call = ScriptCall::hit("rl", key, &rules[0]);
    let mut connection = server.connection();
    // EVALSHA, as the baseline sends (not the Functions route the store takes by default).
    let limiter = Limiter::connect(&format!("{}?server_code=scripts", server.url()))
        .await
        .expect("connect the limiter to the bench redis-server");
    let sha = check_limiter_sends(&call, &limiter, rules, key, &mut connection).await;
    notes.push(format!(
        "baseline: redis-benchmark -n N -c C [-P P] {}",
        call.display(&sha)
    ));

    let mut command = vec!["EVALSHA".to_owned()];
    command.extend(call.evalsha_args(&sha));
    let mut rows = Vec::new();
    for pairing in &PAIRINGS {
        let measured =
            client_throughput::hits_per_second(&limiter, rules, key, pairing.tasks, CLIENT_WINDOW).await;
        let run = BenchmarkRun {
            requests: requests_lasting(measured, BASELINE_SECONDS),
            clients: pairing.clients,
            pipeline: pairing.pipeline,
            keyspace: None,
        };
        let baseline = match redis_benchmark::requests_per_second(server.port(), &command, &run) {
            Ok(rate) => Some(rate),
            Err(problem) => {
                notes.push(problem);
                None
            }
        };
        notes.push(format!("redis-benchmark {}: -n {}", run.describe(), run.requests));
        rows.push(Row {
            name: format!(
                "Redis GCRA hit, {} task{} vs redis-benchmark {}",
                pairing.tasks,
                if pairing.tasks == 1 { "" } else { "s" },
                run.describe()
            ),
            unit: Unit::PerSecond,
            measured: Some(measured),
            baseline,
            target: Target::RatioAtLeast(pairing.target_ratio),
        });
    }
    // Measured under a rule whose state lives long enough to inspect (the benchmark rule's lives 1 ms).
    let typical_rules: Rules = TYPICAL_RULE.parse().expect("typical rule");
    rows.push(memory_usage_row(&limiter, key, &typical_rules, &mut connection, notes).await);
    rows.push(memory_usage_row(&limiter, TYPICAL_KEY, &typical_rules, &mut connection, notes).await);
    let mut long = memory_usage_row(&limiter, LONG_KEY, &typical_rules, &mut connection, notes).await;
    long.target = Target::None;
    rows.push(long);
    rows
}

/// Checks that the limiter runs exactly core/lua/limit.lua and writes exactly `call.key()`, and that
/// the call redis-benchmark will send is accepted; loads the script and returns its SHA1.
async fn check_limiter_sends(
    call: &ScriptCall,
    limiter: &Limiter,
    rules: &Rules,
    key: &str,
    connection: &mut redis::Connection,
) -> String {
    let local_sha = redis::Script::new(&LIMIT_SCRIPT).get_hash().to_owned();
    limiter.hit(key, rules, 1).await.expect("first hit");
    let loaded_by_limiter: Vec<bool> = query(connection, redis::cmd("SCRIPT").arg("EXISTS").arg(&local_sha));
    assert_eq!(
        loaded_by_limiter,
        [true],
        "the limiter does not run core/lua/limit.lua as bench/ reads it"
    );
    let keys: Vec<String> = query(connection, redis::cmd("KEYS").arg("*"));
    assert_eq!(
        keys,
        [call.key()],
        "the limiter wrote other keys than the benchmark will use"
    );

    let sha = redis_benchmark::load_script(connection, &LIMIT_SCRIPT);
    assert_eq!(sha, local_sha, "SCRIPT LOAD returned another SHA1");
    let reply = query_tagged(connection, redis::cmd("EVALSHA").arg(call.evalsha_args(&sha)));
    // The reason (0: the rules decided), then the rule's five figures, allowed first.
    assert!(
        reply.len() == 6 && reply[0] == 0 && reply[1] == 1,
        "the benchmark call is not an allowed hit: {reply:?}"
    );
    sha
}

/// MEMORY USAGE of the rule's key right after one hit on a fresh key.
async fn memory_usage_row(
    limiter: &Limiter,
    key: &str,
    rules: &Rules,
    connection: &mut redis::Connection,
    notes: &mut Vec<String>,
) -> Row {
    let storage_key = ScriptCall::hit("rl", key, &rules[0]).key().to_owned();
    let _: i64 = query(connection, redis::cmd("DEL").arg(&storage_key));
    limiter.hit(key, rules, 1).await.expect("hit before MEMORY USAGE");
    let bytes: Option<u64> = query(connection, redis::cmd("MEMORY").arg("USAGE").arg(&storage_key));
    let encoding: String = query(connection, redis::cmd("OBJECT").arg("ENCODING").arg(&storage_key));
    let value: String = query(connection, redis::cmd("GET").arg(&storage_key));
    notes.push(format!(
        "key `{storage_key}` ({} bytes) holds `{value}` (encoding {encoding}) with a PX expiry",
        storage_key.len()
    ));
    Row {
        name: format!("Redis MEMORY USAGE, key `{key}` rule `{}`", rules[0]),
        unit: Unit::Bytes,
        measured: bytes.map(|b| b as f64),
        baseline: None,
        target: Target::AtMost(MEMORY_USAGE_TARGET_BYTES),
    }
}

/// A request count that takes about `seconds` at `rate`, within sane bounds.
pub fn requests_lasting(rate: f64, seconds: f64) -> u64 {
    let requests = (rate * seconds).clamp(10_000.0, 3_000_000.0) as u64;
    requests / 1000 * 1000
}

pub fn query<T: redis::FromRedisValue>(connection: &mut redis::Connection, cmd: &mut redis::Cmd) -> T {
    cmd.query(connection)
        .unwrap_or_else(|e| panic!("bench redis command failed: {e}"))
}

/// The integers of a tagged script call's reply (a table reply comes back with the call tag appended:
/// it is checked to be there and taken off).
pub fn query_tagged(connection: &mut redis::Connection, cmd: &mut redis::Cmd) -> Vec<i64> {
    let mut reply: Vec<redis::Value> = query(connection, cmd);
    assert!(
        matches!(reply.pop(), Some(redis::Value::BulkString(_))),
        "a tagged reply without its tag: {reply:?}"
    );
    reply
        .into_iter()
        .map(|item| match item {
            redis::Value::Int(n) => n,
            other => panic!("a tagged reply with {other:?} among its integers"),
        })
        .collect()
}
