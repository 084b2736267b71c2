//! The connection to one node of a Redis Cluster, as redis-rs's cluster connection drives it (it routes
//! by slot, follows MOVED and ASK, and refreshes the slot map): ratelock's own pipelined connection in
//! place of redis-rs's multiplexed one, so a cluster keeps the single server's connection rules. A
//! connection a node closed while idle is found before a call is written to it (redis-rs's failed the
//! next call), and a call that may have reached the node is never sent again: its failure goes back as
//! an error redis-rs does not retry, and comes out as the same typed error as on one server. A node whose
//! call timed out is suspect until it answers again (`suspect_nodes.rs`): its calls fail at once,
//! unsent, so redis-rs routes around it and no refresh waits on it, and a frozen master a failover
//! replaced is left behind although it still accepts connections and never answers MOVED; so is a node
//! whose connect failed as an outage (its port refused, the connect or handshake timed out). A node that refuses its connection by its answer (a certificate, a
//! password) is remembered for a while, so that the routing's "no connection" that follows says why (a
//! configuration error, never an outage). The routing's own `PING` and `CLUSTER SLOTS` are answered
//! from the node's answers of a moment ago (`recent_answers.rs`), so its rebuilds of the slot map,
//! several per failed call while a master is down, cost the healthy nodes no round trip.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use futures_util::FutureExt;
use redis::{Cmd, IntoConnectionInfo, Pipeline, RedisError, RedisFuture, Value};

use super::endpoint::Endpoint;
use super::pipelined::Pipelined;
use super::recent_answers::{Question, RecentAnswers};
use super::suspect_nodes;
use super::tls_settings::TlsSettings;
use crate::error::Error;
use crate::store::connection_core::{setting_named, SETTING_TLS};

/// The error code a failure that may have run travels under through redis-rs (never retried there).
const MAY_HAVE_RUN: &str = "RATELOCK_MAY_HAVE_RUN";

/// The calls' deadline on node connections, in milliseconds: the shortest timeout of the process's
/// cluster stores (redis-rs opens node connections without saying which store they serve, so a
/// process with several cluster stores gives every node call the shortest of their timeouts).
static NODE_TIMEOUT_MS: AtomicU64 = AtomicU64::new(u64::MAX);

/// Makes `timeout` the node calls' deadline if it is shorter than the one in force (called before a
/// cluster store opens its connection).
pub(crate) fn use_timeout(timeout: Duration) {
    let millis = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX).max(1);
    NODE_TIMEOUT_MS.fetch_min(millis, Ordering::Relaxed);
}

/// What the node connections trust and present over TLS (`rediss+cluster://`): the settings the first
/// TLS cluster store of the process was given (its `tls_root_ca`, else the public roots, and its client
/// certificate if any). Process-wide for the same reason as the deadline, so one process keeps to one
/// choice for all its TLS clusters.
static NODE_TLS: Mutex<Option<TlsSettings>> = Mutex::new(None);

/// Makes `tls` what the node connections trust and present over TLS; refused (a configuration error)
/// when another TLS cluster store of the process made another choice, which its nodes would otherwise
/// be checked against (or shown).
pub(crate) fn use_tls(tls: &TlsSettings) -> crate::error::Result<()> {
    let mut chosen = NODE_TLS.lock();
    match chosen.as_ref() {
        None => {
            *chosen = Some(tls.clone());
            Ok(())
        }
        Some(held) if held == tls => Ok(()),
        Some(_) => Err(Error::configuration(
            SETTING_TLS,
            "the nodes of all the TLS Redis Clusters of one process are checked against one choice of \
             CA and shown one client certificate, and another cluster store of this process made \
             another (give every rediss+cluster:// store the same tls_root_ca, one PEM that may hold \
             several CAs, and the same tls_client_cert and tls_client_key)",
        )),
    }
}

fn node_timeout() -> Duration {
    match NODE_TIMEOUT_MS.load(Ordering::Relaxed) {
        u64::MAX => Duration::from_secs(1),
        millis => Duration::from_millis(millis),
    }
}

/// A node's refusal of a connection (a configuration error), kept for [`REFUSAL_KEPT`]: redis-rs drops
/// its node connects' errors and later says only that it has no connection.
static LAST_REFUSAL: Mutex<Option<(u32, Instant, Error)>> = Mutex::new(None);
/// How long a node's refusal answers for the routing's "no connection".
const REFUSAL_KEPT: Duration = Duration::from_secs(30);

/// The configuration error a node of this process refused a connection with in the last
/// [`REFUSAL_KEPT`], if any: what a cluster call that found no connection stands for.
pub(crate) fn recent_refusal() -> Option<Error> {
    let kept = LAST_REFUSAL.lock();
    let (pid, at, err) = kept.as_ref()?;
    (*pid == std::process::id() && at.elapsed() < REFUSAL_KEPT).then(|| err.clone())
}

/// One node's connection (cheap to clone: redis-rs clones it per call).
#[derive(Clone)]
pub(crate) struct ClusterNode {
    link: Pipelined,
    /// `host:port`, what the node's suspicion goes by (see `suspect_nodes.rs`).
    address: Arc<str>,
    /// What the routing's `PING` and `CLUSTER SLOTS` are answered with, moments after the node's own
    /// answers (see `recent_answers.rs`).
    recent: Arc<RecentAnswers>,
}

impl redis::cluster_async::Connect for ClusterNode {
    fn connect_with_config<'a, T>(info: T, _config: redis::AsyncConnectionConfig) -> RedisFuture<'a, Self>
    where
        T: IntoConnectionInfo + Send + 'a,
    {
        async move {
            let info = info.into_connection_info()?;
            let endpoint = Endpoint::of_info(&info, Default::default())
                .map_err(|err| to_redis(err, false))?
                .ok_or_else(|| {
                    RedisError::from((
                        redis::ErrorKind::InvalidClientConfig,
                        "a cluster node ratelock's connection cannot serve (RESP3)",
                    ))
                })?;
            let address: Arc<str> = format!("{}:{}", endpoint.host(), endpoint.port()).into();
            if suspect_nodes::is_suspect(&address) {
                return Err(unsent_to_suspect());
            }
            let tls = NODE_TLS.lock().clone().unwrap_or_default();
            let node = Pipelined::new(endpoint, tls, node_timeout(), Arc::default());
            // Connected now, so a node that cannot be reached is redis-rs's to handle as such.
            if let Err(err) = node.open().await {
                if err.is_store_failure() {
                    // Down (its port refuses, the connect or handshake times out, the connection
                    // closes before it is ready): the routing's next rebuilds of
                    // the slot map, which hold every shard's calls, do not wait on it again until its
                    // probe finds it answering.
                    suspect_nodes::suspect(&address, &node, node_timeout());
                } else {
                    *LAST_REFUSAL.lock() = Some((std::process::id(), Instant::now(), err.clone()));
                }
                return Err(to_redis(err, false));
            }
            Ok(ClusterNode {
                link: node,
                address,
                recent: Arc::default(),
            })
        }
        .boxed()
    }
}

impl redis::aio::ConnectionLike for ClusterNode {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let question = Question::of(cmd);
        // Never for a suspect node: its calls and checks fail unsent (in `send`), so the routing
        // does not take it back for having answered a moment before it failed.
        let recent = question
            .filter(|_| !suspect_nodes::is_suspect(&self.address))
            .and_then(|question| self.recent.answer(question));
        if let Some(answer) = recent {
            return async move { Ok(answer) }.boxed();
        }
        async move { self.send(super::packing::packed(cmd), question).await }.boxed()
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        _pipeline: &'a Pipeline,
        _offset: usize,
        _count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        // ratelock sends no pipeline on a cluster; one sent command by command could neither stay
        // atomic (MULTI/EXEC) nor be refused again safely halfway, so it is refused (never retried).
        async {
            Err(RedisError::from((
                redis::ErrorKind::Client,
                "ratelock's cluster node connection sends no pipelines",
            )))
        }
        .boxed()
    }

    fn get_db(&self) -> i64 {
        0
    }
}

impl ClusterNode {
    /// One call (`question`, if it is one of the routing's); an error reply is an error (redis-rs reads
    /// MOVED, ASK and TRYAGAIN from errors). A call to a suspect node fails at once, unsent; a call that
    /// times out makes its node suspect.
    async fn send(&self, bytes: Vec<u8>, question: Option<Question>) -> redis::RedisResult<Value> {
        if suspect_nodes::is_suspect(&self.address) {
            return Err(unsent_to_suspect());
        }
        let (reply, may_have_run) = self.link.send_telling(bytes).await;
        match &reply {
            Ok(answer) => self.recent.answered(question, answer),
            Err(err) => {
                self.recent.failed();
                if let Error::Timeout(_) = err {
                    suspect_nodes::suspect(&self.address, &self.link, node_timeout());
                }
            }
        }
        reply.map_err(|err| to_redis(err, may_have_run))?.extract_error()
    }
}

/// What a call to a suspect node, or a connect to one, fails with: a dropped connection, nothing sent,
/// which redis-rs answers by routing the node's slots to the rest of its shard.
fn unsent_to_suspect() -> RedisError {
    to_redis(
        Error::StoreUnavailable(
            "the node timed out or refused a connection, and has not answered since".into(),
        ),
        false,
    )
}

/// The error that refuses every connection to the seed `url` (`redis://`, `rediss://`), such as a wrong
/// password or an untrusted certificate, found by opening one: `Ok` when it opens, and for an outage
/// (the seeds that answer are redis-rs's to find).
pub(crate) async fn refusal_of(url: &str, timeout: Duration, tls: &TlsSettings) -> crate::error::Result<()> {
    let Some(endpoint) = Endpoint::for_pipelined(url)? else {
        return Ok(());
    };
    match Pipelined::new(endpoint, tls.clone(), timeout, Arc::default())
        .open()
        .await
    {
        Err(err) if !err.is_store_failure() => Err(err),
        _ => Ok(()),
    }
}

/// `err` as redis-rs carries it. A call that may have run goes as an error redis-rs never retries; one
/// that never left goes as a dropped connection, which redis-rs reconnects for and may send again.
fn to_redis(err: Error, may_have_run: bool) -> RedisError {
    if may_have_run || !err.is_store_failure() {
        return redis::make_extension_error(MAY_HAVE_RUN.into(), Some(encode(&err)));
    }
    // The bare message: the store's error made of it adds its own "store unavailable: ".
    let message = match err {
        Error::StoreUnavailable(message) => message,
        other => other.to_string(),
    };
    RedisError::from(std::io::Error::new(std::io::ErrorKind::ConnectionReset, message))
}

/// The typed error a node connection's failure stood for, if `err` carries one (see [`to_redis`]).
pub(crate) fn from_redis(err: &RedisError, timeout: Duration) -> Option<Error> {
    if err.code() != Some(MAY_HAVE_RUN) {
        return None;
    }
    let (code, rest) = err.detail()?.split_once(' ')?;
    let (setting, message) = rest.split_once('\u{1f}')?;
    Some(match code {
        "TIMEOUT" => Error::Timeout(timeout),
        "STORE_UNAVAILABLE" => Error::StoreUnavailable(message.to_owned()),
        "CONFIGURATION" => Error::configuration(setting_named(setting), message),
        "INVALID_ARGUMENT" => Error::invalid_argument("url", message),
        // A protocol error, or one this module does not carry: never an outage.
        _ => Error::Protocol(message.to_owned()),
    })
}

/// `CODE setting<US>message` (the unit separator keeps any message whole).
fn encode(err: &Error) -> String {
    let (setting, message) = match err {
        Error::Configuration { setting, reason } => (*setting, reason.clone()),
        Error::StoreUnavailable(message) | Error::Protocol(message) => ("", message.clone()),
        Error::InvalidArgument { reason, .. } => ("", reason.clone()),
        other => ("", other.to_string()),
    };
    format!("{} {setting}\u{1f}{message}", err.code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::cluster_async::Connect;

    #[tokio::test]
    async fn a_node_whose_port_refuses_is_suspect_so_the_next_connects_wait_on_nothing() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let url = format!("redis://127.0.0.1:{port}");
        let first = ClusterNode::connect_with_config(url.as_str(), Default::default()).await;
        let Err(refused) = first else {
            panic!("connected to a closed port")
        };
        assert!(refused.to_string().contains("refused"), "{refused}");
        assert!(suspect_nodes::is_suspect(&format!("127.0.0.1:{port}")));
        let Err(next) = ClusterNode::connect_with_config(url.as_str(), Default::default()).await else {
            panic!("connected to a closed port")
        };
        assert!(next.to_string().contains("has not answered since"), "{next}");
    }

    /// A node on a closed loopback port (any call that reached the wire would fail as refused) that
    /// answered a call and the slot map a moment ago.
    fn node_that_just_answered() -> ClusterNode {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let endpoint = Endpoint::for_pipelined(&format!("redis://127.0.0.1:{port}"))
            .unwrap()
            .expect("a plain redis:// URL");
        let node = ClusterNode {
            link: Pipelined::new(endpoint, TlsSettings::default(), node_timeout(), Arc::default()),
            address: format!("127.0.0.1:{port}").into(),
            recent: Arc::default(),
        };
        node.recent.answered(None, &Value::Int(1));
        let map = Value::Array(vec![Value::Int(0), Value::Int(16383)]);
        node.recent.answered(Some(Question::SlotMap), &map);
        node
    }

    #[tokio::test]
    async fn a_suspect_node_is_never_vouched_for_by_its_answers_of_a_moment_ago() {
        use redis::aio::ConnectionLike;
        let mut node = node_that_just_answered();
        let (ping, slots) = (redis::cmd("PING"), redis::cmd("CLUSTER").arg("SLOTS").clone());
        // Answered from a moment ago: nothing is sent (a send to the closed port would fail).
        assert!(node.req_packed_command(&ping).await.is_ok());
        assert!(node.req_packed_command(&slots).await.is_ok());
        // Its next call timed out: from then on the routing's checks fail unsent, so the routing does
        // not take the node back for having answered before it froze.
        suspect_nodes::suspect(&node.address, &node.link, node_timeout());
        for question in [&ping, &slots] {
            let Err(refused) = node.req_packed_command(question).await else {
                panic!("a suspect node was vouched for by its recent answers")
            };
            assert!(
                refused.to_string().contains("has not answered since"),
                "{refused}"
            );
        }
    }

    #[test]
    fn every_failure_comes_back_as_the_typed_error_it_was() {
        let timeout = Duration::from_millis(250);
        let failures = [
            Error::Timeout(timeout),
            Error::invalid_argument("url", "no host"),
            Error::StoreUnavailable("the connection closed before the reply".into()),
            Error::Protocol("a reply that is not RESP".into()),
            Error::configuration(crate::store::connection_core::SETTING_CREDENTIALS, "WRONGPASS"),
        ];
        for err in failures {
            let carried = to_redis(err.clone(), true);
            assert!(
                matches!(carried.retry_method(), redis::RetryMethod::NoRetry),
                "{err}"
            );
            assert_eq!(from_redis(&carried, timeout).as_ref(), Some(&err));
        }
    }

    #[test]
    fn a_code_it_does_not_carry_is_a_protocol_error_never_an_outage() {
        let odd = redis::make_extension_error(MAY_HAVE_RUN.into(), Some("LOCK_LOST \u{1f}gone".into()));
        let decoded = from_redis(&odd, Duration::from_secs(1)).unwrap();
        assert!(matches!(decoded, Error::Protocol(_)), "{decoded:?}");
    }

    #[test]
    fn a_failure_before_any_byte_left_may_be_sent_again() {
        let carried = to_redis(Error::StoreUnavailable("connection refused".into()), false);
        assert!(matches!(carried.retry_method(), redis::RetryMethod::Reconnect));
        assert!(from_redis(&carried, Duration::from_secs(1)).is_none());
    }
}
