//! Faults of the server itself, as the fault drivers of a scenario: some keep its state (a freeze,
//! flushed scripts, killed connections), some lose it (kill -9 and a restart without persistence; a
//! Sentinel failover, whose replica may not have had the last writes).

use std::time::Duration;

use super::scenarios::Faults;
use crate::history::{History, Op, Outcome};
use crate::{RedisCluster, RedisSentinels, RedisServer};

/// Faults of the server that keep its state, one after another: frozen (SIGSTOP, then SIGCONT), its
/// scripts flushed (SCRIPT FLUSH), its function library flushed (FUNCTION FLUSH), every client's
/// connection killed (CLIENT KILL), frozen again.
pub fn server_faults_keeping_state(server: &RedisServer) -> Faults<impl FnOnce() + '_> {
    let pause = |ms| std::thread::sleep(Duration::from_millis(ms));
    Faults {
        length: Duration::from_millis(1_700),
        play: move || {
            pause(200);
            server.pause();
            pause(300);
            server.resume();
            pause(200);
            let _: () = redis::cmd("SCRIPT")
                .arg("FLUSH")
                .query(&mut server.connection())
                .unwrap();
            pause(100);
            let _: () = redis::cmd("FUNCTION")
                .arg("FLUSH")
                .query(&mut server.connection())
                .unwrap();
            pause(100);
            server.kill_clients();
            pause(200);
            server.pause();
            pause(150);
            server.resume();
            pause(450);
        },
    }
}

/// A fault that loses the server's state: killed (SIGKILL) and started again empty on its port.
pub fn server_restarted_empty(server: &mut RedisServer) -> Faults<impl FnOnce() + '_> {
    Faults {
        length: Duration::from_millis(1_200),
        play: move || {
            std::thread::sleep(Duration::from_millis(400));
            server.restart();
            std::thread::sleep(Duration::from_millis(600));
        },
    }
}

/// A Sentinel failover: the master killed (SIGKILL), the sentinels promote the replica (asynchronous
/// replication: the last writes may be lost, so this loses state once).
pub fn sentinel_failover(setup: &mut RedisSentinels) -> Faults<impl FnOnce() + '_> {
    Faults {
        length: Duration::from_millis(5_000),
        play: move || {
            std::thread::sleep(Duration::from_millis(500));
            let replica = setup.replica().port();
            setup.master().stop();
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while setup.named_master_port() != Some(replica) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the sentinels did not promote the replica"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(1_000));
        },
    }
}

/// A Redis Cluster failover: a replica takes over its master's slots (`CLUSTER FAILOVER FORCE`, asked
/// again until it is promoted; FORCE does not wait for the replica to catch up, so this may lose the
/// last writes once).
pub fn cluster_failover(cluster: &RedisCluster) -> Faults<impl FnOnce() + '_> {
    Faults {
        length: Duration::from_millis(5_000),
        play: move || {
            std::thread::sleep(Duration::from_millis(500));
            let replica = cluster
                .nodes()
                .iter()
                .find(|node| {
                    let role: Vec<redis::Value> = redis::cmd("ROLE")
                        .query(&mut node.connection())
                        .unwrap_or_default();
                    matches!(role.first(), Some(redis::Value::BulkString(kind)) if kind == b"slave")
                })
                .expect("a replica");
            let deadline = std::time::Instant::now() + Duration::from_secs(40);
            let mut asked_at: Option<std::time::Instant> = None;
            loop {
                if asked_at.is_none_or(|at| at.elapsed() > Duration::from_secs(5)) {
                    let _: redis::RedisResult<()> = redis::cmd("CLUSTER")
                        .arg("FAILOVER")
                        .arg("FORCE")
                        .query(&mut replica.connection());
                    asked_at = Some(std::time::Instant::now());
                }
                let role: Vec<redis::Value> = redis::cmd("ROLE")
                    .query(&mut replica.connection())
                    .unwrap_or_default();
                if matches!(role.first(), Some(redis::Value::BulkString(kind)) if kind == b"master") {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the replica was not promoted"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(Duration::from_millis(1_500));
        },
    }
}

/// Memory pressure: `maxmemory` just above what the server uses, filled by a writer of big values for
/// most of the run. With `allkeys-lru`, limit and lock keys are evicted along with the filler: each
/// eviction of a key named in `keys` is recorded in `history` as a `state_loss` of that key (from the
/// server's keyspace notifications), so the checker allows for it. With `noeviction`, writes are
/// refused (OOM) instead, and nothing is lost.
pub fn memory_pressure<'a>(
    server: &'a RedisServer,
    policy: &'a str,
    history: &'a History,
    keys: &'a [&'a str],
) -> Faults<impl FnOnce() + 'a> {
    Faults {
        length: Duration::from_millis(2_500),
        play: move || {
            let mut admin = server.connection();
            let used: String = redis::cmd("INFO").arg("memory").query(&mut admin).unwrap();
            let used: u64 = used
                .lines()
                .find_map(|line| line.strip_prefix("used_memory:"))
                .and_then(|n| n.trim().parse().ok())
                .expect("used_memory");
            let set = |admin: &mut redis::Connection, name: &str, value: String| {
                let _: () = redis::cmd("CONFIG")
                    .arg("SET")
                    .arg(name)
                    .arg(value)
                    .query(admin)
                    .unwrap();
            };
            set(&mut admin, "notify-keyspace-events", "Ee".into());
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let watcher = {
                let (stop, url) = (stop.clone(), server.url());
                let (history, keys): (History, Vec<String>) =
                    (history.clone(), keys.iter().map(|k| k.to_string()).collect());
                std::thread::spawn(move || record_evictions(&url, &history, &keys, &stop))
            };
            std::thread::sleep(Duration::from_millis(300));
            set(&mut admin, "maxmemory-policy", policy.into());
            set(&mut admin, "maxmemory", (used + 1_500_000).to_string());
            let value = "x".repeat(20_000);
            let started = std::time::Instant::now();
            let mut n = 0u64;
            while started.elapsed() < Duration::from_millis(1_800) {
                let _: redis::RedisResult<()> = redis::cmd("SET")
                    .arg(format!("filler:{n}"))
                    .arg(&value)
                    .query(&mut admin);
                n += 1;
                std::thread::sleep(Duration::from_micros(500));
            }
            set(&mut admin, "maxmemory", "0".into());
            // Only the filler goes: a FLUSHDB would lose the limits' state too (the checker caught
            // exactly that, one admission over a token bucket's bound, when this was a FLUSHDB).
            for first in (0..n).step_by(500) {
                let mut unlink = redis::cmd("UNLINK");
                for i in first..(first + 500).min(n) {
                    unlink.arg(format!("filler:{i}"));
                }
                let _: redis::RedisResult<()> = unlink.query(&mut admin);
            }
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            watcher.join().expect("the eviction watcher");
        },
    }
}

/// Records every eviction of a key that holds one of `keys`' state (the limit key's storage keys
/// contain `{key}`) as a `state_loss` of that key, until `stop`.
fn record_evictions(url: &str, history: &History, keys: &[String], stop: &std::sync::atomic::AtomicBool) {
    let client = redis::Client::open(url).expect("a client");
    let mut connection = client.get_connection().expect("a connection");
    connection
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut pubsub = connection.as_pubsub();
    pubsub
        .psubscribe("__keyevent@*__:evicted")
        .expect("subscribe to evictions");
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let Ok(message) = pubsub.get_message() else {
            continue;
        };
        let evicted: Vec<u8> = message.get_payload().unwrap_or_default();
        let evicted = String::from_utf8_lossy(&evicted);
        for key in keys {
            if evicted.contains(&format!("{{{key}}}")) {
                let now = history.now_ns();
                history.push(Op {
                    client: "server".into(),
                    op: "state_loss".into(),
                    key: key.clone(),
                    invoke_ns: now,
                    complete_ns: now,
                    outcome: Outcome::Ok,
                    allowed: None,
                    token: None,
                    timeout_ns: None,
                });
            }
        }
    }
}
