//! A real Redis Cluster for tests: `masters` masters with `replicas` replicas each, every node a
//! `RedisServer` (own port, own directory, stopped by PID), joined with `redis-cli --cluster create`.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::RedisServer;

/// A running cluster owned by the test that started it.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    masters: usize,
}

impl RedisCluster {
    /// Starts and joins the cluster, then waits until every slot is served (`cluster_state:ok`).
    pub fn start(masters: usize, replicas: usize) -> Self {
        Self::start_with(masters, replicas, &[])
    }

    /// The same, every node started with `extra_args` too (e.g. `["--loadmodule", path]`).
    pub fn start_with(masters: usize, replicas: usize, extra_args: &[&str]) -> Self {
        let count = masters * (1 + replicas);
        let mut args = vec!["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"];
        args.extend_from_slice(extra_args);
        let nodes: Vec<RedisServer> = (0..count).map(|_| RedisServer::start_with(&args)).collect();
        let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())).collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run redis-cli ({e}); install it: apt-get install -y redis-tools")
            });
        assert!(
            created.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&created.stdout)
        );
        let cluster = RedisCluster { nodes, masters };
        cluster.wait_until_ok(Duration::from_secs(30));
        cluster
    }

    /// `redis+cluster://` with the masters' addresses as seeds.
    pub fn url(&self) -> String {
        let seeds: Vec<String> = self.nodes[..self.masters]
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port()))
            .collect();
        format!("redis+cluster://{}", seeds.join(","))
    }

    /// Every node, masters first (as `redis-cli --cluster create` assigned them).
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    fn wait_until_ok(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let all_ok = self.nodes.iter().all(|node| {
                let info: redis::RedisResult<String> =
                    redis::cmd("CLUSTER").arg("INFO").query(&mut node.connection());
                info.is_ok_and(|text| {
                    text.contains("cluster_state:ok") && text.contains("cluster_slots_ok:16384")
                })
            });
            if all_ok {
                return;
            }
            assert!(Instant::now() < deadline, "the cluster did not become ready");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
