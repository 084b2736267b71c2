//! The Redis store: one connection per process shared by every call (ratelock's own pipelined
//! connection to one server, over TCP, TLS or a Unix socket, to each node of a cluster, which
//! redis-rs routes to, and to the master the sentinels name),
//! EVALSHA with a SCRIPT LOAD on NOSCRIPT, a timeout on every call, and never a replay after an
//! ambiguous failure (a timed-out or dropped command may have run).

pub(crate) mod call_tag;
#[cfg(feature = "cluster")]
pub(crate) mod cluster_node;
pub(crate) mod commands;
mod connection;
mod endpoint;
mod functions;
mod gate;
mod lane;
mod lease_calls;
mod lock_kinds;
mod multi_host_urls;
mod packing;
mod pipelined;
#[cfg(feature = "cluster")]
mod recent_answers;
pub mod redlock;
mod redlock_unheard;
pub(crate) mod redlock_watch;
pub(crate) mod reply;
mod route_walk;
mod script;
#[cfg(feature = "sentinel")]
mod sentinel_master;
#[cfg(feature = "sentinel")]
mod sentinels;
pub(crate) mod server_code;
mod socket_peek;
mod stream;
pub(crate) mod subscriber;
#[cfg(feature = "cluster")]
mod suspect_nodes;
mod tls_settings;
pub mod wire;
mod wire_call;
pub(crate) mod wire_code;
mod wire_connection;
mod wire_reader;

pub use self::functions::{function_library, FunctionLibrary};
pub use self::gate::Gate;
pub use self::script::tagged_script;

use std::time::Duration;

use redis::{Cmd, Value};

use self::call_tag::CallTag;
use self::commands::{
    limit_command, limit_outcomes, refund_command, standing_changed, standing_command, write_limit_call,
};
use self::connection::SharedConnection;
use self::endpoint::Endpoint;
use self::lane::BlockingLane;
use self::multi_host_urls::{first_seed, is_cluster_url, is_sentinel_url};
use self::pipelined::Pipelined;
use self::reply::Failure;
use self::route_walk::{RouteWalk, Step};
use self::script::{LuaScript, LIMIT};
use self::server_code::{Check, CodeChoice, Route};
use self::subscriber::Subscriber;
use self::tls_settings::TlsSettings;
use super::options::{ServerCode, StoreOptions};
use super::roles::{EntryChange, LimitRequest, OverrideChange};
use crate::algorithm::overrides;
use crate::algorithm::standing::Verdict;
use crate::error::{Error, Result};
use crate::key::storage_key;
use crate::process::PerProcess;
use crate::rule::Rules;
use crate::store::connection_core::{connect_error, connect_timed_out};

/// How often at most a cluster store checks the server's code again after its calls met outages.
const CLUSTER_CODE_RECHECK: Duration = Duration::from_secs(1);

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// A Redis server reached through one shared, reconnecting, multiplexed connection. Cheap to clone.
///
/// Fork-safe: the connections, the blocking lane and the pub/sub subscriber belong to the process that
/// opened them. A forked child that uses an inherited store opens its own on first use and never
/// touches the parent's (see [`crate::process`]).
#[derive(Clone)]
pub struct RedisStore {
    shared: std::sync::Arc<Shared>,
}

/// What every process's connections are opened from.
struct Shared {
    /// The URL given (a cluster's or Sentinel's own form).
    url: String,
    /// The one server's client (a cluster's first seed; none behind Sentinel, whose master changes).
    client: Option<redis::Client>,
    /// A Redis Cluster URL (read only with the `cluster` feature, which opens one).
    #[cfg_attr(not(feature = "cluster"), allow(dead_code))]
    cluster: bool,
    timeout: Duration,
    /// Which server code the calls run (the module or Lua).
    server_code: ServerCode,
    /// `rediss://`: the PEM certificate(s) trusted in place of the public roots, for a binding's own
    /// TLS socket (the wire path) to trust the same.
    tls: TlsSettings,
    /// Where the subscriber connects (lock waiters' wake-ups).
    source: self::subscriber::Source,
    process: PerProcess<Connections>,
}

/// The connections of one process.
struct Connections {
    /// The circuit breaker every path of this store passes (one per store and process).
    gate: Gate,
    /// The one plain `redis://` server the URL names (`None` for TLS, Unix sockets, cluster, Sentinel).
    endpoint: Option<Endpoint>,
    connection: tokio::sync::OnceCell<SharedConnection>,
    subscriber: std::sync::Arc<Subscriber>,
    /// The blocking connection for sync callers (one server only; a cluster routes per key).
    lane: Option<std::sync::Arc<BlockingLane>>,
    /// Whether the server runs the ratelock module, as last checked (per connection).
    code: CodeChoice,
    /// Held while the server is checked, so concurrent first calls check once.
    checking: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("timeout", &self.shared.timeout)
            .finish()
    }
}

impl RedisStore {
    /// Connects to `url`: `redis://[user:password@]host:port[/db]`, `rediss://` for TLS,
    /// `redis+cluster://[user:password@]host:port,host:port` for a Redis Cluster (its seed nodes;
    /// `rediss+cluster://` over TLS, with `#insecure` at the end to check no certificate), or
    /// `redis+sentinel://host:port,host:port/mastername` for the master that the sentinels name.
    ///
    /// Nothing is opened here (lazy start): the first call connects; [`ping`](Self::ping) fails at boot.
    ///
    /// The query parameter `server_code=auto|module|lua` chooses which server code runs the calls (the
    /// ratelock module or the Lua scripts), over [`StoreOptions::server_code`].
    ///
    /// The options are checked as [`Store::connect`](crate::Store::connect) checks them: a half-given
    /// client certificate, or a TLS or Sentinel option on a URL that would not read it, is an invalid
    /// argument.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Self> {
        options.check_for_store(url)?;
        Self::new(url, options)
    }

    /// [`connect`](Self::connect) without the `async`: it does no I/O.
    pub(crate) fn new(url: &str, options: &StoreOptions) -> Result<Self> {
        let (url, server_code) = server_code::take_from_url(url)?;
        let server_code = server_code.unwrap_or(options.server_code);
        let url = url.as_str();
        let cluster = is_cluster_url(url);
        let sentinel = is_sentinel_url(url);
        #[cfg(not(feature = "cluster"))]
        if cluster {
            return Err(Error::invalid_argument(
                "url",
                "redis+cluster:// and rediss+cluster:// need ratelock's `cluster` feature",
            ));
        }
        // No I/O here (lazy start): behind Sentinel, the connection and the subscriber each ask the
        // sentinels for the master when they connect.
        let (client, source) = if sentinel {
            (None, sentinel_source(url, options)?)
        } else {
            let node_url = if cluster {
                first_seed(url).ok_or_else(|| Error::invalid_argument("url", "no host in the cluster URL"))?
            } else {
                url.to_owned()
            };
            let client = open_client(&node_url, options).map_err(|e| Error::invalid_argument("url", e))?;
            // Pub/sub (lock waiters' wake-ups): on a cluster, any node hears every PUBLISH.
            let source = self::subscriber::Source::Fixed(client.clone());
            (Some(client), source)
        };
        let store = RedisStore {
            shared: std::sync::Arc::new(Shared {
                url: url.to_owned(),
                client,
                cluster,
                timeout: options.timeout,
                server_code,
                tls: TlsSettings::of(options),
                source,
                process: PerProcess::new(),
            }),
        };
        // Lazy start: nothing is opened until the first call (see `ping` to fail at boot).
        Ok(store)
    }

    /// This process's connections (opened lazily: after a fork, the child opens its own).
    /// The route a limiter call takes now (see [`Store::limit_route`](crate::Store::limit_route)).
    pub(crate) fn limit_route(&self) -> Option<&'static str> {
        let module_command = script::LIMIT.module_command.is_some();
        self.connections().code.route(module_command).map(Route::name)
    }

    fn connections(&self) -> &Connections {
        let shared = &self.shared;
        shared.process.get_or_init(|| {
            let timeout = shared.timeout;
            let endpoint = Endpoint::from_url(&shared.url).ok().flatten();
            let probe = endpoint.clone().map(|endpoint| -> gate::Probe {
                std::sync::Arc::new(move || lane::answers_ping(&endpoint, timeout))
            });
            let gate = Gate::new(probe, timeout);
            let code = CodeChoice::new(shared.server_code);
            let opened = code.generation();
            Connections {
                connection: tokio::sync::OnceCell::new(),
                subscriber: Subscriber::new(shared.source.clone(), timeout),
                // The lane talks to one plain redis:// server: not for a cluster, nor for a master that
                // can change (nor TLS or a Unix socket, which the pipelined connection serves alone).
                lane: endpoint.clone().map(|endpoint| {
                    std::sync::Arc::new(BlockingLane::new(endpoint, timeout, gate.clone(), opened.clone()))
                }),
                endpoint,
                gate,
                code,
                checking: tokio::sync::Mutex::new(()),
            }
        })
    }

    /// This process's circuit breaker for this store, shared by every path (hits, locks, the blocking
    /// lane, Node's wire client).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use ratelock::store::connection_core::BreakerState;
    /// // No I/O until the first call: the server need not be up.
    /// let store = ratelock::store::RedisStore::connect("redis://127.0.0.1:1/", &Default::default()).await?;
    /// assert_eq!(store.gate().state(), BreakerState::Closed);
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub fn gate(&self) -> &Gate {
        &self.connections().gate
    }

    /// The PEM certificate(s) this store trusts for `rediss://` in place of the public roots, if any.
    pub fn tls_root_ca(&self) -> Option<&[u8]> {
        self.shared.tls.root_ca.as_deref()
    }

    /// The client certificate (PEM chain) this store presents on `rediss://`, if it was given one.
    pub fn tls_client_cert(&self) -> Option<&[u8]> {
        self.shared.tls.client_cert.as_deref()
    }

    /// The private key (PEM) of [`tls_client_cert`](Self::tls_client_cert), if it was given one.
    pub fn tls_client_key(&self) -> Option<&[u8]> {
        self.shared.tls.client_key.as_deref()
    }

    /// This process's multiplexed connection, connecting on first use.
    async fn connection(&self) -> Result<SharedConnection> {
        if let Some(connection) = self.connections().connection.get() {
            return Ok(connection.clone());
        }
        self.first_connection().await
    }

    /// Connects this process's multiplexed connection (one caller connects, the others wait for it).
    /// Boxed: the connect futures are deep, and every call's future would otherwise carry them.
    fn first_connection(&self) -> BoxFuture<'_, Result<SharedConnection>> {
        Box::pin(async move {
            let shared = &self.shared;
            let tls = shared.url.starts_with("rediss");
            let failed = |err: redis::RedisError| connect_error(&err, shared.timeout, tls);
            let connect = async {
                #[cfg(feature = "cluster")]
                if shared.cluster {
                    return SharedConnection::cluster(&shared.url, shared.timeout, &shared.tls).await;
                }
                // A Sentinel URL (read once, with the sentinels' credentials) is the subscriber's source too.
                #[cfg(feature = "sentinel")]
                if let self::subscriber::Source::Sentinel { url, .. } = &shared.source {
                    let opened = self.connections().code.generation();
                    let (url, tls) = (url.clone(), shared.tls.clone());
                    let master = sentinel_master::SentinelMaster::connect(url, tls, shared.timeout, opened);
                    return Ok(SharedConnection::Sentinel(std::sync::Arc::new(master.await?)));
                }
                // One server over TCP, TLS or a Unix socket: ratelock's own connection, which finds a
                // connection closed while idle before writing a call to it.
                let own = match self.connections().endpoint.clone() {
                    Some(endpoint) => Some(endpoint),
                    None => Endpoint::for_pipelined(&shared.url)?,
                };
                if let Some(endpoint) = own {
                    let plain = Pipelined::new(
                        endpoint,
                        shared.tls.clone(),
                        shared.timeout,
                        self.connections().code.generation(),
                    );
                    plain.open().await?;
                    return Ok(SharedConnection::Plain(plain));
                }
                let client = shared.client.clone().ok_or_else(|| {
                    Error::invalid_argument("url", "redis+sentinel:// needs ratelock's `sentinel` feature")
                })?;
                SharedConnection::single(client, shared.timeout)
                    .await
                    .map_err(failed)
            };
            let open = async {
                // Callers queued behind a connect that failed do not each try again: the breaker it
                // opened answers them at once.
                self.gate().admit()?;
                // Nothing is sent before the connection opens: a connect that runs out of time is an
                // outage that says so, never "the command may have run".
                tokio::time::timeout(shared.timeout, connect)
                    .await
                    .map_err(|_| connect_timed_out(shared.timeout, tls))?
            };
            self.connections()
                .connection
                .get_or_try_init(|| open)
                .await
                .cloned()
        })
    }

    pub(crate) fn subscriber(&self) -> &std::sync::Arc<Subscriber> {
        &self.connections().subscriber
    }

    /// Runs `limit.lua` over every rule of the request in one round trip.
    pub async fn check(&self, request: &LimitRequest<'_>) -> Result<Verdict> {
        if let Some(max_wait) = request.max_wait_us {
            crate::algorithm::reserve::check_request(request.rules, max_wait)?;
        }
        if let Some(reply) = self.limit_in_one_pass(request).await {
            return limit_outcomes(reply, request);
        }
        // Boxed, like the walk in `limit_in_one_pass`: the route walk's state is large (about 1.7 KB), and
        // held inline it would be set up and moved with every call's future, one pass or not.
        let reply = Box::pin(self.eval(&LIMIT, limit_command(request))).await;
        limit_outcomes(reply, request)
    }

    /// A limit call on the plain connection, on the route the server's check gave it (the module's
    /// command or the library's function), written as bytes in one pass; the tagged EVALSHA is built
    /// only when that route refuses the call, and the walk goes on from there. `None`, with nothing
    /// sent, where this does not apply: no check yet, EVALSHA's route, another kind of connection.
    async fn limit_in_one_pass(&self, request: &LimitRequest<'_>) -> Option<Result<Value>> {
        let route = self.one_pass_route()?;
        let plain = self.connections().connection.get()?.plain()?;
        let (tag, bytes) = written_limit_call(request, route);
        if let Err(open) = self.gate().admit() {
            return Some(Err(open));
        }
        let sent = connection::send_written(plain, bytes, self.shared.timeout).await;
        self.heard(&sent);
        let reply = sent.map_err(Failure::into_error);
        let mut walk = RouteWalk::new(&LIMIT, route);
        if walk.settles(&reply) {
            return Some(reply.and_then(|reply| tag.open(reply)));
        }
        let cmd = limit_command_tagged(request, tag);
        let step = walk.next(&self.connections().code, &cmd, reply);
        // Boxed: the walk's state is most of a call's future, and it is needed only when the route
        // refused the call.
        Some(Box::pin(self.walk_on(&LIMIT, &cmd, tag, walk, step)).await)
    }

    /// The route a limit call is written for in one pass: the module's command or the library's
    /// function, once the server's check chose one (EVALSHA's route loads its script on NOSCRIPT in
    /// each connection's own way, from the command).
    fn one_pass_route(&self) -> Option<Route> {
        let code = &self.connections().code;
        code.route(LIMIT.module_command.is_some())
            .filter(|route| *route != Route::Script)
    }

    /// [`check`](Self::check) on the calling thread over the store's blocking connection, with no async
    /// runtime involved; `None` when that connection is busy with another thread's call or cannot be
    /// opened (then use `check`).
    pub fn check_blocking(&self, request: &LimitRequest<'_>) -> Option<Result<Verdict>> {
        if let Some(max_wait) = request.max_wait_us {
            if let Err(err) = crate::algorithm::reserve::check_request(request.rules, max_wait) {
                return Some(Err(err));
            }
        }
        let lane = self.connections().lane.as_ref()?;
        if let Some(route) = self.one_pass_route() {
            // The call written on its route in one pass; the tagged EVALSHA is built only when the
            // route refuses it (the walk then goes on from there).
            let (tag, bytes) = written_limit_call(request, route);
            let reply = lane.query_written(&bytes)?;
            let mut walk = RouteWalk::new(&LIMIT, route);
            let reply = if walk.settles(&reply) {
                reply
            } else {
                let cmd = limit_command_tagged(request, tag);
                let step = walk.next(&self.connections().code, &cmd, reply);
                self.lane_walk(lane, &LIMIT, &cmd, walk, step)?
            };
            return Some(limit_outcomes(reply.and_then(|reply| tag.open(reply)), request));
        }
        let mut cmd = limit_command(request);
        let tag = CallTag::attach(&mut cmd);
        let reply = self.lane_eval(lane, &LIMIT, &cmd)?;
        Some(limit_outcomes(reply.and_then(|reply| tag.open(reply)), request))
    }

    /// `cmd` (a tagged EVALSHA of `script`) on the blocking lane, on the route the server's code
    /// gives it (see `server_code.rs`). `None` when the lane is busy.
    fn lane_eval(
        &self,
        lane: &std::sync::Arc<BlockingLane>,
        script: &LuaScript,
        cmd: &Cmd,
    ) -> Option<Result<Value>> {
        let code = &self.connections().code;
        let route = match code.route(script.module_command.is_some()) {
            Some(route) => route,
            None => match self.check_on_lane(lane, script.module_command.is_some())? {
                Ok(route) => route,
                Err(err) => return Some(Err(err)),
            },
        };
        let walk = RouteWalk::new(script, route);
        let step = walk.start(cmd);
        self.lane_walk(lane, script, cmd, walk, step)
    }

    /// The rest of `walk` on the blocking lane, from `step`. `None` when the lane is busy.
    fn lane_walk(
        &self,
        lane: &std::sync::Arc<BlockingLane>,
        script: &LuaScript,
        cmd: &Cmd,
        mut walk: RouteWalk<'_>,
        mut step: Step,
    ) -> Option<Result<Value>> {
        let code = &self.connections().code;
        loop {
            step = match step {
                Step::Send(call) => {
                    let reply = lane.query(&call)?;
                    walk.next(code, cmd, reply)
                }
                Step::Reply(reply) => return Some(reply),
                Step::Script => return lane.eval(script, cmd),
            };
        }
    }

    /// Checks the server's code over the blocking lane. `None` when the lane is busy.
    fn check_on_lane(
        &self,
        lane: &std::sync::Arc<BlockingLane>,
        module_command: bool,
    ) -> Option<Result<Route>> {
        let code = &self.connections().code;
        let Some(mut check) = Check::new(code.wanted()) else {
            return Some(Ok(Route::Script));
        };
        // The lane's socket opened first, so that the check is recorded against the socket it ran on:
        // opening one moves the generation on, and a check recorded before that is stale at once (the
        // next call would check again).
        if let Err(err) = lane.connect()? {
            return Some(Err(err));
        }
        let generation = code.current();
        while let Some(cmd) = check.next_command() {
            if let Err(err) = check.read(lane.query(&cmd)?) {
                return Some(Err(err));
            }
        }
        Some(Ok(code.record(generation, check.found(), module_command)))
    }

    /// The route of a call of `script`: what the last check found, or a new check when it is due (a
    /// new connection since, or none yet).
    async fn route(&self, script: &LuaScript) -> Result<Route> {
        let code = &self.connections().code;
        let module_command = script.module_command.is_some();
        if let Some(route) = code.route(module_command) {
            return Ok(route);
        }
        let _checking = self.connections().checking.lock().await;
        if let Some(route) = code.route(module_command) {
            return Ok(route);
        }
        let Some(mut check) = Check::new(code.wanted()) else {
            return Ok(Route::Script);
        };
        // Connected first, so that the check is recorded against the connection it ran on. A refused
        // connect opens the breaker, as for every call; the breaker's own admission is left to the
        // check's commands (a half-open breaker lets one trial call through, and it must report back).
        if let Err(err) = self.connection().await {
            self.gate().failed(&err, true);
            return Err(err);
        }
        let generation = code.current();
        while let Some(cmd) = check.next_command() {
            check.read(self.query(&cmd).await)?;
        }
        Ok(code.record(generation, check.found(), module_command))
    }

    /// Deletes the keys of every given rule for `key`.
    pub async fn reset(&self, prefix: &str, key: &[u8], rules: &Rules) -> Result<()> {
        let mut cmd = redis::cmd("DEL");
        for rule in rules.iter() {
            cmd.arg(storage_key(prefix, key, rule));
        }
        self.query(&cmd).await.map(drop)
    }

    /// Runs `limit.lua` in its `refund` mode: gives back the cost on every rule, then answers as a peek.
    pub async fn refund(&self, request: &LimitRequest<'_>) -> Result<Verdict> {
        let reply = self.eval(&LIMIT, refund_command(request)).await;
        limit_outcomes(reply, request)
    }

    /// Sets (`SET ... [PX]`) or clears (`DEL`) `key`'s override; true when one was set or cleared.
    pub async fn set_override(&self, change: &OverrideChange<'_>) -> Result<bool> {
        let mut stored = Vec::with_capacity(change.prefix.len() + change.key.len() + 16);
        crate::key::write_base(&mut stored, change.prefix, change.key);
        stored.extend_from_slice(overrides::KEY_SUFFIX);
        match change.overrides {
            Some(overrides) => {
                let mut cmd = redis::cmd("SET");
                cmd.arg(stored).arg(overrides.to_text());
                if let Some(span) = change.for_us {
                    cmd.arg("PX").arg(span.div_ceil(1000).max(1));
                }
                self.query(&cmd).await.map(|_| true)
            }
            None => match self.query(redis::cmd("DEL").arg(stored)).await? {
                Value::Int(removed) => Ok(removed > 0),
                other => Err(Error::Protocol(format!(
                    "unexpected reply to DEL: {}",
                    call_tag::excerpt(&other)
                ))),
            },
        }
    }

    /// Runs `standing.lua`: one change to `key`'s ban or list entry; true when an entry was put or
    /// removed.
    pub async fn stand(&self, change: &EntryChange<'_>) -> Result<bool> {
        let reply = self.eval(&script::STANDING, standing_command(change)).await?;
        standing_changed(reply)
    }

    /// EVALSHA with a fresh call tag; on NOSCRIPT (the script certainly did not run) load it and run
    /// it once more. The reply is the script's own, its tag checked and taken off.
    pub(super) async fn eval(&self, script: &LuaScript, mut cmd: Cmd) -> Result<Value> {
        let tag = CallTag::attach(&mut cmd);
        let walk = RouteWalk::new(script, self.route(script).await?);
        let step = walk.start(&cmd);
        self.walk_on(script, &cmd, tag, walk, step).await
    }

    /// The rest of `walk` from `step` for `cmd`, the tagged EVALSHA of `script` (down to EVALSHA
    /// itself, loading the script on NOSCRIPT); the reply with its tag checked and taken off.
    async fn walk_on(
        &self,
        script: &LuaScript,
        cmd: &Cmd,
        tag: CallTag,
        mut walk: RouteWalk<'_>,
        mut step: Step,
    ) -> Result<Value> {
        let code = &self.connections().code;
        loop {
            step = match step {
                Step::Send(call) => {
                    let reply = self.query(&call).await;
                    walk.next(code, cmd, reply)
                }
                Step::Reply(reply) => return tag.open(reply?),
                Step::Script => break,
            };
        }
        let reply = match self.send(cmd).await {
            Err(Failure::NoScript) => {
                let mut load = redis::cmd("SCRIPT");
                load.arg("LOAD").arg(&script.body);
                self.query(&load).await?;
                self.query(cmd).await
            }
            Err(Failure::Other(err)) => Err(err),
            Ok(value) => Ok(value),
        };
        tag.open(reply?)
    }

    /// One command with the store's timeout; errors are mapped, never retried.
    async fn query(&self, cmd: &Cmd) -> Result<Value> {
        self.send(cmd).await.map_err(Failure::into_error)
    }

    /// One command through the store's circuit breaker: refused at once while it is open; a failed
    /// connect or a timeout opens it (on a cluster: see [`heard`](Self::heard)), any answer closes it.
    async fn send(&self, cmd: &Cmd) -> Result<Value, Failure> {
        let gate = self.gate();
        gate.admit().map_err(Failure::Other)?;
        let mut connection = match self.connection().await {
            Ok(connection) => connection,
            Err(err) => {
                gate.failed(&err, true);
                return Err(Failure::Other(err));
            }
        };
        let sent = connection.send(cmd, self.shared.timeout).await;
        self.heard(&sent);
        sent
    }

    /// What the breaker and the server check learn from a call's outcome: a failed connect or a
    /// timeout opens the breaker (on a cluster, a node's outage does not: see
    /// [`Gate::failed_on_a_node`]), a store failure has the server's code checked again (on a cluster
    /// at most once a second), and any answer closes the breaker.
    fn heard(&self, sent: &Result<Value, Failure>) {
        let gate = self.gate();
        match sent {
            Err(Failure::Other(err)) => {
                if self.shared.cluster {
                    gate.failed_on_a_node(err);
                } else {
                    gate.failed(err, is_connect_failure(err));
                }
                if err.is_store_failure() {
                    // A reconnect (or a failover behind Sentinel or a cluster) may follow: check
                    // again. On a cluster at most once a second: a dead node's calls fail one after
                    // another, and each check would ask the nodes still answering before the next call.
                    let code = &self.connections().code;
                    if self.shared.cluster {
                        code.forget_at_most_every(CLUSTER_CODE_RECHECK);
                    } else {
                        code.forget();
                    }
                }
            }
            _ => gate.success(),
        }
    }

    /// Sends `PING` now, connecting first if needed: for a service that wants to fail at boot. Raises
    /// configuration errors and outages alike (no failure policy applies).
    ///
    /// ```no_run
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let store = ratelock::store::RedisStore::connect("redis://127.0.0.1/", &Default::default()).await?;
    /// store.ping().await?;
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub async fn ping(&self) -> Result<()> {
        let reply = match self.connection().await {
            // With an argument: on a cluster, a bare PING is the routing's own check, which a node
            // connection answers from its answers of a moment ago (`recent_answers.rs`).
            Ok(mut connection) => {
                let mut ping = redis::cmd("PING");
                ping.arg("ratelock");
                connection.send(&ping, self.shared.timeout).await
            }
            Err(err) => Err(Failure::Other(err)),
        };
        match reply {
            Ok(_) => {
                self.gate().success();
                Ok(())
            }
            Err(Failure::NoScript) => Err(Error::Protocol("NOSCRIPT in reply to PING".into())),
            Err(Failure::Other(err)) => Err(err),
        }
    }
}

impl super::roles::sealed::Sealed for RedisStore {}

/// Boxed: the Redis futures are large, and embedding them would make every memory-store call through
/// `Store` move them around; one allocation is nothing beside a network round trip.
impl super::LimitStore for RedisStore {
    fn check(&self, request: &LimitRequest<'_>) -> impl std::future::Future<Output = Result<Verdict>> + Send {
        Box::pin(RedisStore::check(self, request))
    }

    fn check_blocking(&self, request: &LimitRequest<'_>) -> Option<Result<Verdict>> {
        RedisStore::check_blocking(self, request)
    }

    fn reset(
        &self,
        prefix: &str,
        key: &[u8],
        rules: &Rules,
    ) -> impl std::future::Future<Output = Result<()>> + Send {
        Box::pin(RedisStore::reset(self, prefix, key, rules))
    }

    fn refund(
        &self,
        request: &LimitRequest<'_>,
    ) -> impl std::future::Future<Output = Result<Verdict>> + Send {
        Box::pin(RedisStore::refund(self, request))
    }

    fn stand(&self, change: &EntryChange<'_>) -> impl std::future::Future<Output = Result<bool>> + Send {
        Box::pin(RedisStore::stand(self, change))
    }

    fn set_override(
        &self,
        change: &OverrideChange<'_>,
    ) -> impl std::future::Future<Output = Result<bool>> + Send {
        Box::pin(RedisStore::set_override(self, change))
    }
}

/// The subscriber's source behind Sentinel (the master named at each reconnection), once the URL is
/// read: a malformed one, or TLS without the `tls` feature, is refused here, before any I/O.
#[cfg(feature = "sentinel")]
fn sentinel_source(url: &str, options: &StoreOptions) -> Result<self::subscriber::Source> {
    let url = sentinels::SentinelUrl::parse(url)?.with_sentinel_credentials(options);
    if url.tls() && !cfg!(feature = "tls") {
        return Err(Error::invalid_argument(
            "url",
            "rediss+sentinel:// needs ratelock's `tls` feature",
        ));
    }
    Ok(self::subscriber::Source::Sentinel {
        url,
        tls: TlsSettings::of(options),
    })
}

#[cfg(not(feature = "sentinel"))]
fn sentinel_source(_: &str, _: &StoreOptions) -> Result<self::subscriber::Source> {
    Err(Error::invalid_argument(
        "url",
        "redis+sentinel:// and rediss+sentinel:// need ratelock's `sentinel` feature",
    ))
}

/// Whether a call's error means a connection could not be made (refused, unreachable, unresolvable,
/// or a reconnect that failed): what opens the breaker. A connection dropped mid-call does not (the
/// reconnect that follows tells), nor does a server's error reply.
fn is_connect_failure(err: &Error) -> bool {
    let Error::StoreUnavailable(text) = err else {
        return false;
    };
    let text = text.to_ascii_lowercase();
    [
        "refused",
        "unreachable",
        "no route",
        "lookup",
        "name or service",
        "connecting",
    ]
    .iter()
    .any(|sign| text.contains(sign))
}

fn open_client(url: &str, options: &StoreOptions) -> redis::RedisResult<redis::Client> {
    #[cfg(feature = "tls")]
    if url.starts_with("rediss://") {
        let _ = rustls::crypto::ring::default_provider().install_default();
        if let Some(certificates) = TlsSettings::of(options).for_redis_rs() {
            return redis::Client::build_with_tls(url, certificates);
        }
    }
    #[cfg(not(feature = "tls"))]
    let _ = options;
    redis::Client::open(url)
}

/// A limit call's bytes on `route`, written in one pass with a fresh call tag.
fn written_limit_call(request: &LimitRequest<'_>, route: Route) -> (CallTag, Vec<u8>) {
    let tag = CallTag::next();
    let mut bytes = Vec::new();
    write_limit_call(request, route, tag, &mut bytes);
    (tag, bytes)
}

/// The tagged EVALSHA of a call [`written_limit_call`] wrote with `tag`: the same call, for the walk on
/// after its route refused it.
fn limit_command_tagged(request: &LimitRequest<'_>, tag: CallTag) -> Cmd {
    let mut cmd = limit_command(request);
    tag.append(&mut cmd);
    cmd
}
#[cfg(test)]
mod future_size_tests {
    /// A limit call's future is set up, boxed and moved on every call: the route walk that only a
    /// refused call needs stays out of it (boxed where it starts). Inline, it took the future from
    /// 880 bytes to 2,624.
    #[test]
    fn a_limit_call_future_leaves_the_route_walk_out() {
        fn size_of<F>(_: &F) -> usize {
            std::mem::size_of::<F>()
        }
        let store = super::RedisStore::new("redis://127.0.0.1:1", &Default::default()).unwrap();
        let rules: crate::Rules = "5/second".parse().unwrap();
        let request = crate::store::LimitRequest {
            prefix: "p",
            key: b"k",
            rules: &rules,
            cost: 1,
            now_us: None,
            spend: true,
            max_wait_us: None,
        };
        let check = store.check(&request);
        assert!(size_of(&check) <= 1_200, "{} bytes", size_of(&check));
    }
}
