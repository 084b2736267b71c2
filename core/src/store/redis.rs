//! The Redis store: one reconnecting multiplexed connection (redis-rs `ConnectionManager`) shared by
//! every call, EVALSHA with a SCRIPT LOAD on NOSCRIPT, a timeout on every call, and never a replay
//! after an ambiguous failure (a timed-out or dropped command may have run).

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Value};

use super::script::{LuaScript, LIMIT};
use super::{LimitRequest, StoreOptions};
use crate::algorithm::{Outcome, Outcomes};
use crate::error::{Error, Result};
use crate::key::{storage_key, write_base};
use crate::rule::Rules;

/// A Redis server reached through one shared, reconnecting, multiplexed connection. Cheap to clone.
#[derive(Clone)]
pub struct RedisStore {
    connection: ConnectionManager,
    timeout: Duration,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl RedisStore {
    /// Connects to `url` (`redis://[user:password@]host:port[/db]`, or `rediss://` for TLS).
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Self> {
        let client = open_client(url, options).map_err(|e| Error::invalid_argument("url", e))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(options.timeout))
            .set_response_timeout(Some(options.timeout))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let connect = ConnectionManager::new_with_config(client, config);
        let connection = tokio::time::timeout(options.timeout, connect)
            .await
            .map_err(|_| Error::Timeout(options.timeout))?
            .map_err(map_error)?;
        Ok(RedisStore {
            connection,
            timeout: options.timeout,
        })
    }

    /// Runs `limit.lua` over every rule of the request in one round trip.
    pub async fn check(&self, request: &LimitRequest<'_>) -> Result<Outcomes> {
        let rules = request.rules.as_slice();
        let mut base = Vec::with_capacity(request.prefix.len() + request.key.len() + 8);
        write_base(&mut base, request.prefix, request.key);
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&LIMIT.sha).arg(rules.len());
        for rule in rules {
            let mut key = Vec::with_capacity(base.len() + rule.id().len());
            key.extend_from_slice(&base);
            key.extend_from_slice(rule.id().as_bytes());
            cmd.arg(key);
        }
        cmd.arg(if request.spend { "hit" } else { "peek" });
        match request.now_us {
            Some(now) => cmd.arg(now),
            None => cmd.arg(""),
        };
        cmd.arg(request.cost);
        for rule in rules {
            cmd.arg(rule.algorithm().code())
                .arg(rule.limit())
                .arg(rule.period_us())
                .arg(rule.burst());
        }
        match self.eval(&LIMIT, cmd).await {
            Ok(reply) => parse_outcomes(reply, rules.len()),
            Err(err) => Err(script_rejection(err, request)),
        }
    }

    /// Deletes the keys of every given rule for `key`.
    pub async fn reset(&self, prefix: &str, key: &[u8], rules: &Rules) -> Result<()> {
        let mut cmd = redis::cmd("DEL");
        for rule in rules.iter() {
            cmd.arg(storage_key(prefix, key, rule));
        }
        self.query(&cmd).await.map(drop)
    }

    /// EVALSHA; on NOSCRIPT (the script certainly did not run) load it and run it once more.
    async fn eval(&self, script: &LuaScript, cmd: Cmd) -> Result<Value> {
        match self.send(&cmd).await {
            Err(Failure::NoScript) => {
                let mut load = redis::cmd("SCRIPT");
                load.arg("LOAD").arg(script.body);
                self.query(&load).await?;
                self.query(&cmd).await
            }
            Err(Failure::Other(err)) => Err(err),
            Ok(value) => Ok(value),
        }
    }

    /// One command with the store's timeout; errors are mapped, never retried.
    async fn query(&self, cmd: &Cmd) -> Result<Value> {
        self.send(cmd).await.map_err(|failure| match failure {
            Failure::NoScript => Error::StoreUnavailable("NOSCRIPT after SCRIPT LOAD".into()),
            Failure::Other(err) => err,
        })
    }

    async fn send(&self, cmd: &Cmd) -> Result<Value, Failure> {
        let mut connection = self.connection.clone();
        match tokio::time::timeout(self.timeout, connection.send_packed_command(cmd)).await {
            Err(_) => Err(Failure::Other(Error::Timeout(self.timeout))),
            Ok(Err(err)) if err.is_timeout() => Err(Failure::Other(Error::Timeout(self.timeout))),
            Ok(Err(err)) => Err(Failure::Other(map_error(err))),
            Ok(Ok(Value::ServerError(err))) if err.code() == "NOSCRIPT" => Err(Failure::NoScript),
            Ok(Ok(Value::ServerError(err))) => Err(Failure::Other(Error::StoreUnavailable(format!(
                "{} {}",
                err.code(),
                err.details().unwrap_or_default()
            )))),
            Ok(Ok(value)) => Ok(value),
        }
    }
}

/// Why a command failed: NOSCRIPT is the one failure that is known not to have run anything.
enum Failure {
    NoScript,
    Other(Error),
}

fn open_client(url: &str, options: &StoreOptions) -> redis::RedisResult<redis::Client> {
    #[cfg(feature = "tls")]
    if url.starts_with("rediss://") {
        let _ = rustls::crypto::ring::default_provider().install_default();
        if let Some(pem) = &options.tls_root_ca {
            let certificates = redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(pem.clone()),
            };
            return redis::Client::build_with_tls(url, certificates);
        }
    }
    #[cfg(not(feature = "tls"))]
    let _ = options;
    redis::Client::open(url)
}

fn map_error(err: redis::RedisError) -> Error {
    Error::StoreUnavailable(err.to_string())
}

/// Turns the script's own "cost exceeds capacity of rule N" reply into the typed error.
fn script_rejection(err: Error, request: &LimitRequest<'_>) -> Error {
    let Error::StoreUnavailable(message) = &err else {
        return err;
    };
    let Some((_, index)) = message.split_once("cost exceeds capacity of rule ") else {
        return err;
    };
    let index: usize = index
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    match request.rules.get(index.wrapping_sub(1)) {
        Some(rule) => Error::CostExceedsCapacity {
            cost: request.cost,
            capacity: rule.capacity(),
            rule: rule.to_string(),
        },
        None => err,
    }
}

fn parse_outcomes(reply: Value, rules: usize) -> Result<Outcomes> {
    let bad = |what: &dyn std::fmt::Debug| {
        Error::StoreUnavailable(format!("unexpected reply from limit.lua: {what:?}"))
    };
    let items = match reply {
        Value::Array(items) if items.len() == rules * 5 => items,
        other => return Err(bad(&other)),
    };
    let mut numbers = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Int(n) if n >= 0 => numbers.push(n as u64),
            other => return Err(bad(&other)),
        }
    }
    Ok(numbers
        .chunks_exact(5)
        .map(|n| Outcome {
            allowed: n[0] == 1,
            limit: n[1],
            remaining: n[2],
            reset_after_us: n[3],
            retry_after_us: n[4],
        })
        .collect())
}
