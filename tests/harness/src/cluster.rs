//! A real Redis Cluster for tests: `masters` masters with `replicas` replicas each, every node a
//! `RedisServer` (own port, own directory, stopped by PID), joined with `redis-cli --cluster create`;
//! optionally serving TLS too (each node on a TLS port of its own, the cluster bus and replication over
//! TLS as well).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::redis_server::free_port;
use crate::tls::TestCertificates;
use crate::RedisServer;

/// A running cluster owned by the test that started it.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    masters: usize,
    /// Each node's TLS port, for a cluster started with [`RedisCluster::start_tls`].
    tls_ports: Vec<u16>,
}

impl RedisCluster {
    /// Starts and joins the cluster, then waits until every slot is served (`cluster_state:ok`).
    pub fn start(masters: usize, replicas: usize) -> Self {
        Self::start_with(masters, replicas, &[])
    }

    /// The same, every node started with `extra_args` too (e.g. `["--loadmodule", path]`).
    pub fn start_with(masters: usize, replicas: usize, extra_args: &[&str]) -> Self {
        let extra_args: Vec<String> = extra_args.iter().map(|arg| arg.to_string()).collect();
        Self::start_nodes(masters, replicas, Vec::new(), |_| extra_args.clone())
    }

    /// The same, every node also serving TLS with `certificates` on a port of its own (the plain ports
    /// stay, for the kit's own connections); the cluster bus and replication go over TLS. A client on a
    /// TLS connection is told the nodes' TLS ports (`CLUSTER SLOTS`).
    pub fn start_tls(masters: usize, replicas: usize, certificates: &TestCertificates) -> Self {
        Self::start_tls_nodes(masters, replicas, certificates, false)
    }

    /// [`start_tls`](Self::start_tls), every node asking each TLS client for a certificate the CA signed
    /// (`tls-auth-clients yes`, Redis's default; the nodes present their own to each other on the bus).
    pub fn start_tls_asking_clients(
        masters: usize,
        replicas: usize,
        certificates: &TestCertificates,
    ) -> Self {
        Self::start_tls_nodes(masters, replicas, certificates, true)
    }

    fn start_tls_nodes(
        masters: usize,
        replicas: usize,
        certificates: &TestCertificates,
        asking_clients: bool,
    ) -> Self {
        let tls_ports: Vec<u16> = (0..masters * (1 + replicas)).map(|_| free_port()).collect();
        Self::start_nodes(masters, replicas, tls_ports.clone(), |index| {
            let mut args = match asking_clients {
                true => certificates.server_args_asking_clients(tls_ports[index], ""),
                false => certificates.server_args(tls_ports[index]),
            };
            args.extend(["--tls-cluster", "yes", "--tls-replication", "yes"].map(String::from));
            args
        })
    }

    /// Starts `masters * (1 + replicas)` nodes, node `i` with `args_of(i)` too, and joins them.
    fn start_nodes(
        masters: usize,
        replicas: usize,
        tls_ports: Vec<u16>,
        args_of: impl Fn(usize) -> Vec<String>,
    ) -> Self {
        let count = masters * (1 + replicas);
        let nodes: Vec<RedisServer> = (0..count)
            .map(|index| {
                // A bus port of its own: the default (the port + 10000, or the TLS port + 10000 with
                // `tls-cluster`) does not exist for ports above 55535.
                let bus_port = free_port().to_string();
                let mut args = vec!["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"];
                args.extend(["--cluster-port", &bus_port]);
                let extra = args_of(index);
                args.extend(extra.iter().map(String::as_str));
                RedisServer::start_with(&args)
            })
            .collect();
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
        let cluster = RedisCluster {
            nodes,
            masters,
            tls_ports,
        };
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

    /// `rediss+cluster://` with the masters' TLS ports as seeds (`localhost`, the name the test
    /// certificate carries), for a cluster started with [`RedisCluster::start_tls`].
    pub fn tls_url(&self) -> String {
        assert!(!self.tls_ports.is_empty(), "this cluster serves no TLS");
        let seeds: Vec<String> = self.tls_ports[..self.masters]
            .iter()
            .map(|port| format!("localhost:{port}"))
            .collect();
        format!("rediss+cluster://{}", seeds.join(","))
    }

    /// Every node, masters first (as `redis-cli --cluster create` assigned them).
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// Every node, to stop or restart one.
    pub fn nodes_mut(&mut self) -> &mut [RedisServer] {
        &mut self.nodes
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

/// A key whose slot `master` serves (`served`), or one whose slot it does not, as `CLUSTER SLOTS` says.
pub fn key_of(master: &RedisServer, served: bool) -> String {
    let ranges: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query(&mut master.connection())
        .unwrap();
    // Each range: its first and last slot, then the master's address.
    let its_own: Vec<(i64, i64)> = ranges
        .iter()
        .filter_map(|range| match range.as_slice() {
            [redis::Value::Int(start), redis::Value::Int(end), redis::Value::Array(node), ..]
                if node.get(1) == Some(&redis::Value::Int(i64::from(master.port()))) =>
            {
                Some((*start, *end))
            }
            _ => None,
        })
        .collect();
    assert!(!its_own.is_empty(), "the master serves no slot: {ranges:?}");
    (0..)
        .map(|n| format!("key:{n}"))
        .find(|key| {
            let slot = i64::from(crate::slot::key_slot(key.as_bytes()));
            its_own.iter().any(|(start, end)| (*start..=*end).contains(&slot)) == served
        })
        .expect("a key on either side")
}
