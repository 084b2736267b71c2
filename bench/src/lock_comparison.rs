//! The lock half of the bench: uncontended acquire+release pairs per second beside redis-benchmark
//! running the same two scripts on the same server, and the hand-off latency of one contended lock.

use crate::pairing::Pairing;
use std::time::Duration;

use ratelock::store::ServerCode;
use ratelock::{DistributedLock, Released, Store, StoreOptions};
use ratelock_testkit::RedisServer;

use crate::client_throughput::Window;
use crate::lock_scripts::{self, ScriptWords, ACQUIRE_SCRIPT, RELEASE_SCRIPT};
use crate::redis_benchmark::{self, BenchmarkRun};
use crate::redis_comparison::{query, query_tagged, requests_lasting};
use crate::report::{Row, Target, Unit};
use crate::{lock_handoff, lock_throughput};

/// The lock of the one-task run; the 64 tasks use `<NAME>:<task>`.
const NAME: &str = "bench:lock";
/// The baseline's acquire takes `rl:{bench:lock-rb:<random>}:lock`: always free, never the client's.
const RANDOM_NAME: &str = "bench:lock-rb:__rand_int__";
const RANDOM_PATTERN: &str = "rl:{bench:lock-rb:*";
/// The baseline's release runs on this lock, which nobody ever holds.
const ABSENT_NAME: &str = "bench:lock-absent";
/// redis-benchmark `-r`: each `__rand_int__` becomes one of this many 12-digit numbers.
const KEYSPACE: u64 = 100_000_000;
const CLIENT_WINDOW: Window = Window {
    warm_up: Duration::from_millis(300),
    measure: Duration::from_secs(2),
};
/// How long each of the two redis-benchmark runs of a pairing should take.
const BASELINE_SECONDS: f64 = 1.5;
const HANDOFF_WARM_UP: usize = 20;
const HANDOFF_ROUNDS: usize = 300;
/// The hand-off target: at most two round trips plus this.
const HANDOFF_SLACK_US: f64 = 1000.0;

const PAIRINGS: [Pairing; 2] = [
    Pairing {
        tasks: 1,
        clients: 1,
        pipeline: 1,
        target_ratio: 0.8,
    },
    Pairing {
        tasks: 64,
        clients: 50,
        pipeline: 16,
        target_ratio: 0.8,
    },
];

/// The redis-benchmark commands of a pairing: one acquire, one release.
struct BaselineCalls {
    acquire: ScriptWords,
    release: ScriptWords,
}

pub async fn rows(server: &RedisServer, notes: &mut Vec<String>) -> Vec<Row> {
    // EVALSHA, as the baseline sends (not the Functions route the store takes by default).
    let options = StoreOptions::default().with_server_code(ServerCode::Scripts);
    let store = Store::connect(&server.url(), &options)
        .await
        .expect("connect a lock store to the bench redis-server");
    let mut connection = server.connection();
    let calls = check_client_sends(&store, &mut connection).await;
    notes.push(format!(
        "lock baseline, acquire: redis-benchmark -n N -c C [-P P] -r {KEYSPACE} {}",
        calls.acquire.display()
    ));
    notes.push(format!(
        "lock baseline, release: redis-benchmark -n N -c C [-P P] {}",
        calls.release.display()
    ));
    notes.push(
        "lock baseline: each acquire takes a fresh lease (`__rand_int__` is a random 12-digit number) and \
         bumps the one fencing counter of `bench:lock`, as the client's acquire does; each release finds \
         no lease (lock_release.lua's not-held path: HMGET, reply), so it skips the DEL and PUBLISH the \
         client's real release runs and is a little cheaper; pair rate = 1 / (1/acquire + 1/release)"
            .to_owned(),
    );

    let mut rows = Vec::new();
    for pairing in &PAIRINGS {
        let names: Vec<String> = if pairing.tasks == 1 {
            vec![NAME.to_owned()]
        } else {
            (0..pairing.tasks).map(|task| format!("{NAME}:{task}")).collect()
        };
        let measured = lock_throughput::pairs_per_second(&store, &names, CLIENT_WINDOW).await;
        if measured.surprises > 0 {
            notes.push(format!(
                "lock pairs, {} tasks: {} pairs found the lock held or did not release it",
                pairing.tasks, measured.surprises
            ));
        }
        let baseline = baseline_pairs(server.port(), &calls, pairing, measured.per_second, notes);
        clean_random_leases(&mut connection);
        rows.push(Row {
            name: format!(
                "lock acquire+release, {} task{} vs redis-benchmark {} (2 EVALSHA)",
                pairing.tasks,
                if pairing.tasks == 1 { "" } else { "s" },
                describe(pairing)
            ),
            unit: Unit::PerSecond,
            measured: Some(measured.per_second),
            baseline,
            target: Target::RatioAtLeast(pairing.target_ratio),
        });
    }

    let handoff =
        lock_handoff::measure(&server.url(), &mut connection, HANDOFF_WARM_UP, HANDOFF_ROUNDS).await;
    rows.extend(handoff_rows(&handoff, notes));
    rows
}

/// Checks that the client runs exactly core/lua/lock_acquire.lua and lock_release.lua on the keys
/// bench/ computes, loads both scripts, checks the baseline's calls, and returns them.
async fn check_client_sends(store: &Store, connection: &mut redis::Connection) -> BaselineCalls {
    let acquire_sha = redis::Script::new(&ACQUIRE_SCRIPT).get_hash().to_owned();
    let release_sha = redis::Script::new(&RELEASE_SCRIPT).get_hash().to_owned();
    let [lease, fence, _] = lock_scripts::keys_of(NAME);
    let lock = DistributedLock::new(store, NAME, lock_throughput::options()).expect("bench lock options");
    let owner = lock.owner_token().to_owned();

    let guard = lock
        .try_acquire()
        .await
        .expect("try_acquire on the bench redis-server")
        .expect("the bench lock is free");
    let holder: Option<String> = query(connection, redis::cmd("HGET").arg(&lease).arg("o"));
    assert_eq!(
        holder.as_deref(),
        Some(owner.as_str()),
        "the lease is not where bench/ looks"
    );
    let mut keys: Vec<String> = query(connection, redis::cmd("KEYS").arg("rl:{bench:lock}:*"));
    keys.sort();
    assert_eq!(
        keys,
        [fence.as_str(), lease.as_str()],
        "the lock wrote other keys"
    );
    let released = guard.release().await.expect("release on the bench redis-server");
    assert_eq!(released, Released::Released);
    let keys: Vec<String> = query(connection, redis::cmd("KEYS").arg("rl:{bench:lock}:*"));
    assert_eq!(
        keys,
        [fence.as_str()],
        "the release left other keys than the fencing counter"
    );
    let loaded: Vec<bool> = query(
        connection,
        redis::cmd("SCRIPT")
            .arg("EXISTS")
            .arg(&acquire_sha)
            .arg(&release_sha),
    );
    assert_eq!(
        loaded,
        [true, true],
        "the client does not run core/lua/lock_acquire.lua and lock_release.lua as bench/ reads them"
    );

    let loaded_acquire = redis_benchmark::load_script(connection, &ACQUIRE_SCRIPT);
    let loaded_release = redis_benchmark::load_script(connection, &RELEASE_SCRIPT);
    assert_eq!(loaded_acquire, acquire_sha, "SCRIPT LOAD returned another SHA1");
    assert_eq!(loaded_release, release_sha, "SCRIPT LOAD returned another SHA1");

    let ttl_us = lock_throughput::options().ttl.as_micros();
    let [random_lease, ..] = lock_scripts::keys_of(RANDOM_NAME);
    let [absent_lease, _, absent_channel] = lock_scripts::keys_of(ABSENT_NAME);
    let calls = BaselineCalls {
        acquire: lock_scripts::acquire(&acquire_sha, &random_lease, &fence, &owner, ttl_us),
        release: lock_scripts::release(&release_sha, &absent_lease, &owner, &absent_channel, 0),
    };

    // The baseline's acquire on one concrete random key is a grant, and that lease releases for real.
    let sample_lease = random_lease.replace("__rand_int__", "000000000042");
    let sample = lock_scripts::acquire(&acquire_sha, &sample_lease, &fence, &owner, ttl_us);
    let reply = query_tagged(connection, redis::cmd("EVALSHA").arg(&sample.command()[1..]));
    assert!(
        reply.len() == 3 && reply[0] == 1,
        "the baseline acquire is not a grant: {reply:?}"
    );
    let sample = lock_scripts::release(&release_sha, &sample_lease, &owner, &absent_channel, reply[1]);
    let reply = query_tagged(connection, redis::cmd("EVALSHA").arg(&sample.command()[1..]));
    assert_eq!(reply, [1, 0], "the baseline lease does not release");
    let reply = query_tagged(
        connection,
        redis::cmd("EVALSHA").arg(&calls.release.command()[1..]),
    );
    assert_eq!(
        reply,
        [0, 0],
        "the baseline release does not take the not-held path"
    );
    calls
}

/// redis-benchmark's acquire and release rates for `pairing`, combined into a pair rate.
fn baseline_pairs(
    port: u16,
    calls: &BaselineCalls,
    pairing: &Pairing,
    client_pairs: f64,
    notes: &mut Vec<String>,
) -> Option<f64> {
    // One call of the two takes about half a pair's time.
    let requests = requests_lasting(client_pairs * 2.0, BASELINE_SECONDS);
    let mut rate = |call: &ScriptWords, keyspace: Option<u64>| {
        let run = BenchmarkRun {
            requests,
            clients: pairing.clients,
            pipeline: pairing.pipeline,
            keyspace,
        };
        redis_benchmark::requests_per_second(port, &call.command(), &run)
            .map_err(|problem| notes.push(problem))
            .ok()
    };
    let acquire = rate(&calls.acquire, Some(KEYSPACE))?;
    let release = rate(&calls.release, None)?;
    let pairs = 1.0 / (1.0 / acquire + 1.0 / release);
    notes.push(format!(
        "lock redis-benchmark {} -n {requests}: acquire {acquire:.0}/s, release {release:.0}/s, pair {pairs:.0}/s",
        describe(pairing)
    ));
    Some(pairs)
}

/// Deletes the leases the baseline's acquire runs left (they would otherwise expire during later runs).
fn clean_random_leases(connection: &mut redis::Connection) {
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = query(
            connection,
            redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(RANDOM_PATTERN)
                .arg("COUNT")
                .arg(10_000),
        );
        if !keys.is_empty() {
            let _: i64 = query(connection, redis::cmd("UNLINK").arg(keys));
        }
        if next == 0 {
            return;
        }
        cursor = next;
    }
}

fn handoff_rows(handoff: &lock_handoff::HandOff, notes: &mut Vec<String>) -> Vec<Row> {
    let round_trip = figure(handoff.round_trip_us);
    notes.push(format!(
        "lock hand-off: {} rounds between two Stores on one lock (lease 10 s, wait up to 5 s), timed from \
         just before the holder's release() to the waiter's acquire() returning; baseline = median of one \
         DistributedLock::state (one EVALSHA) on the same client; waiter not seen parked in {} rounds",
        handoff.rounds, handoff.not_parked
    ));
    for problem in handoff.problems.iter().take(5) {
        notes.push(format!("lock hand-off problem: {problem}"));
    }
    if handoff.problems.len() > 5 {
        notes.push(format!(
            "lock hand-off: {} problems in all",
            handoff.problems.len()
        ));
    }
    vec![
        Row {
            name: "lock hand-off median vs one round trip".to_owned(),
            unit: Unit::Micros,
            measured: figure(handoff.median_us),
            baseline: round_trip,
            target: match round_trip {
                Some(rtt) => Target::AtMost(2.0 * rtt + HANDOFF_SLACK_US),
                None => Target::None,
            },
        },
        Row {
            name: "lock hand-off p99 vs one round trip".to_owned(),
            unit: Unit::Micros,
            measured: figure(handoff.p99_us),
            baseline: round_trip,
            target: Target::None,
        },
    ]
}

fn figure(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
}

fn describe(pairing: &Pairing) -> String {
    BenchmarkRun {
        requests: 0,
        clients: pairing.clients,
        pipeline: pairing.pipeline,
        keyspace: None,
    }
    .describe()
}
