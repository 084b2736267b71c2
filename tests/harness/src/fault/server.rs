//! Faults of the server itself, as the fault drivers of a scenario: some keep its state (a freeze,
//! flushed scripts, killed connections), some lose it (kill -9 and a restart without persistence; a
//! Sentinel failover, whose replica may not have had the last writes).

use std::time::Duration;

use super::scenarios::Faults;
use crate::{RedisCluster, RedisSentinels, RedisServer};

/// Faults of the server that keep its state, one after another: frozen (SIGSTOP, then SIGCONT), its
/// scripts flushed (SCRIPT FLUSH), every client's connection killed (CLIENT KILL), frozen again.
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
            pause(200);
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
