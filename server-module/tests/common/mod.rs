//! What the module's tests share: a redis-server (or the binary RATELOCK_SERVER_BIN names, e.g. a
//! valkey-server) on a free loopback port (with the module loaded, or with extra arguments), stopped
//! when dropped; a connection that waits for it to come up; replies
//! with errors as text; a seeded generator.

#![allow(dead_code)]

pub mod agreement;
pub mod command_info;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use redis::{Connection, Value};

/// A server process with the module loaded, shut down when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The cdylib built beside this test binary (target/<profile>/), unless RATELOCK_MODULE_SO says where.
pub fn module_path() -> PathBuf {
    if let Ok(path) = std::env::var("RATELOCK_MODULE_SO") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let name = if cfg!(target_os = "macos") {
        "libratelock_module.dylib"
    } else {
        "libratelock_module.so"
    };
    profile_dir.join(name)
}

/// The server binary the tests run: RATELOCK_SERVER_BIN (e.g. a valkey-server), else `redis-server`
/// on PATH.
pub fn server_binary() -> PathBuf {
    std::env::var_os("RATELOCK_SERVER_BIN").map_or_else(|| PathBuf::from("redis-server"), PathBuf::from)
}

/// A server (see [`server_binary`]) with the module loaded.
pub fn start_server() -> Server {
    start_server_with(&server_binary())
}

/// The server `binary` with the module loaded.
pub fn start_server_with(binary: &Path) -> Server {
    let module = module_path();
    assert!(
        module.exists(),
        "{} is missing: run `cargo build --manifest-path server-module/Cargo.toml` first",
        module.display()
    );
    spawn_server_with(
        binary,
        &mut vec!["--loadmodule".into(), module.display().to_string()],
    )
}

/// A server (see [`server_binary`]) on a free loopback port, with `extra` arguments.
pub fn spawn_server(extra: &mut Vec<String>) -> Server {
    spawn_server_with(&server_binary(), extra)
}

/// The server `binary` on a free loopback port, with `extra` arguments.
pub fn spawn_server_with(binary: &Path, extra: &mut Vec<String>) -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(binary)
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(std::env::temp_dir()) // where a replica puts the RDB it receives
        .args(extra.drain(..))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
    Server { child, port }
}

pub fn connect(server: &Server) -> Connection {
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match client.get_connection() {
            Ok(con) => return con,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("redis-server did not come up: {e}"),
        }
    }
}

/// A reply, with errors as their text, so that both paths compare as plain data.
pub fn run(con: &mut Connection, cmd: &redis::Cmd) -> Result<Value, String> {
    cmd.query::<Value>(con)
        .map_err(|e| format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or("")))
}

/// `reply` as a tagged call gets it (contract 4, the scripts' call-tag envelope): an array with the
/// tag appended, anything else as `[tag, reply]`.
pub fn tagged(tag: &str, reply: Value) -> Value {
    let tag = Value::BulkString(tag.as_bytes().to_vec());
    match reply {
        Value::Array(mut items) => {
            items.push(tag);
            Value::Array(items)
        }
        other => Value::Array(vec![tag, other]),
    }
}

/// A small deterministic generator (xorshift64*), so a failure can be replayed from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A key's type, contents (sorted hash fields, zset members with scores) and PTTL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySnapshot {
    pub kind: String,
    pub contents: Vec<String>,
    pub pttl: i64,
}

/// How far apart two copies' PTTLs may be: the second copy is written a moment after the first.
pub const PTTL_SLACK_MS: i64 = 25;

/// [`PTTL_SLACK_MS`], or more when the two copies compared were written or read further apart than
/// that: the time since `started` (the first of them), and 2 ms for the reads' rounding. A stalled CI
/// machine once took longer than the fixed slack between two round trips.
pub fn slack_since(started: Instant) -> i64 {
    PTTL_SLACK_MS.max(started.elapsed().as_millis() as i64 + 2)
}

impl KeySnapshot {
    /// Same type and contents, and PTTLs within [`PTTL_SLACK_MS`] (or the same "no TTL" / "no key").
    pub fn agrees_with(&self, other: &KeySnapshot) -> bool {
        self.agrees_within(other, PTTL_SLACK_MS)
    }

    /// [`agrees_with`](Self::agrees_with), the PTTLs within `slack_ms`.
    pub fn agrees_within(&self, other: &KeySnapshot, slack_ms: i64) -> bool {
        let ttls_agree = (self.pttl < 0 && self.pttl == other.pttl)
            || (self.pttl >= 0 && other.pttl >= 0 && (self.pttl - other.pttl).abs() <= slack_ms);
        self.kind == other.kind && self.contents == other.contents && ttls_agree
    }
}

/// The type, contents and PTTL of `key` (a string, hash or sorted set).
pub fn key_snapshot(con: &mut Connection, key: &str) -> KeySnapshot {
    key_snapshots(con, &[key]).remove(0)
}

/// [`key_snapshot`] of each of `keys`, read in one MULTI, so that no key can end between the reads
/// of two copies that are compared (a stalled machine once let one copy's 9 ms lease end between the
/// two looks).
pub fn key_snapshots(con: &mut Connection, keys: &[&str]) -> Vec<KeySnapshot> {
    let mut pipe = redis::pipe();
    pipe.atomic().ignore_errors();
    for key in keys {
        // Every reading of every type: those of the wrong type answer WRONGTYPE and are not used.
        pipe.cmd("TYPE").arg(key).cmd("PTTL").arg(key).cmd("GET").arg(key);
        pipe.cmd("HGETALL").arg(key);
        pipe.cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES");
    }
    let replies: Vec<redis::RedisResult<Value>> = pipe.query(con).unwrap();
    let mut replies = replies.into_iter();
    let mut next = || {
        replies
            .next()
            .expect("five replies per key")
            .unwrap_or(Value::Nil)
    };
    keys.iter()
        .map(|key| {
            let (kind, pttl, string, hash, zset) = (next(), next(), next(), next(), next());
            let kind: String = redis::from_redis_value(kind).unwrap();
            let pttl: i64 = redis::from_redis_value(pttl).unwrap();
            let contents: Vec<String> = match kind.as_str() {
                "none" => vec![],
                "string" => vec![redis::from_redis_value(string).unwrap()],
                "hash" => {
                    let mut pairs: Vec<(String, String)> = redis::from_redis_value(hash).unwrap();
                    pairs.sort();
                    pairs.into_iter().map(|(f, v)| format!("{f}={v}")).collect()
                }
                "zset" => redis::from_redis_value(zset).unwrap(),
                other => panic!("{key} has unexpected type {other}"),
            };
            KeySnapshot { kind, contents, pttl }
        })
        .collect()
}

/// The wall clock in µs since the Unix epoch.
pub fn wall_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// A script of `core/lua/` as it runs without the call-tag envelope: `prelude.lua`, `fence.lua` when
/// the body mints fencing tokens, then its body.
pub fn lua_script(name: &str) -> String {
    let lua = concat!(env!("CARGO_MANIFEST_DIR"), "/../core/lua/");
    let prelude = std::fs::read_to_string(format!("{lua}prelude.lua")).unwrap();
    let body = std::fs::read_to_string(format!("{lua}{name}.lua")).unwrap();
    let fence = if body.contains("mint_fence(") {
        std::fs::read_to_string(format!("{lua}fence.lua")).unwrap()
    } else {
        String::new()
    };
    format!("{prelude}\n{fence}\n{body}")
}

/// The call of script `name` (`core/lua/<name>.lua`) with `keys` and `args`: through the module's
/// command (`RATELOCK.<NAME>`), or through the script itself (EVAL, without the call-tag envelope).
pub fn script_or_module(module: bool, name: &str, keys: &[&str], args: &[&str]) -> redis::Cmd {
    let mut cmd = if module {
        redis::cmd(&format!("RATELOCK.{}", name.to_uppercase()))
    } else {
        let mut eval = redis::cmd("EVAL");
        eval.arg(lua_script(name));
        eval
    };
    cmd.arg(keys.len()).arg(keys).arg(args);
    cmd
}

/// Acquires the lock of lease `lease` (fencing counter `fence`) for `owner`, a minute, server clock,
/// through the module or the script: the grant's fencing token.
pub fn acquire_token(con: &mut Connection, module: bool, lease: &str, fence: &str, owner: &str) -> i64 {
    let call = script_or_module(
        module,
        "lock_acquire",
        &[lease, fence],
        &[owner, "60000000", "0", ""],
    );
    match run(con, &call).unwrap() {
        Value::Array(parts) if parts[0] == Value::Int(1) => match parts[1] {
            Value::Int(token) => token,
            ref other => panic!("fencing token {other:?}"),
        },
        other => panic!("acquire answered {other:?}"),
    }
}

/// Waits until the replica behind `replica_con` reports its link to the master up.
pub fn wait_for_master_link(replica_con: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !redis::cmd("INFO")
        .arg("replication")
        .query::<String>(replica_con)
        .unwrap()
        .contains("master_link_status:up")
    {
        assert!(Instant::now() < deadline, "the replica did not connect");
        sleep(Duration::from_millis(50));
    }
}

/// A replica of `master` (without the module) and a connection to it, once its link is up.
pub fn start_replica(master: &Server) -> (Server, Connection) {
    let replica = spawn_server(&mut vec![
        "--replicaof".into(),
        "127.0.0.1".into(),
        master.port.to_string(),
    ]);
    let mut replica_con = connect(&replica);
    wait_for_master_link(&mut replica_con);
    (replica, replica_con)
}

/// What a replica ran (its command stats count what the master propagated): absolute expiry
/// (PEXPIREAT, SET .. PXAT), never a relative one (PEXPIRE, EXPIRE, PSETEX, SETEX) nor a module command.
pub fn assert_replica_ran_absolute_expiry(replica: &mut Connection) {
    let stats: String = redis::cmd("INFO").arg("commandstats").query(replica).unwrap();
    for ran in ["cmdstat_pexpireat:", "cmdstat_set:", "cmdstat_hset:"] {
        assert!(stats.contains(ran), "the replica never ran {ran}: {stats}");
    }
    for relative in [
        "cmdstat_pexpire:",
        "cmdstat_expire:",
        "cmdstat_psetex:",
        "cmdstat_setex:",
        "cmdstat_ratelock",
    ] {
        assert!(!stats.contains(relative), "the replica ran {relative}: {stats}");
    }
}
