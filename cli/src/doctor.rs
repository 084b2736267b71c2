//! `ratelock doctor [URL]`: checks the server ratelock will run on and prints findings with a severity
//! (ok, info, warn, error): its version; whether the module or Redis Functions are there and which path
//! ratelock will take (module, FCALL or EVALSHA) and why; its role and topology; an eviction policy
//! that can evict limit or lock keys; persistence, which matters for leases and fencing; the round
//! trip; the permissions ratelock's calls need; and the clock skew between this machine and the server.
//! Exits 1 when any finding is an error.

use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::Value;
use serde_json::json;

use crate::args::{DoctorArgs, StoreArgs};
use crate::exit::Exit;
use crate::inspect::{connect, now_us, server_now_us};
use crate::output;
use crate::store_url::shown as shown_url;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Severity {
    Ok,
    Info,
    Warn,
    Error,
}

impl Severity {
    fn name(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Error => "error",
        }
    }
}

/// One finding: its severity, what was checked, and what was found.
struct Finding {
    severity: Severity,
    check: &'static str,
    message: String,
}

/// The findings so far.
#[derive(Default)]
struct Report(Vec<Finding>);

impl Report {
    fn add(&mut self, severity: Severity, check: &'static str, message: impl Into<String>) {
        self.0.push(Finding {
            severity,
            check,
            message: message.into(),
        });
    }
}

pub async fn run(store: &StoreArgs, args: DoctorArgs, json: bool) -> Result<i32, Exit> {
    let url = args.url.unwrap_or_else(|| store.url.clone());
    let node = node_url(&url)?;
    let mut connection = connect(&node, store.timeout, "doctor").await?;
    // A server that refuses a PING (NOAUTH, WRONGPASS, a user without +ping) can be told nothing more:
    // each later check read its refusal as an absence ("the module is not loaded", "FUNCTION is
    // refused here").
    if let Err(why) = call(&mut connection, &redis::cmd("PING")).await {
        return Err(crate::store_url::naming(
            &url,
            Exit::Failed(format!("PING failed: {why}")),
        ));
    }
    let mut report = Report::default();
    let info = info(&mut connection, "server").await;
    let version = server_version(&info, &mut report);
    round_trip(&mut connection, &mut report).await;
    clock_skew(&mut connection, &mut report).await;
    topology(&mut connection, &url, &info, &mut report).await;
    let path = server_path(&mut connection, version, &mut report).await;
    eviction(&mut connection, &mut report).await;
    persistence(&mut connection, &mut report).await;
    permissions(&mut connection, &path, &store.prefix, &mut report).await;
    let worst = report.0.iter().map(|f| f.severity).max().unwrap_or(Severity::Ok);
    if json {
        let findings: Vec<_> = report
            .0
            .iter()
            .map(|f| json!({ "severity": f.severity.name(), "check": f.check, "message": f.message }))
            .collect();
        let url = shown_url(&url);
        output::line(&json!({ "url": url, "path": path, "findings": findings }).to_string())?;
    } else {
        output::line(&format!("ratelock doctor {}", shown_url(&url)))?;
        for finding in &report.0 {
            output::line(&format!(
                "  {:<5}  {:<12} {}",
                finding.severity.name(),
                finding.check,
                finding.message
            ))?;
        }
    }
    Ok(if worst == Severity::Error { 1 } else { 0 })
}

/// The one node to talk to: the URL itself, or a cluster URL's first node.
fn node_url(url: &str) -> Result<String, Exit> {
    if let Some(rest) = url.strip_prefix("redis+cluster://") {
        let first = rest.split([',', '/']).next().unwrap_or_default();
        return Ok(format!("redis://{first}/"));
    }
    if let Some(rest) = url.strip_prefix("rediss+cluster://") {
        let first = rest.split([',', '/', '#']).next().unwrap_or_default();
        let insecure = if url.ends_with("#insecure") {
            "#insecure"
        } else {
            ""
        };
        return Ok(format!("rediss://{first}/{insecure}"));
    }
    if url.starts_with("redis+sentinel://") || url.starts_with("rediss+sentinel://") {
        return Err(Exit::Failed(
            "doctor checks one server: give the master's redis:// or rediss:// URL (SENTINEL get-master-addr-by-name names it)".into(),
        ));
    }
    Ok(url.to_owned())
}

async fn call(connection: &mut MultiplexedConnection, cmd: &redis::Cmd) -> Result<Value, String> {
    cmd.query_async(connection).await.map_err(|err| err.to_string())
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(raw) => String::from_utf8_lossy(raw).into_owned(),
        Value::SimpleString(text) => text.clone(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

/// `INFO <section>` as its `field:value` lines (empty when refused).
async fn info(connection: &mut MultiplexedConnection, section: &str) -> Vec<(String, String)> {
    match call(connection, redis::cmd("INFO").arg(section)).await {
        Ok(value) => text(&value)
            .lines()
            .filter_map(|line| line.split_once(':'))
            .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn field<'a>(info: &'a [(String, String)], name: &str) -> Option<&'a str> {
    info.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// The server's name and version; its major version.
fn server_version(info: &[(String, String)], report: &mut Report) -> u32 {
    let (name, version) = match (field(info, "valkey_version"), field(info, "redis_version")) {
        (Some(valkey), _) => ("Valkey", valkey),
        (None, Some(redis)) => ("Redis", redis),
        (None, None) => {
            report.add(
                Severity::Warn,
                "server",
                "INFO server is not answered: version unknown",
            );
            return 0;
        }
    };
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    let severity = if major >= 6 { Severity::Ok } else { Severity::Error };
    report.add(
        severity,
        "server",
        format!(
            "{name} {version}{}",
            if major >= 6 {
                ""
            } else {
                ": ratelock needs Redis 6 or later"
            }
        ),
    );
    major
}

/// 20 PINGs: the median and the slowest.
async fn round_trip(connection: &mut MultiplexedConnection, report: &mut Report) {
    let mut times = Vec::with_capacity(20);
    for _ in 0..20 {
        let started = Instant::now();
        if let Err(why) = call(connection, &redis::cmd("PING")).await {
            report.add(Severity::Error, "round trip", format!("PING failed: {why}"));
            return;
        }
        times.push(started.elapsed());
    }
    times.sort();
    let (median, slowest) = (times[times.len() / 2], times[times.len() - 1]);
    let severity = match median.as_micros() {
        0..=2_000 => Severity::Ok,
        2_001..=10_000 => Severity::Info,
        _ => Severity::Warn,
    };
    report.add(
        severity,
        "round trip",
        format!("PING median {median:?}, slowest {slowest:?} of 20 (every limit check is one round trip)"),
    );
}

/// The server's TIME against this machine's clock, at the midpoint of the round trip.
async fn clock_skew(connection: &mut MultiplexedConnection, report: &mut Report) {
    let before = now_us();
    let reply = server_now_us(connection).await;
    let after = now_us();
    let Ok(server_us) = reply else {
        report.add(Severity::Warn, "clock", "TIME is not answered: skew unknown");
        return;
    };
    let local = (before + after) / 2;
    let skew = Duration::from_micros(server_us.abs_diff(local));
    let severity = match skew.as_millis() {
        0..=50 => Severity::Ok,
        51..=1_000 => Severity::Info,
        _ => Severity::Warn,
    };
    report.add(
        severity,
        "clock",
        format!(
            "this machine's clock is {skew:?} {} the server's (limits and locks use the server's clock \
             unless a limiter is given clock=local)",
            if local > server_us { "ahead of" } else { "behind" }
        ),
    );
}

/// The server's role, and a cluster's state.
async fn topology(
    connection: &mut MultiplexedConnection,
    url: &str,
    server: &[(String, String)],
    report: &mut Report,
) {
    let replication = info(connection, "replication").await;
    let role = match field(&replication, "role") {
        Some(role) => role.to_owned(),
        // INFO refused (an ACL without it, a managed service): ROLE says it, else it is not guessed.
        None => match call(connection, &redis::cmd("ROLE")).await {
            Ok(Value::Array(reply)) if !reply.is_empty() => text(&reply[0]),
            Ok(other) => format!("unknown (ROLE answered {})", text(&other)),
            Err(err) => {
                report.add(
                    Severity::Warn,
                    "topology",
                    format!("unknown: INFO replication and ROLE are refused ({err}); make sure the URL names a master"),
                );
                return;
            }
        },
    };
    let mode = field(server, "redis_mode")
        .or(field(server, "server_mode"))
        .unwrap_or("standalone");
    if role == "slave" || role == "replica" {
        report.add(
            Severity::Error,
            "topology",
            "this server is a replica: ratelock writes on every call (point the URL at the master, or use \
             redis+sentinel://, rediss+sentinel://, redis+cluster:// or rediss+cluster://)",
        );
        return;
    }
    if role != "master" {
        report.add(
            Severity::Warn,
            "topology",
            format!("unknown role {role:?}: make sure the URL names a master"),
        );
        return;
    }
    let replicas = field(&replication, "connected_slaves").unwrap_or("an unknown number of");
    if mode == "cluster" {
        let state = match call(connection, redis::cmd("CLUSTER").arg("INFO")).await {
            Ok(value) => text(&value)
                .lines()
                .find_map(|line| line.strip_prefix("cluster_state:").map(|s| s.trim().to_owned()))
                .unwrap_or_else(|| "unknown".into()),
            Err(err) => format!("unknown ({err})"),
        };
        let severity = if state == "ok" {
            Severity::Ok
        } else {
            Severity::Error
        };
        let hint = if url.starts_with("redis+cluster://") || url.starts_with("rediss+cluster://") {
            ""
        } else {
            " (use a redis+cluster:// URL, rediss+cluster:// over TLS, so calls follow their slots)"
        };
        report.add(
            severity,
            "topology",
            format!("Redis Cluster, state {state}{hint}"),
        );
    } else {
        report.add(
            Severity::Ok,
            "topology",
            format!("{mode} master with {replicas} replica(s)"),
        );
    }
}

/// Which path ratelock's calls will take, and why: the module, Redis Functions (FCALL) or EVALSHA.
async fn server_path(connection: &mut MultiplexedConnection, major: u32, report: &mut Report) -> String {
    let contract = ratelock::store::MODULE_CONTRACT_VERSION;
    match call(connection, &redis::cmd("RATELOCK.VERSION")).await {
        Ok(Value::Int(version)) if version == contract => {
            report.add(
                Severity::Ok,
                "path",
                format!("module: the ratelock module (contract {version}) is loaded: calls run as RATELOCK.* commands"),
            );
            return "module".into();
        }
        Ok(other) => report.add(
            Severity::Warn,
            "module",
            format!(
                "the ratelock module answers contract {}, this client speaks {contract}: it is left alone (update one of them)",
                text(&other)
            ),
        ),
        Err(_) => report.add(Severity::Info, "module", "the ratelock module is not loaded (optional: the fastest path)"),
    }
    // An unknown version (INFO refused) is not taken for an old one: FUNCTION answers for itself.
    if major != 0 && major < 7 {
        report.add(
            Severity::Ok,
            "path",
            "EVALSHA: Redis Functions need Redis 7 or Valkey; calls run as scripts",
        );
        return "evalsha".into();
    }
    match call(
        connection,
        redis::cmd("FUNCTION")
            .arg("LIST")
            .arg("LIBRARYNAME")
            .arg("ratelock"),
    )
    .await
    {
        Ok(_) => {
            report.add(
                Severity::Ok,
                "path",
                "FCALL: Redis Functions are available; ratelock loads its library on first use (EVALSHA if loading is refused)",
            );
            "fcall".into()
        }
        Err(err) => {
            report.add(
                Severity::Ok,
                "path",
                format!("EVALSHA: FUNCTION is refused here ({err}); calls run as scripts"),
            );
            "evalsha".into()
        }
    }
}

/// `maxmemory-policy`: an `allkeys-*` or `volatile-*` policy can evict limit and lock keys (all of
/// which have a TTL).
async fn eviction(connection: &mut MultiplexedConnection, report: &mut Report) {
    let Some(policy) = config(connection, "maxmemory-policy").await else {
        report.add(
            Severity::Info,
            "memory",
            "CONFIG GET is refused (a managed service?): check that the eviction policy is noeviction",
        );
        return;
    };
    let maxmemory = config(connection, "maxmemory").await.unwrap_or_default();
    let (severity, message) = if policy == "noeviction" {
        (
            Severity::Ok,
            "maxmemory-policy noeviction: limit and lock keys are never evicted".to_owned(),
        )
    } else if maxmemory == "0" {
        (
            Severity::Info,
            format!("maxmemory-policy {policy}, but maxmemory is 0 (no limit): nothing is evicted until one is set"),
        )
    } else {
        (
            if policy.starts_with("allkeys") {
                Severity::Error
            } else {
                Severity::Warn
            },
            format!(
                "maxmemory-policy {policy} can evict limit and lock keys under memory pressure (a forgotten \
                 limit admits too much, an evicted lock is free to another holder): use noeviction, or a \
                 server of its own for ratelock"
            ),
        )
    };
    report.add(severity, "memory", message);
}

/// Persistence: what a restart keeps of leases (fencing tokens rise with the server's clock anyway).
async fn persistence(connection: &mut MultiplexedConnection, report: &mut Report) {
    let (Some(aof), Some(save)) = (
        config(connection, "appendonly").await,
        config(connection, "save").await,
    ) else {
        report.add(
            Severity::Info,
            "persistence",
            "CONFIG GET is refused: persistence unknown",
        );
        return;
    };
    let message = if aof == "yes" {
        let fsync = config(connection, "appendfsync").await.unwrap_or_default();
        format!("AOF on (appendfsync {fsync}): a restart keeps leases and fencing counters")
    } else if !save.is_empty() {
        format!(
            "RDB snapshots only (save {save:?}): a restart can forget leases granted since the last \
             snapshot (a lock may then be granted twice); fencing tokens still rise, as they follow the \
             server's clock"
        )
    } else {
        "no persistence: a restart forgets every lease (a lock may be granted twice across it); fencing \
         tokens still rise, as they follow the server's clock"
            .to_owned()
    };
    let severity = if aof == "yes" {
        Severity::Ok
    } else {
        Severity::Info
    };
    report.add(severity, "persistence", message);
}

async fn config(connection: &mut MultiplexedConnection, name: &str) -> Option<String> {
    match call(connection, redis::cmd("CONFIG").arg("GET").arg(name))
        .await
        .ok()?
    {
        Value::Array(items) if items.len() == 2 => Some(text(&items[1])),
        Value::Map(pairs) => pairs.first().map(|(_, v)| text(v)),
        _ => None,
    }
}

/// The commands ratelock sends, each checked with `ACL DRYRUN` for the connected user, on a key and a
/// channel of `prefix` as ratelock names them (a user whose ACL allows other keys, or other channels,
/// was told all was well while every call failed with NOPERM).
async fn permissions(connection: &mut MultiplexedConnection, path: &str, prefix: &str, report: &mut Report) {
    let keys = ratelock::key::LockKeys::new(prefix, b"doctor");
    let (key, channel) = (
        String::from_utf8_lossy(&keys.lease).into_owned(),
        String::from_utf8_lossy(&keys.channel).into_owned(),
    );
    let user = match call(connection, redis::cmd("ACL").arg("WHOAMI")).await {
        Ok(user) => text(&user),
        Err(err) => {
            report.add(
                Severity::Info,
                "permissions",
                format!("ACL WHOAMI is refused ({err}): permissions unchecked"),
            );
            return;
        }
    };
    let needed: [(&[&str], Severity, &str); 6] = [
        (
            &["EVALSHA", "0", "1", &key],
            Severity::Error,
            "every limit and lock call (as a script)",
        ),
        (
            &["SCRIPT", "LOAD", "return 1"],
            Severity::Error,
            "loading the scripts",
        ),
        (
            &["FCALL", "ratelock", "1", &key],
            Severity::Info,
            "the Functions path",
        ),
        (
            &["FUNCTION", "LOAD", "x"],
            Severity::Info,
            "loading the Functions library",
        ),
        (
            &["PUBLISH", &channel, "x"],
            Severity::Warn,
            "waking lock waiters at once",
        ),
        (
            &["SUBSCRIBE", &channel],
            Severity::Warn,
            "lock waiters (without it they poll)",
        ),
    ];
    let mut refused = Vec::new();
    for (command, severity, purpose) in needed {
        let mut dryrun = redis::cmd("ACL");
        dryrun.arg("DRYRUN").arg(&user);
        for part in command {
            dryrun.arg(*part);
        }
        match call(connection, &dryrun).await {
            Ok(Value::Okay) => {}
            Ok(Value::SimpleString(ok)) if ok == "OK" => {}
            Ok(other) => refused.push((severity, format!("{} ({purpose}): {}", command[0], text(&other)))),
            Err(err) if err.contains("unknown subcommand") || err.contains("NOPERM") => {
                report.add(
                    Severity::Info,
                    "permissions",
                    format!("ACL DRYRUN is not available ({err}): permissions unchecked"),
                );
                return;
            }
            Err(err) => refused.push((severity, format!("{} ({purpose}): {err}", command[0]))),
        }
    }
    let module = path == "module";
    if refused.is_empty() {
        report.add(
            Severity::Ok,
            "permissions",
            format!("user {user:?} may run every command ratelock sends"),
        );
    }
    for (severity, message) in refused {
        // With the module loaded, the scripts are only a fallback.
        let severity = if module {
            severity.min(Severity::Warn)
        } else {
            severity
        };
        report.add(
            severity,
            "permissions",
            format!("user {user:?} may not run {message}"),
        );
    }
}
