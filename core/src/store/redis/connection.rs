//! The Redis store's shared async connection: ratelock's own pipelined connection to one server
//! (`redis://`, `rediss://` with or without `#insecure`, `redis+unix://`), or redis-rs's reconnecting
//! one where that does not serve the URL (`?protocol=resp3`); redis-rs's cluster connection
//! (`redis+cluster://a:p,b:p`, or `rediss+cluster://` over TLS) over ratelock's own connection to each
//! node (`cluster_node.rs`), which routes each command by its first key's slot and follows MOVED/ASK
//! (every script call keeps all its keys in one slot, the key layout's hash tag, so no public operation
//! can meet CROSSSLOT); or the
//! master that the sentinels name (`redis+sentinel://a:p,b:p/mastername`, or `rediss+sentinel://` over
//! TLS; `sentinel_master.rs`), asked again after a failure.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, RedisResult, Value};

#[cfg(feature = "cluster")]
use super::multi_host_urls::cluster_seeds;
use super::reply::{classify, Failure};
use crate::error::Error;

#[derive(Clone)]
pub(crate) enum SharedConnection {
    /// One server over TCP, TLS or a Unix socket: ratelock's own pipelined connection (see
    /// `pipelined.rs`).
    Plain(super::pipelined::Pipelined),
    /// One server the pipelined connection does not serve (`?protocol=resp3`): redis-rs's
    /// reconnecting manager.
    Single(ConnectionManager),
    #[cfg(feature = "cluster")]
    Cluster(redis::cluster_async::ClusterConnection<super::cluster_node::ClusterNode>),
    #[cfg(feature = "sentinel")]
    Sentinel(std::sync::Arc<super::sentinel_master::SentinelMaster>),
}

impl SharedConnection {
    /// Connects to one server through `client`. redis-rs tries each connect once: its retries would
    /// also retry a refused AUTH or SELECT, with backoff, past the call's timeout, and a wrong password
    /// would then end as a timeout (an outage that `on_error = allow` lets through) instead of the
    /// configuration error it is. A server that is down is the circuit breaker's to wait out.
    pub(crate) async fn single(client: redis::Client, timeout: Duration) -> RedisResult<Self> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(0);
        Ok(SharedConnection::Single(
            ConnectionManager::new_with_config(client, config).await?,
        ))
    }

    /// Connects to the cluster whose seed nodes `url` lists (`redis+cluster://a:p,b:p`), each node over
    /// ratelock's own connection (`cluster_node.rs`). redis-rs's `connection_timeout` and
    /// `response_timeout` are not read by those connections (they keep the store's timeout themselves).
    #[cfg(feature = "cluster")]
    pub(crate) async fn cluster(
        url: &str,
        timeout: Duration,
        tls: &super::tls_settings::TlsSettings,
    ) -> Result<Self, Error> {
        use super::cluster_node;
        let failed = |err: redis::RedisError| {
            cluster_node::from_redis(&err, timeout)
                .or_else(|| refusal_behind(&err))
                .unwrap_or_else(|| crate::store::connection_core::connect_error(&err, timeout, false))
        };
        let seeds = cluster_seeds(url);
        let client = redis::cluster::ClusterClient::builder(seeds.clone())
            // Each node call keeps its own deadline; this one only bounds a call that follows
            // redirections.
            .overall_response_timeout(Some(timeout * 2))
            .retries(3)
            // A retry that found no connection to its node (a dead master), or met TRYAGAIN,
            // CLUSTERDOWN, MASTERDOWN or LOADING, waits 1 to 20, 40, then 80 ms; a lost connection,
            // MOVED and ASK are retried at once. redis-rs's least wait is 1.28 s, past every call's
            // deadline: a dead master's calls all timed out at twice the timeout instead of failing.
            .min_retry_wait(1)
            .retry_wait_formula(10, 2)
            .build()
            .map_err(failed)?;
        cluster_node::use_timeout(timeout);
        // redis-rs reports every seed it could not connect to as one I/O error: a refused password or
        // certificate would be an outage. The first seed says what it is first.
        if let Some(first) = seeds.first() {
            cluster_node::refusal_of(first, timeout, tls).await?;
            // `#insecure` checks no certificate: it has no choice of CA to keep to.
            if first.starts_with("rediss://") && !first.ends_with("#insecure") {
                cluster_node::use_tls(tls)?;
            }
        }
        let nodes = client.get_async_generic_connection().await.map_err(failed)?;
        Ok(SharedConnection::Cluster(nodes))
    }

    /// Sends one command and reads its reply within `timeout`, as a value or a typed failure.
    pub(crate) async fn send(&mut self, cmd: &Cmd, timeout: Duration) -> Result<Value, Failure> {
        #[cfg(feature = "cluster")]
        let cluster = matches!(self, SharedConnection::Cluster(_));
        let reply = match self {
            SharedConnection::Plain(plain) => {
                return send_written(plain, super::packing::packed(cmd), timeout).await
            }
            // Boxed: finding a master again nests deep futures that every caller would otherwise carry.
            #[cfg(feature = "sentinel")]
            SharedConnection::Sentinel(master) => return Box::pin(master.send(cmd)).await,
            // The node's connection keeps the deadline, so a connection a call timed out on is retired
            // (a deadline around it would drop the call first).
            #[cfg(feature = "cluster")]
            SharedConnection::Cluster(_) => Ok(self.send_redis(cmd).await),
            other => tokio::time::timeout(timeout, other.send_redis(cmd)).await,
        };
        match reply {
            Err(_) => Err(Failure::Other(Error::Timeout(timeout))),
            Ok(reply) => {
                // A cluster node connection's own failure, carried through redis-rs's routing.
                #[cfg(feature = "cluster")]
                if let Err(err) = &reply {
                    let carried = super::cluster_node::from_redis(err, timeout);
                    if let Some(carried) = carried.or_else(|| refusal_behind(err)) {
                        return Err(Failure::Other(carried));
                    }
                    if cluster {
                        if let Some(moving) = still_moving(err) {
                            return Err(Failure::Other(moving));
                        }
                    }
                }
                classify(reply, timeout)
            }
        }
    }

    /// The plain connection, which also takes calls already written as RESP bytes ([`send_written`]);
    /// `None` for redis-rs's, which take commands.
    pub(crate) fn plain(&self) -> Option<&super::pipelined::Pipelined> {
        match self {
            SharedConnection::Plain(plain) => Some(plain),
            _ => None,
        }
    }

    /// One command over one of redis-rs's connections.
    async fn send_redis(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        match self {
            SharedConnection::Plain(_) => Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "the plain connection is not a redis-rs connection",
            ))),
            SharedConnection::Single(connection) => connection.send_packed_command(cmd).await,
            #[cfg(feature = "cluster")]
            SharedConnection::Cluster(connection) => match module_call_key(cmd) {
                // redis-rs routes a command it does not know by its first argument, which is a module
                // call's key count: sent by its key instead (else most calls meet a MOVED, and each
                // refreshes the slot map).
                Some(key) => {
                    use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
                    let route = Route::with_key(key, SlotAddr::Master);
                    let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                    connection.route_command(cmd.clone(), routing).await
                }
                None => redis::aio::ConnectionLike::req_packed_command(connection, cmd).await,
            },
            #[cfg(feature = "sentinel")]
            SharedConnection::Sentinel(_) => Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "the Sentinel master's connection is not a redis-rs connection",
            ))),
        }
    }
}

/// The first key of a module call (`RATELOCK.<COMMAND> numkeys key ...`), `None` for any other command
/// or one without keys.
#[cfg(feature = "cluster")]
fn module_call_key(cmd: &Cmd) -> Option<&[u8]> {
    let mut args = cmd.args_iter().map(|arg| match arg {
        redis::Arg::Simple(bytes) => Some(bytes),
        _ => None,
    });
    let name = args.next()??;
    if name.len() < 9 || !name[..9].eq_ignore_ascii_case(b"RATELOCK.") {
        return None;
    }
    let keys: u64 = std::str::from_utf8(args.next()??).ok()?.parse().ok()?;
    (keys > 0).then(|| args.next()?)?
}

/// A call already written as RESP bytes on the plain connection, as a value or a typed failure (the
/// connection keeps its own per-call deadline and answers typed transport errors).
pub(crate) async fn send_written(
    plain: &super::pipelined::Pipelined,
    bytes: Vec<u8>,
    timeout: Duration,
) -> Result<Value, Failure> {
    let reply = plain.send_written(bytes).await.map_err(Failure::Other)?;
    classify(Ok(reply), timeout)
}

/// The outage a cluster call meets when redis-rs has followed its retries' worth of `MOVED` or `ASK`
/// and is still redirected: the slot's owner is changing (a failover, a resharding) or its new owner
/// could not be reached. On a cluster URL that is the cluster in motion, never the misconfiguration the
/// same reply is on a plain `redis://` URL (see `connection_core::error_table`).
#[cfg(feature = "cluster")]
fn still_moving(err: &redis::RedisError) -> Option<Error> {
    matches!(err.code(), Some("MOVED" | "ASK")).then(|| {
        Error::StoreUnavailable(format!(
            "the cluster still redirected the call after its retries (its slots are moving): {err}"
        ))
    })
}

/// The configuration error behind redis-rs's "no connection" to a cluster node, when a node refused
/// its connection lately (a certificate, a password): redis-rs drops its node connects' errors, and its
/// "no connection" alone would be an outage, which `on_error = allow` admits.
#[cfg(feature = "cluster")]
fn refusal_behind(err: &redis::RedisError) -> Option<Error> {
    let no_connection = err.kind() == redis::ErrorKind::ClusterConnectionNotFound
        || (err.kind() == redis::ErrorKind::Io
            && err.to_string().contains("Failed to create initial connections"));
    no_connection.then(super::cluster_node::recent_refusal).flatten()
}

#[cfg(all(test, feature = "cluster"))]
mod tests {
    use super::*;

    #[test]
    fn a_redirection_left_after_the_retries_is_an_outage_and_nothing_else_is_taken_for_one() {
        let reply = |resp: &[u8]| {
            redis::parse_redis_value(resp)
                .unwrap()
                .extract_error()
                .unwrap_err()
        };
        for redirected in [
            &b"-MOVED 2592 127.0.0.1:7001\r\n"[..],
            b"-ASK 2592 127.0.0.1:7001\r\n",
        ] {
            let moving = still_moving(&reply(redirected)).expect("an outage");
            assert!(moving.is_store_failure(), "{moving}");
            assert!(moving.to_string().contains("2592 127.0.0.1:7001"), "{moving}");
        }
        assert!(still_moving(&reply(b"-ERR unknown command\r\n")).is_none());
        assert!(still_moving(&reply(b"-CLUSTERDOWN The cluster is down\r\n")).is_none());
    }
}
