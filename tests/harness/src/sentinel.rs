//! A real Sentinel setup for tests: one master, one replica and three sentinels watching the master as
//! `mymaster` (quorum 2, down after 1 s), every process on its own free port and stopped by PID;
//! optionally secured as managed and charted deployments are: a password on the master and replica, one
//! on the sentinels, and TLS (every process also serving a TLS port, the sentinels and replication
//! reaching the servers over TLS).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::redis_server::{free_port, listener, Listener};
use crate::tls::TestCertificates;
use crate::RedisServer;

/// The name the sentinels watch.
pub const MASTER_NAME: &str = "mymaster";

/// How a setup is secured (nothing, by default).
#[derive(Default, Clone, Copy)]
pub struct Secured<'a> {
    /// The master's and the replica's password (`requirepass`, `masterauth`, the sentinels' `auth-pass`).
    pub password: Option<&'a str>,
    /// The sentinels' own password (`requirepass`, and `sentinel sentinel-pass` between them).
    pub sentinel_password: Option<&'a str>,
    /// Every process also serves TLS with these certificates on a port of its own; the sentinels and the
    /// replica reach the master over TLS, so the sentinels name TLS ports.
    pub tls: Option<&'a TestCertificates>,
    /// With `tls`: every process asks each TLS client for a certificate the CA signed
    /// (`tls-auth-clients yes`, Redis's default); they present their own to each other.
    pub asking_clients: bool,
}

/// A running master, replica and three sentinels owned by the test that started them.
pub struct RedisSentinels {
    master: RedisServer,
    replica: RedisServer,
    sentinels: Vec<Sentinel>,
    password: Option<String>,
    sentinel_password: Option<String>,
    tls: bool,
}

/// One sentinel process: its plain port (the kit's own connections), its TLS port if any, its directory.
struct Sentinel {
    port: u16,
    tls_port: Option<u16>,
    child: Child,
    dir: PathBuf,
}

impl RedisSentinels {
    /// Starts everything and waits until the sentinels know the replica and each other.
    pub fn start() -> Self {
        Self::start_secured(Secured::default())
    }

    /// [`start`](Self::start), secured as `secured` says.
    pub fn start_secured(secured: Secured) -> Self {
        let server_args = |tls_port: Option<u16>| -> Vec<String> {
            let mut args = Vec::new();
            if let Some(password) = secured.password {
                args.extend(["--requirepass", password, "--masterauth", password].map(String::from));
            }
            if let (Some(certificates), Some(port)) = (secured.tls, tls_port) {
                args.extend(match secured.asking_clients {
                    true => certificates.server_args_asking_clients(port, ""),
                    false => certificates.server_args(port),
                });
                args.extend(["--tls-replication", "yes"].map(String::from));
            }
            args
        };
        let start =
            |args: &[String]| RedisServer::start_with(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let master_tls = secured.tls.map(|_| free_port());
        let master = start(&server_args(master_tls));
        // The port the replica and the sentinels reach the master on: its TLS port when there is one.
        let master_port = master_tls.unwrap_or(master.port()).to_string();
        let mut replica_args = server_args(secured.tls.map(|_| free_port()));
        replica_args.extend(["--replicaof".into(), "127.0.0.1".into(), master_port.clone()]);
        let replica = start(&replica_args);
        let sentinels = (0..3).map(|_| spawn_sentinel(&master_port, &secured)).collect();
        let setup = RedisSentinels {
            master,
            replica,
            sentinels,
            password: secured.password.map(String::from),
            sentinel_password: secured.sentinel_password.map(String::from),
            tls: secured.tls.is_some(),
        };
        setup.wait_until_ready(Duration::from_secs(30));
        setup
    }

    /// `redis+sentinel://` with the three sentinels and the master's name (`rediss+sentinel://` and the
    /// sentinels' TLS ports for a TLS setup), with the master's password if it has one.
    pub fn url(&self) -> String {
        self.url_with_password(self.password.as_deref())
    }

    /// [`url`](Self::url) with `password` in it instead (none for `None`).
    pub fn url_with_password(&self, password: Option<&str>) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|sentinel| format!("127.0.0.1:{}", sentinel.tls_port.unwrap_or(sentinel.port)))
            .collect();
        let scheme = if self.tls {
            "rediss+sentinel"
        } else {
            "redis+sentinel"
        };
        format!(
            "{scheme}://{}{}/{MASTER_NAME}",
            credentials(password),
            hosts.join(",")
        )
    }

    /// A plain connection to the sentinel on `port` (its plain port), with the sentinels' password.
    fn sentinel_connection(&self, port: u16) -> redis::RedisResult<redis::Connection> {
        let credentials = credentials(self.sentinel_password.as_deref());
        redis::Client::open(format!("redis://{credentials}127.0.0.1:{port}/"))
            .and_then(|client| client.get_connection())
    }

    /// Creates (or changes) the ACL user `name` on every sentinel with `rules` (as `ACL SETUSER` takes
    /// them, e.g. `["on", ">pw", "-@all", "+ping"]`).
    pub fn set_sentinel_user(&self, name: &str, rules: &[&str]) {
        for sentinel in &self.sentinels {
            let mut connection = self
                .sentinel_connection(sentinel.port)
                .expect("a connection to a sentinel");
            let _: () = redis::cmd("ACL")
                .arg("SETUSER")
                .arg(name)
                .arg(rules)
                .query(&mut connection)
                .expect("ACL SETUSER on a sentinel");
        }
    }

    pub fn master(&mut self) -> &mut RedisServer {
        &mut self.master
    }

    pub fn replica(&self) -> &RedisServer {
        &self.replica
    }

    /// The port of the master the sentinels name now (its TLS port in a TLS setup).
    pub fn named_master_port(&self) -> Option<u16> {
        let mut connection = self.sentinel_connection(self.sentinels[0].port).ok()?;
        let address: Vec<String> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(MASTER_NAME)
            .query(&mut connection)
            .ok()?;
        address.get(1)?.parse().ok()
    }

    /// Whether the replica's link to the master is up (its first sync done).
    fn replica_is_synced(&self) -> bool {
        let credentials = credentials(self.password.as_deref());
        let url = format!("redis://{credentials}127.0.0.1:{}/", self.replica.port());
        let info: redis::RedisResult<String> = redis::Client::open(url)
            .and_then(|client| client.get_connection())
            .and_then(|mut c| redis::cmd("INFO").arg("replication").query(&mut c));
        info.is_ok_and(|text| text.contains("master_link_status:up"))
    }

    fn wait_until_ready(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let ready = self.sentinels.iter().all(|sentinel| {
                let count = |what: &str| -> usize {
                    self.sentinel_connection(sentinel.port)
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

/// `:password@` for a URL, or nothing.
fn credentials(password: Option<&str>) -> String {
    password.map_or(String::new(), |password| format!(":{password}@"))
}

fn spawn_sentinel(master_port: &str, secured: &Secured) -> Sentinel {
    for _attempt in 0..5 {
        if let Some(sentinel) = try_spawn_sentinel(master_port, secured) {
            return sentinel;
        }
    }
    panic!("could not start a sentinel on a free port after 5 attempts");
}

/// Starts one sentinel on a free port; `None` when the port was taken before the sentinel bound it.
fn try_spawn_sentinel(master_port: &str, secured: &Secured) -> Option<Sentinel> {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("ratelock-sentinel-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create sentinel dir");
    let config = dir.join("sentinel.conf");
    let mut text = format!(
        "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} 2\n\
         sentinel down-after-milliseconds {MASTER_NAME} 1000\nsentinel failover-timeout {MASTER_NAME} 3000\n\
         sentinel parallel-syncs {MASTER_NAME} 1\n",
        dir.display()
    );
    if let Some(password) = secured.password {
        text += &format!("sentinel auth-pass {MASTER_NAME} {password}\n");
    }
    if let Some(password) = secured.sentinel_password {
        text += &format!("requirepass {password}\nsentinel sentinel-pass {password}\n");
    }
    let tls_port = secured.tls.map(|certificates| {
        let tls_port = free_port();
        let path = |p: PathBuf| p.display().to_string();
        let asks = if secured.asking_clients { "yes" } else { "no" };
        text += &format!(
            "tls-port {tls_port}\ntls-cert-file {}\ntls-key-file {}\ntls-ca-cert-file {}\n\
             tls-auth-clients {asks}\ntls-replication yes\n",
            path(certificates.cert()),
            path(certificates.key()),
            path(certificates.ca())
        );
        tls_port
    });
    std::fs::write(&config, text).expect("write sentinel.conf");
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
            return Some(Sentinel {
                port,
                tls_port,
                child,
                dir,
            });
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
        for sentinel in &mut self.sentinels {
            let _ = sentinel.child.kill();
            let _ = sentinel.child.wait();
            let _ = std::fs::remove_dir_all(&sentinel.dir);
        }
    }
}
