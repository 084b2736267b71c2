//! One wire-path connection's whole state, sans-IO: a binding that owns the socket (Node's, on the
//! JavaScript thread) only moves bytes and keeps time. Everything else is decided here, as the Redis
//! store's own connections decide it: the preamble and the module check first, each call encoded on
//! the connection's route, replies matched to calls in order (by their call tag too), NOSCRIPT answered
//! by loading the script and sending the same bytes once more (a failed load's error is the call's
//! answer), a module command refused without running sent again as `EVALSHA`, setup errors, timeouts
//! and a lost connection answered by the failure policy (never sent again: a written call may have
//! run), a broken reply stream failing every written call as a protocol error, and the store's circuit
//! breaker told of each success and outage.
//!
//! The caller: [`submit`](WireConnection::submit) each call, write [`take_output`]'s bytes, hand every
//! chunk read to [`feed`](WireConnection::feed), call [`expire`](WireConnection::expire) at
//! [`next_deadline`](WireConnection::next_deadline), and [`closed`](WireConnection::closed) when the
//! socket closes; close the socket when [`close_reason`](WireConnection::close_reason) says so. When
//! the server closes its side first (FIN), [`retire`](WireConnection::retire) the connection and
//! [`adopt`](WireConnection::adopt) its unwritten calls on a fresh one.
//!
//! [`take_output`]: WireConnection::take_output

use std::collections::VecDeque;
use std::sync::Arc;

use redis::{Cmd, Value};

use super::call_tag::CallTag;
use super::endpoint::Endpoint;
use super::gate::Gate;
use super::packing;
use super::reply::{classify, Failure};
use super::route_walk::{RouteWalk, Step};
use super::script::LIMIT;
use super::server_code::{refused_without_running, Check, CodeChoice, Route};
use super::wire_call::{script_load_command, WireAnswer, WireCall};
use super::wire_reader::{Reply, ReplyReader};
use crate::decision::Decision;
use crate::error::{Error, Result, NOTHING_SENT};
use crate::limiter::Limiter;
use crate::rule::Rules;
use crate::store::connection_core::{
    connection_failure, noscript_after_load, CallAttempt, Next, Written, SETTING_SCRIPT_CACHE,
};
use crate::store::Store;

/// A call's number, chosen by the caller (unique among the calls it has in flight).
pub type CallId = u32;

/// What became of a call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Settled {
    /// Its decision (a degraded one when the failure policy answered an outage).
    Decided(CallId, Decision),
    /// Its error (under `raise`, an outage; always, a configuration or protocol error).
    Failed(CallId, Error),
}

/// A call submitted and not yet answered.
#[derive(Debug)]
struct Pending {
    id: CallId,
    key: Vec<u8>,
    rules: Arc<Rules>,
    cost: u64,
    spend: bool,
    /// The time it was sent with (given, or the limiter's own clock; `None`: the server's).
    now_us: Option<u64>,
    /// The call as the tagged `EVALSHA` each route rewrites: built only when a retry or a walk to another
    /// route needs it (the first bytes are written straight from the request).
    cmd: Option<Cmd>,
    /// Its way along the server's code routes (module, function, script).
    walk: RouteWalk<'static>,
    /// The tag its reply must carry.
    tag: CallTag,
    /// Whether it may go out again (the never-replay rule every Redis path shares).
    attempt: CallAttempt,
    /// When its answer is due (the caller's clock, in ms).
    deadline_ms: f64,
    /// When it was submitted (a timeout before its first deadline): its round trip is timed from here.
    submitted_ms: f64,
    /// Its bytes left in a `take_output`.
    written: bool,
    /// Its answer was given (timed out): its reply is still read, in order, and dropped.
    settled: bool,
}

/// Calls not yet written when their connection was retired, for a fresh connection to send.
#[derive(Debug, Default)]
pub struct Unsent(Vec<Pending>);

impl Unsent {
    /// How many calls there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What the next reply answers.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// AUTH or SELECT: an error fails the connection.
    Setup,
    /// The module check.
    Check,
    /// SCRIPT LOAD after NOSCRIPT.
    Load,
    /// The call with this id.
    Call(CallId),
}

/// One connection of the wire path (see the module docs).
#[derive(Debug)]
pub struct WireConnection {
    limiter: Limiter,
    endpoint: Endpoint,
    /// What this connection's check found (a check per connection: a new one may reach another
    /// server), and the routes a refusal leaves.
    code: CodeChoice,
    /// The check while it runs (its commands go one after another).
    check: Option<Check>,
    reader: ReplyReader,
    gate: Option<Gate>,
    expected: VecDeque<Expect>,
    calls: VecDeque<Pending>,
    out: Vec<u8>,
    /// A configuration or protocol error met while setting up: every call fails with it.
    fatal: Option<Error>,
    /// Why the reply stream broke: every written call fails with a protocol error.
    broken: Option<Error>,
    /// The error of the last SCRIPT LOAD, if it failed: the answer to a call that meets NOSCRIPT again.
    load_failure: Option<Error>,
    /// Why the socket must be closed (setup failed, the stream broke).
    close_reason: Option<String>,
    /// How many of `expected`'s last entries answer bytes still in `out` (not yet written).
    unwritten: usize,
    /// How many of `calls` were answered at their timeout and wait only for their reply to drop.
    timed_out: usize,
    /// A call timed out here: later calls go to a fresh connection ([`given_up`](Self::given_up)).
    given_up: bool,
    retired: bool,
}

impl WireConnection {
    /// A connection of `limiter` to `url`, or `None` when the URL is not one `redis://` or `rediss://`
    /// server (cluster, Sentinel, Redlock, Unix socket, memory). Its output starts with the preamble
    /// and the module check.
    pub fn open(limiter: &Limiter, url: &str) -> Result<Option<Self>> {
        let Some(endpoint) = Endpoint::for_wire(url)? else {
            return Ok(None);
        };
        let gate = match limiter.store() {
            #[cfg(feature = "redis")]
            Store::Redis(store) => Some(store.gate().clone()),
            _ => None,
        };
        let code = CodeChoice::new(endpoint.server_code());
        let check = Check::new(code.wanted());
        let mut expected = VecDeque::new();
        let mut out = endpoint.preamble().to_vec();
        expected.extend(std::iter::repeat_n(Expect::Setup, endpoint.preamble_replies()));
        if let Some(first) = check.as_ref().and_then(Check::next_command) {
            packing::write_command(&first, &mut out);
            expected.push_back(Expect::Check);
        }
        let unwritten = expected.len();
        Ok(Some(WireConnection {
            limiter: limiter.clone(),
            endpoint,
            code,
            check,
            reader: ReplyReader::new(),
            gate,
            expected,
            calls: VecDeque::new(),
            out,
            fatal: None,
            broken: None,
            load_failure: None,
            close_reason: None,
            unwritten,
            timed_out: 0,
            given_up: false,
            retired: false,
        }))
    }

    /// The host to connect to.
    pub fn host(&self) -> &str {
        self.endpoint.host()
    }

    /// Whether the socket must be TLS (`rediss://`), verifying the server's certificate against the
    /// store's `tls_root_ca` (else the public roots) and its name against [`host`](Self::host). A
    /// handshake that refuses the server closes the socket with words that say "certificate", which
    /// [`closed`](Self::closed) reads as a configuration error.
    pub fn tls(&self) -> bool {
        self.endpoint.tls()
    }

    /// The PEM certificate(s) the limiter's store trusts for TLS in place of the public roots, if any:
    /// the socket trusts the same.
    pub fn tls_root_ca(&self) -> Option<&[u8]> {
        match self.limiter.store() {
            #[cfg(feature = "redis")]
            Store::Redis(store) => store.tls_root_ca(),
            _ => None,
        }
    }

    /// The client certificate (PEM chain) the limiter's store presents over TLS, if any: the socket
    /// presents the same, with [`tls_client_key`](Self::tls_client_key).
    pub fn tls_client_cert(&self) -> Option<&[u8]> {
        match self.limiter.store() {
            #[cfg(feature = "redis")]
            Store::Redis(store) => store.tls_client_cert(),
            _ => None,
        }
    }

    /// The private key (PEM) of [`tls_client_cert`](Self::tls_client_cert), if any.
    pub fn tls_client_key(&self) -> Option<&[u8]> {
        match self.limiter.store() {
            #[cfg(feature = "redis")]
            Store::Redis(store) => store.tls_client_key(),
            _ => None,
        }
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.endpoint.port()
    }

    /// Whether the store's circuit breaker lets a call through now; when it does not, answer the call
    /// with [`refused`](Self::refused) and send nothing.
    pub fn admits(&self) -> bool {
        self.gate.as_ref().is_none_or(|gate| gate.admit().is_ok())
    }

    /// The failure policy's answer to a call the breaker refused.
    pub fn refused(&self, call: &WireCall<'_>) -> Result<Decision> {
        let why = "circuit breaker open: the server failed a moment ago; calls answer at once until a \
                   background probe reaches it";
        self.limiter.wire_unavailable(call, why)
    }

    /// Encodes call `id` (`hit` when `spend`, else `peek`) for the output, due by `deadline_ms`; or,
    /// when one of the limiter's hooks answers first (`before_decision`), that answer, with nothing
    /// sent. Misuse (a cost above a rule's capacity, a key too long, `now` out of range) is an error
    /// here, before anything is sent.
    #[allow(clippy::too_many_arguments)]
    pub fn submit(
        &mut self,
        id: CallId,
        key: &[u8],
        rules: &Arc<Rules>,
        cost: u64,
        now_us: Option<u64>,
        spend: bool,
        deadline_ms: f64,
    ) -> Result<Option<Decision>> {
        if let Some(answer) = self
            .limiter
            .wire_answered_by_hook(key, rules, cost, now_us, spend)
        {
            return answer.map(Some);
        }
        // Until this connection's check has answered, calls go as EVALSHA, which every server runs.
        let route = self.code.route(true).unwrap_or(Route::Script);
        let (tag, now_us) =
            self.limiter
                .write_wire_limit_call(key, rules, cost, now_us, spend, route, &mut self.out)?;
        let call = Pending {
            id,
            key: key.to_vec(),
            rules: rules.clone(),
            cost,
            spend,
            now_us,
            cmd: None,
            walk: RouteWalk::new(&LIMIT, route),
            tag,
            attempt: CallAttempt::new(),
            deadline_ms,
            submitted_ms: deadline_ms - self.timeout_ms(),
            written: false,
            settled: false,
        };
        self.enqueue(call);
        Ok(None)
    }

    /// `call`'s tagged `EVALSHA`, built the first time a retry or a walk needs it: the same bytes as
    /// its first write on the script's route (same time, same tag).
    fn command<'c>(limiter: &Limiter, call: &'c mut Pending) -> &'c Cmd {
        call.cmd.get_or_insert_with(|| {
            limiter.wire_limit_command_again(
                &call.key,
                &call.rules,
                call.cost,
                call.now_us,
                call.spend,
                call.tag,
            )
        })
    }

    /// Waits for the reply to `call`'s bytes, just written to the output.
    fn enqueue(&mut self, call: Pending) {
        self.expect(Expect::Call(call.id));
        self.calls.push_back(call);
    }

    fn expect(&mut self, expect: Expect) {
        self.expected.push_back(expect);
        self.unwritten += 1;
    }

    /// The bytes to write now (empty when there are none); every call in them counts as written.
    pub fn take_output(&mut self) -> Vec<u8> {
        for call in self.calls.iter_mut() {
            call.written = true;
        }
        self.unwritten = 0;
        std::mem::take(&mut self.out)
    }

    /// Whether there are bytes to write.
    pub fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    /// Calls submitted and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.calls.len() - self.timed_out
    }

    /// Why the socket must be closed now (setup failed, or the reply stream broke), once it must.
    pub fn close_reason(&self) -> Option<&str> {
        self.close_reason.as_deref()
    }

    /// Whether a call timed out on this connection, which is then given up for new calls: the caller
    /// [`retire`](Self::retire)s it (later calls, and those not yet written, go to a fresh one) and
    /// closes its socket once no call waits on it. So a connection that died without a FIN or an RST
    /// is not used for every call until the kernel gives up on it, and a call held unwritten that
    /// timed out is never written afterwards.
    pub fn given_up(&self) -> bool {
        self.given_up
    }

    /// Whether the reply stream broke (a protocol error): the socket must be closed, and the calls not
    /// yet written moved to a fresh connection ([`retire`](Self::retire)).
    pub fn is_broken(&self) -> bool {
        self.broken.is_some()
    }

    /// Reads `bytes` from the socket at `now_ms`: what became of the calls whose replies are whole.
    pub fn feed(&mut self, bytes: &[u8], now_ms: f64) -> Vec<Settled> {
        self.reader.push(bytes);
        let mut settled = Vec::new();
        while self.close_reason.is_none() {
            let Some(&expect) = self.expected.front() else {
                break;
            };
            let reply = match self.reader.next_reply() {
                Ok(Some(reply)) => reply,
                Ok(None) => break,
                Err(broken) => {
                    self.break_stream(Error::Protocol(broken.to_string()));
                    break;
                }
            };
            self.expected.pop_front();
            if let Some(gate) = &self.gate {
                gate.success();
            }
            match expect {
                Expect::Setup => {
                    if let Err(err) = reply.into_result() {
                        self.setup_failed(err);
                    }
                }
                Expect::Check => self.read_check(reply),
                Expect::Load => self.load_failure = reply.into_result().err(),
                Expect::Call(id) => {
                    let Some(at) = self.calls.iter().position(|call| call.id == id) else {
                        continue;
                    };
                    if self.calls[at].settled {
                        self.calls.remove(at);
                        self.timed_out -= 1;
                        continue;
                    }
                    let reply = match self.walk_on(at, reply, now_ms, &mut settled) {
                        Ok(()) => continue,
                        Err(reply) => reply,
                    };
                    let answer = self.answer(at, reply, now_ms);
                    match answer {
                        Ok(WireAnswer::Decided(decision)) => {
                            self.calls.remove(at);
                            settled.push(Settled::Decided(id, decision));
                        }
                        Ok(WireAnswer::NoScript) => self.load_and_resend(at, now_ms),
                        Ok(WireAnswer::Refused) => {
                            // Refusals go along the routes above; this one came on no route that
                            // refuses (a bug in the reply's reading), so it is no call's answer.
                            self.calls.remove(at);
                            let err = Error::Protocol("a refusal of a call on no route that refuses".into());
                            settled.push(Settled::Failed(id, err));
                        }
                        Err(err) => {
                            self.calls.remove(at);
                            let crossed = err.is_protocol();
                            settled.push(Settled::Failed(id, err.clone()));
                            if crossed {
                                self.break_stream(err);
                            }
                        }
                    }
                }
            }
        }
        settled
    }

    /// The meaning of `reply` for the call at `at`; after a failed SCRIPT LOAD, a second NOSCRIPT is
    /// that failure.
    fn answer(&mut self, at: usize, reply: super::wire_reader::Reply, now_ms: f64) -> Result<WireAnswer> {
        let call = &self.calls[at];
        let wire_call = WireCall {
            key: &call.key,
            rules: &call.rules,
            cost: call.cost,
            spend: call.spend,
        };
        let retried = call.attempt.reloaded();
        let elapsed_ms = now_ms - call.submitted_ms;
        let elapsed = (elapsed_ms.is_finite() && elapsed_ms >= 0.0)
            .then(|| std::time::Duration::from_secs_f64(elapsed_ms / 1e3));
        let answer =
            self.limiter
                .wire_answer_tagged(reply, call.tag, call.walk.route(), &wire_call, retried, elapsed);
        let load = self.load_failure.take();
        match (answer, load) {
            // NOSCRIPT again because the load itself failed: say why it failed (an ACL without
            // `script|load`, a read-only replica), not only that the script is missing.
            (Err(err), Some(load)) if retried && err == noscript_after_load() => Err(Error::configuration(
                SETTING_SCRIPT_CACHE,
                format!("NOSCRIPT after SCRIPT LOAD failed: {load}"),
            )),
            (answer, _) => answer,
        }
    }

    /// NOSCRIPT: the script did not run. The load, then the same bytes once more (same tag), answered
    /// in that order on this connection.
    fn load_and_resend(&mut self, at: usize, now_ms: f64) {
        let mut call = self.calls.remove(at).expect("the call is there");
        // `wire_answer` answers NOSCRIPT only while the script was not loaded for this call, so this
        // is always the load (a second NOSCRIPT is its failure there).
        let next = call.attempt.no_script();
        debug_assert_eq!(next, Next::LoadAndResend);
        call.deadline_ms = now_ms + self.timeout_ms();
        self.out.extend_from_slice(&script_load_command());
        self.expect(Expect::Load);
        call.written = false;
        // The same bytes (same tag): NOSCRIPT comes only on the script's own route.
        packing::write_command(Self::command(&self.limiter, &mut call), &mut self.out);
        self.enqueue(call);
    }

    /// Reads a reply to the check: the check's next command, or what it found (the route of calls
    /// submitted from now on). An outage or a protocol error fails the setup.
    fn read_check(&mut self, reply: Reply) {
        let Some(check) = self.check.as_mut() else {
            return self.setup_failed(Error::Protocol(
                "a check reply arrived, but no check is running".into(),
            ));
        };
        let read = match classify(Ok(reply.0), std::time::Duration::ZERO) {
            Ok(value) => check.read(Ok(value)),
            Err(Failure::Other(err)) => check.read(Err(err)),
            Err(Failure::NoScript) => Err(Error::Protocol("NOSCRIPT in reply to the server check".into())),
        };
        if let Err(err) = read {
            return self.setup_failed(err);
        }
        match check.next_command() {
            Some(next) => {
                packing::write_command(&next, &mut self.out);
                self.expect(Expect::Check);
            }
            None => {
                let found = self.check.take().map(Check::found).unwrap_or_default();
                self.code.record(self.code.current(), found, true);
            }
        }
    }

    /// A reply that the call's walk along the routes takes (a refusal without running, the library's
    /// load): the walk's next command goes out and `Ok`; any other reply back as `Err`, for
    /// [`answer`](Self::answer).
    fn walk_on(
        &mut self,
        at: usize,
        reply: Reply,
        now_ms: f64,
        settled: &mut Vec<Settled>,
    ) -> std::result::Result<(), Reply> {
        let call = &self.calls[at];
        let is_error = matches!(reply.0, Value::ServerError(_));
        let walks = call.walk.is_loading()
            || (is_error && call.walk.route() != Route::Script && {
                let timeout = std::time::Duration::ZERO;
                match classify(Ok(reply.0.clone()), timeout) {
                    Err(Failure::Other(err)) => refused_without_running(call.walk.route(), &err),
                    _ => false,
                }
            });
        if !walks {
            return Err(reply);
        }
        let result = match classify(Ok(reply.0), std::time::Duration::ZERO) {
            Ok(value) => Ok(value),
            Err(Failure::Other(err)) => Err(err),
            Err(Failure::NoScript) => Err(Error::Protocol("NOSCRIPT off the script route".into())),
        };
        let mut call = self.calls.remove(at).expect("the call is there");
        let cmd = Self::command(&self.limiter, &mut call).clone();
        match call.walk.next(&self.code, &cmd, result) {
            Step::Send(command) => packing::write_command(&command, &mut self.out),
            Step::Script => packing::write_command(&cmd, &mut self.out),
            Step::Reply(Err(err)) => {
                settled.push(Settled::Failed(call.id, err));
                return Ok(());
            }
            Step::Reply(Ok(_)) => {
                let err = Error::Protocol("a route's walk ended in a reply nobody reads".into());
                settled.push(Settled::Failed(call.id, err));
                return Ok(());
            }
        }
        call.deadline_ms = now_ms + self.timeout_ms();
        call.written = false;
        self.enqueue(call);
        Ok(())
    }

    fn timeout_ms(&self) -> f64 {
        self.limiter.options().store.timeout.as_secs_f64() * 1000.0
    }

    /// AUTH, SELECT or the module check failed: the socket must close. A configuration error (a wrong
    /// password or db index) or a protocol error (a reply that answers another command) is every
    /// call's answer, whatever the failure policy says; an outage's error gets the policy's answer.
    fn setup_failed(&mut self, err: Error) {
        self.close_reason = Some(format!("connection setup failed: {err}"));
        if err.is_configuration() || err.is_protocol() {
            self.fatal = Some(err);
        }
    }

    /// The reply stream cannot be read any further: the socket must close, and calls written on it can
    /// never learn their answer (each fails with a protocol error when it closes).
    fn break_stream(&mut self, err: Error) {
        self.close_reason = Some(format!("the reply stream broke: {err}"));
        self.broken = Some(err);
    }

    /// The earliest deadline of a call still waiting (the caller's clock, ms), if any.
    pub fn next_deadline(&self) -> Option<f64> {
        self.calls
            .iter()
            .filter(|call| !call.settled)
            .map(|call| call.deadline_ms)
            .reduce(f64::min)
    }

    /// Answers every call past its deadline at `now_ms` by the failure policy (its reply is still
    /// read, in order, and dropped); a timeout tells the breaker of an outage and gives the connection
    /// up ([`given_up`](Self::given_up)).
    pub fn expire(&mut self, now_ms: f64) -> Vec<Settled> {
        let mut settled = Vec::new();
        let mut told = false;
        for at in 0..self.calls.len() {
            let call = &self.calls[at];
            if call.settled || call.deadline_ms > now_ms {
                continue;
            }
            if !told {
                told = true;
                if let Some(gate) = &self.gate {
                    gate.outage();
                }
            }
            let answer = self.failed(&self.calls[at], None);
            self.calls[at].settled = true;
            self.timed_out += 1;
            settled.push(answer);
        }
        self.given_up |= told;
        settled
    }

    /// The socket closed (`connected`: it had opened; a connection that never opened is an outage):
    /// every call still waiting is answered (never sent again: it may have run). A TLS handshake that
    /// refused the server's certificate (`why` says so, as the store's own connections read it) is
    /// every call's configuration error instead, whatever the failure policy says. A call lost with an
    /// open connection tells the breaker what a lost call tells the store's own connections
    /// (`Gate::failed`): nothing, unless the breaker is half-open, whose trial it may be; then it opens
    /// again (left half-open, it refused every call until the trial's limit passed).
    pub fn closed(&mut self, connected: bool, why: &str) -> Vec<Settled> {
        let failure = self.tls().then(|| connection_failure(why));
        if let Some(failure) = failure.filter(Error::is_configuration) {
            self.fatal.get_or_insert(failure);
        } else if let Some(gate) = &self.gate {
            if !connected {
                gate.outage();
            } else if self.calls.iter().any(|call| !call.settled) {
                gate.failed(&Error::StoreUnavailable(why.to_owned()), false);
            }
        }
        // A socket that never opened took no call to the server.
        let why = if connected {
            format!("connection lost ({why})")
        } else if why.starts_with("connecting") {
            format!("{why}; {NOTHING_SENT}")
        } else {
            format!("connecting failed ({why}); {NOTHING_SENT}")
        };
        let calls = std::mem::take(&mut self.calls);
        self.timed_out = 0;
        self.expected.clear();
        calls
            .iter()
            .filter(|call| !call.settled)
            .map(|call| self.failed(call, Some(&why)))
            .collect()
    }

    /// A call's answer when no reply will come: the setup's configuration error, a protocol error
    /// after a broken stream, else the failure policy's answer to a timeout (`why` none) or a lost
    /// connection.
    fn failed(&self, call: &Pending, why: Option<&str>) -> Settled {
        if let Some(fatal) = &self.fatal {
            return Settled::Failed(call.id, fatal.clone());
        }
        if let Some(broken) = &self.broken {
            let err = Error::Protocol(format!(
                "the reply stream broke before this call's reply: {broken}"
            ));
            return Settled::Failed(call.id, err);
        }
        let wire_call = WireCall {
            key: &call.key,
            rules: &call.rules,
            cost: call.cost,
            spend: call.spend,
        };
        let answer = match why {
            None => self.limiter.wire_timeout(&wire_call),
            Some(why) => self.limiter.wire_unavailable(&wire_call, why),
        };
        match answer {
            Ok(decision) => Settled::Decided(call.id, decision),
            Err(err) => Settled::Failed(call.id, err),
        }
    }

    /// The server closed its side, or the stream broke: no call may be submitted here any more. The
    /// calls not yet written leave, for a fresh connection to [`adopt`](Self::adopt) (a call goes out
    /// on a fresh connection once: one never written twice over is answered here, by the failure
    /// policy); written ones stay for their replies or for [`closed`](Self::closed).
    pub fn retire(&mut self) -> (Unsent, Vec<Settled>) {
        if self.retired {
            return (Unsent::default(), Vec::new());
        }
        self.retired = true;
        self.out.clear();
        // What was never written is the end of the queue: its replies will not come.
        self.expected.truncate(self.expected.len() - self.unwritten);
        self.unwritten = 0;
        let (written, unwritten): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut self.calls)
            .into_iter()
            .partition(|call| call.written);
        self.calls = written.into();
        self.timed_out -= unwritten.iter().filter(|call| call.settled).count();
        let (mut unsent, mut settled) = (Vec::new(), Vec::new());
        // An unwritten call already answered (it timed out) is not sent anywhere.
        for mut call in unwritten.into_iter().filter(|call| !call.settled) {
            match call.attempt.written(Written::Nothing) {
                Next::ResendOnFresh => unsent.push(call),
                _ => settled.push(self.failed(
                    &call,
                    Some("the connection closed twice before this call was written"),
                )),
            }
        }
        (Unsent(unsent), settled)
    }

    /// Takes over calls another connection never wrote: the same bytes (same tag) and deadlines.
    pub fn adopt(&mut self, unsent: Unsent) {
        for mut call in unsent.0 {
            let cmd = Self::command(&self.limiter, &mut call).clone();
            call.walk.resend(&cmd, &mut self.out);
            self.enqueue(call);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::hook::{Hook, LimitCall};
    use crate::{FailurePolicy, LimiterOptions, Store};

    /// A connection that needs no module check (`server_code=scripts`) and no preamble.
    fn connection(options: LimiterOptions) -> WireConnection {
        connection_to("redis://127.0.0.1:6379/?server_code=scripts", options)
    }

    /// A connection of a memory-store limiter (its decisions come from the replies) to `url`.
    fn connection_to(url: &str, options: LimiterOptions) -> WireConnection {
        let store = Store::Memory(crate::store::MemoryStore::unbounded());
        let limiter = Limiter::with_store(store, options).unwrap();
        WireConnection::open(&limiter, url)
            .unwrap()
            .expect("one plain server")
    }

    fn policy(on_error: FailurePolicy) -> LimiterOptions {
        LimiterOptions::default().with_on_error(on_error)
    }

    fn rules() -> Arc<Rules> {
        Arc::new("10/second".parse().unwrap())
    }

    /// The call tag that ends `command`.
    fn tag(command: &[u8]) -> String {
        let text = std::str::from_utf8(command).unwrap();
        text.rsplit("\r\n").nth(1).unwrap().to_owned()
    }

    /// A decided reply (allowed, 9 left) carrying `tag`.
    fn decided(tag: &str) -> Vec<u8> {
        format!(
            "*2\r\n${}\r\n{tag}\r\n*6\r\n:0\r\n:1\r\n:10\r\n:9\r\n:100000\r\n:0\r\n",
            tag.len()
        )
        .into_bytes()
    }

    fn submit(connection: &mut WireConnection, id: CallId, deadline_ms: f64) {
        let answered = connection.submit(id, b"k", &rules(), 1, None, true, deadline_ms);
        assert_eq!(answered.unwrap(), None);
    }

    #[test]
    fn a_call_is_written_and_its_reply_decides_it() {
        let mut connection = connection(policy(FailurePolicy::Raise));
        assert!(connection.take_output().is_empty(), "no preamble, no check");
        submit(&mut connection, 7, 1000.0);
        let written = connection.take_output();
        assert!(written.starts_with(b"*") && connection.in_flight() == 1);
        let settled = connection.feed(&decided(&tag(&written)), 0.0);
        assert!(matches!(&settled[..], [Settled::Decided(7, d)] if d.allowed && d.remaining == 9));
        assert_eq!(connection.in_flight(), 0);
    }

    #[test]
    fn noscript_loads_the_script_and_sends_the_same_bytes_once_more() {
        let mut connection = connection(policy(FailurePolicy::Raise));
        submit(&mut connection, 1, 1000.0);
        let first = connection.take_output();
        assert!(connection
            .feed(b"-NOSCRIPT No matching script\r\n", 10.0)
            .is_empty());
        let again = connection.take_output();
        assert!(again.starts_with(b"*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n") && again.ends_with(&first));
        assert_eq!(
            connection.next_deadline(),
            Some(1010.0),
            "the retry has a deadline of its own"
        );
        let load_ok = b"$40\r\n0123456789012345678901234567890123456789\r\n";
        assert!(connection.feed(load_ok, 20.0).is_empty());
        let settled = connection.feed(&decided(&tag(&first)), 30.0);
        assert!(matches!(&settled[..], [Settled::Decided(1, _)]));
    }

    #[test]
    fn a_failed_load_is_the_answer_when_noscript_comes_again() {
        let mut connection = connection(policy(FailurePolicy::Allow));
        submit(&mut connection, 1, 1000.0);
        connection.take_output();
        connection.feed(b"-NOSCRIPT No matching script\r\n", 0.0);
        connection.take_output();
        let replies = b"-NOPERM this user has no permissions to run the 'script|load' command\r\n\
                        -NOSCRIPT No matching script\r\n";
        let settled = connection.feed(replies, 0.0);
        let [Settled::Failed(1, err)] = &settled[..] else {
            panic!("{settled:?}")
        };
        assert!(
            err.is_configuration() && err.to_string().contains("NOPERM"),
            "{err}"
        );
    }

    #[test]
    fn a_call_past_its_deadline_gets_the_policys_answer_and_its_late_reply_is_dropped() {
        let mut connection = connection(policy(FailurePolicy::Allow));
        submit(&mut connection, 3, 10.0);
        let written = connection.take_output();
        assert!(connection.expire(5.0).is_empty());
        let settled = connection.expire(10.0);
        assert!(matches!(&settled[..], [Settled::Decided(3, d)] if d.degraded));
        assert_eq!((connection.in_flight(), connection.next_deadline()), (0, None));
        assert!(connection.feed(&decided(&tag(&written)), 20.0).is_empty());
    }

    #[test]
    fn a_timeout_gives_the_connection_up_and_a_timed_out_call_never_written_is_sent_nowhere() {
        let mut old = connection(policy(FailurePolicy::Allow));
        submit(&mut old, 1, 10.0);
        assert!(!old.given_up());
        // Held unwritten (as over TLS until the server's first answer), then past its deadline.
        let settled = old.expire(10.0);
        assert!(matches!(&settled[..], [Settled::Decided(1, d)] if d.degraded));
        assert!(
            old.given_up(),
            "a connection whose call timed out takes no more calls"
        );
        submit(&mut old, 2, 100.0);
        let (unsent, settled) = old.retire();
        assert_eq!(
            (unsent.len(), settled.len()),
            (1, 0),
            "only the waiting call moves"
        );
        assert!(
            old.take_output().is_empty(),
            "the timed-out call's bytes are never written here"
        );
        assert_eq!(old.in_flight(), 0);
        let mut fresh = connection(policy(FailurePolicy::Allow));
        fresh.adopt(unsent);
        assert_eq!(fresh.in_flight(), 1);
    }

    #[test]
    fn retiring_moves_the_calls_not_yet_written_to_a_fresh_connection() {
        let mut old = connection(policy(FailurePolicy::Raise));
        submit(&mut old, 1, 1000.0);
        let written = old.take_output();
        submit(&mut old, 2, 1000.0);
        let (unsent, settled) = old.retire();
        assert_eq!((unsent.len(), settled.len()), (1, 0));
        let mut fresh = connection(policy(FailurePolicy::Raise));
        fresh.adopt(unsent);
        let moved = fresh.take_output();
        let settled = fresh.feed(&decided(&tag(&moved)), 0.0);
        assert!(matches!(&settled[..], [Settled::Decided(2, _)]));
        let settled = old.feed(&decided(&tag(&written)), 0.0);
        assert!(
            matches!(&settled[..], [Settled::Decided(1, _)]),
            "the written call's reply still comes"
        );
    }

    #[test]
    fn a_crossed_reply_fails_its_call_and_breaks_the_stream() {
        let mut connection = connection(policy(FailurePolicy::Allow));
        submit(&mut connection, 1, 1000.0);
        submit(&mut connection, 2, 1000.0);
        connection.take_output();
        let settled = connection.feed(&decided("another-calls-tag"), 0.0);
        assert!(matches!(&settled[..], [Settled::Failed(1, err)] if err.is_protocol()));
        assert!(connection.is_broken() && connection.close_reason().is_some());
        let settled = connection.closed(true, "closed after the break");
        assert!(
            matches!(&settled[..], [Settled::Failed(2, err)] if err.is_protocol()),
            "never the policy's answer"
        );
    }

    #[test]
    fn a_lost_connection_answers_every_waiting_call_by_the_policy() {
        let mut connection = connection(policy(FailurePolicy::Deny));
        submit(&mut connection, 1, 1000.0);
        connection.take_output();
        let settled = connection.closed(false, "refused");
        assert!(matches!(&settled[..], [Settled::Decided(1, d)] if d.degraded && !d.allowed));
        let mut raising = self::connection(policy(FailurePolicy::Raise));
        submit(&mut raising, 2, 1000.0);
        let said = raising_call_closed(true, "reset by peer");
        assert!(said.contains("connection lost (reset by peer)"), "{said}");
        // A socket that never opened says so: nothing was sent.
        let said = raising_call_closed(false, "connect ECONNREFUSED 127.0.0.1:1");
        assert!(
            said.contains("connecting failed (connect ECONNREFUSED 127.0.0.1:1); nothing was sent"),
            "{said}"
        );
    }

    /// The error one waiting call gets under `raise` when its socket closes (`connected`: it had opened)
    /// for `why`: a store failure, said as this text.
    fn raising_call_closed(connected: bool, why: &str) -> String {
        let mut raising = connection(policy(FailurePolicy::Raise));
        submit(&mut raising, 2, 1000.0);
        let settled = raising.closed(connected, why);
        let [Settled::Failed(2, err)] = &settled[..] else {
            panic!("{settled:?}")
        };
        assert!(err.is_store_failure(), "{err}");
        err.to_string()
    }

    #[test]
    fn a_setup_reply_that_answers_another_command_fails_every_call_as_a_protocol_error() {
        let mut connection = connection_to("redis://127.0.0.1:6379/", policy(FailurePolicy::Allow));
        assert!(
            connection.take_output().starts_with(b"*3\r\n$7\r\nCOMMAND\r\n"),
            "the module check"
        );
        submit(&mut connection, 1, 1000.0);
        connection.take_output();
        // A number where COMMAND INFO's list belongs: the reply answers another command.
        let settled = connection.feed(b":7\r\n", 0.0);
        assert!(settled.is_empty() && connection.close_reason().is_some());
        let settled = connection.closed(true, "closed after the failed setup");
        assert!(
            matches!(&settled[..], [Settled::Failed(1, err)] if err.is_protocol()),
            "{settled:?}"
        );
    }

    #[test]
    fn a_certificate_the_handshake_refused_fails_every_call_whatever_the_policy() {
        let mut connection = connection_to(
            "rediss://localhost:6380/?server_code=scripts",
            policy(FailurePolicy::Allow),
        );
        assert!(connection.tls());
        submit(&mut connection, 1, 1000.0);
        submit(&mut connection, 2, 1000.0);
        let settled = connection.closed(false, "self-signed certificate in certificate chain");
        assert_eq!(settled.len(), 2);
        // On a plain socket no handshake ran: the same words are an outage's, for the policy.
        let mut plain = self::connection(policy(FailurePolicy::Allow));
        submit(&mut plain, 3, 1000.0);
        let answered = plain.closed(false, "a certificate was named by a proxy");
        assert!(matches!(&answered[..], [Settled::Decided(3, d)] if d.degraded && d.allowed));
        for answer in &settled {
            assert!(
                matches!(answer, Settled::Failed(_, err) if err.is_configuration() && err.to_string().contains("tls_root_ca")),
                "never the policy's allow: {answer:?}"
            );
        }
    }

    #[test]
    fn the_check_finds_the_library_and_a_flushed_one_is_loaded_again_for_the_call() {
        let mut connection = connection_to("redis://127.0.0.1:6379/", policy(FailurePolicy::Raise));
        connection.take_output();
        // COMMAND INFO lists no RATELOCK.LIMIT; then FUNCTION LIST lists the library.
        assert!(connection.feed(b"*1\r\n$-1\r\n", 0.0).is_empty());
        assert!(connection
            .take_output()
            .starts_with(b"*4\r\n$8\r\nFUNCTION\r\n$4\r\nLIST\r\n"));
        assert!(connection.feed(b"*1\r\n*0\r\n", 0.0).is_empty());
        submit(&mut connection, 1, 1000.0);
        let fcall = connection.take_output();
        assert!(fcall.starts_with(b"*"), "{}", String::from_utf8_lossy(&fcall));
        assert!(
            String::from_utf8_lossy(&fcall).contains("FCALL"),
            "the function, once the check found it"
        );
        // FUNCTION FLUSH meanwhile: the library is loaded again, then the same call goes once more.
        assert!(connection.feed(b"-ERR Function not found\r\n", 0.0).is_empty());
        let again = connection.take_output();
        assert!(again.starts_with(b"*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n"));
        assert!(connection.feed(b"$8\r\nratelock\r\n", 0.0).is_empty());
        assert_eq!(connection.take_output(), fcall, "the same bytes, same tag");
        let settled = connection.feed(&decided(&tag(&fcall)), 0.0);
        assert!(matches!(&settled[..], [Settled::Decided(1, _)]), "{settled:?}");
    }

    struct AnswersFirst;

    impl Hook for AnswersFirst {
        fn before_decision(&self, _call: &LimitCall<'_>) -> Option<Decision> {
            let wait = Duration::from_secs(9);
            Some(Decision::summary(false, 1, 0, wait, wait, 0, false))
        }
    }

    #[test]
    fn a_hook_that_answers_first_leaves_nothing_to_send() {
        let mut connection = connection(LimiterOptions::default().with_hook(Arc::new(AnswersFirst)));
        let answered = connection
            .submit(1, b"k", &rules(), 1, None, true, 1000.0)
            .unwrap();
        assert!(matches!(answered, Some(d) if !d.allowed && d.retry_after == Duration::from_secs(9)));
        assert!(connection.take_output().is_empty() && connection.in_flight() == 0);
    }
}
