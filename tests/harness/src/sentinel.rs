//! A real Sentinel setup for tests: one master, one replica and three sentinels watching the master as
//! `mymaster` (quorum 2, down after 1 s), every process on its own free port and stopped by PID.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::redis_server::{free_port, listener, Listener};
use crate::RedisServer;

/// The name the sentinels watch.
pub const MASTER_NAME: &str = "mymaster";

/// A running master, replica and three sentinels owned by the test that started them.
pub struct RedisSentinels {
    master: RedisServer,
    replica: RedisServer,
    sentinels: Vec<(u16, Child, PathBuf)>,
}

impl RedisSentinels {
    /// Starts everything and waits until the sentinels know the replica and each other.
    pub fn start() -> Self {
        let master = RedisServer::start();
        let master_port = master.port().to_string();
        let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &master_port]);
        let sentinels = (0..3).map(|_| spawn_sentinel(master.port())).collect();
        let setup = RedisSentinels {
            master,
            replica,
            sentinels,
        };
        setup.wait_until_ready(Duration::from_secs(30));
        setup
    }

    /// `redis+sentinel://` with the three sentinels and the master's name.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|(port, ..)| format!("127.0.0.1:{port}"))
            .collect();
        format!("redis+sentinel://{}/{MASTER_NAME}", hosts.join(","))
    }

    pub fn master(&mut self) -> &mut RedisServer {
        &mut self.master
    }

    pub fn replica(&self) -> &RedisServer {
        &self.replica
    }

    /// The port of the master the sentinels name now.
    pub fn named_master_port(&self) -> Option<u16> {
        let (port, ..) = &self.sentinels[0];
        let mut connection = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|client| client.get_connection())
            .ok()?;
        let address: Vec<String> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(MASTER_NAME)
            .query(&mut connection)
            .ok()?;
        address.get(1)?.parse().ok()
    }

    /// Whether the replica's link to the master is up (its first sync done).
    fn replica_is_synced(&self) -> bool {
        let info: redis::RedisResult<String> = redis::Client::open(self.replica.url())
            .and_then(|client| client.get_connection())
            .and_then(|mut c| redis::cmd("INFO").arg("replication").query(&mut c));
        info.is_ok_and(|text| text.contains("master_link_status:up"))
    }

    fn wait_until_ready(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let ready = self.sentinels.iter().all(|(port, ..)| {
                let count = |what: &str| -> usize {
                    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                        .and_then(|client| client.get_connection())
                        .and_then(|mut c| {
                            redis::cmd("SENTINEL")
                                .arg(what)
                                .arg(MASTER_NAME)
                                .query::<Vec<redis::Value>>(&mut c)
                        })
                        .map_or(0, |entries| entries.len())
                };
                count("REPLICAS") >= 1 && count("SENTINELS") >= 2
            });
            // A replica that has not finished its first sync is one no sentinel promotes (its link to
            // the master counts as down since it started): a failover test must not stop the master
            // before then.
            if ready && self.replica_is_synced() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the sentinels did not discover the setup, or the replica did not sync"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn spawn_sentinel(master_port: u16) -> (u16, Child, PathBuf) {
    for _attempt in 0..5 {
        if let Some(sentinel) = try_spawn_sentinel(master_port) {
            return sentinel;
        }
    }
    panic!("could not start a sentinel on a free port after 5 attempts");
}

/// Starts one sentinel on a free port; `None` when the port was taken before the sentinel bound it.
fn try_spawn_sentinel(master_port: u16) -> Option<(u16, Child, PathBuf)> {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("ratelock-sentinel-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create sentinel dir");
    let config = dir.join("sentinel.conf");
    std::fs::write(
        &config,
        format!(
            "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} 2\n\
             sentinel down-after-milliseconds {MASTER_NAME} 1000\nsentinel failover-timeout {MASTER_NAME} 3000\n\
             sentinel parallel-syncs {MASTER_NAME} 1\n",
            dir.display()
        ),
    )
    .expect("write sentinel.conf");
    let mut child = Command::new("redis-server")
        .arg(&config)
        .arg("--sentinel")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start redis-server --sentinel");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let exited = matches!(child.try_wait(), Ok(Some(_)));
        let listening = listener(port, child.id());
        if !exited && listening == Listener::That {
            return Some((port, child, dir));
        }
        if exited || listening == Listener::Another || Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(&dir);
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Drop for RedisSentinels {
    fn drop(&mut self) {
        for (_, child, dir) in &mut self.sentinels {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
