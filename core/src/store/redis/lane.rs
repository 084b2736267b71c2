//! The Redis store's blocking lane: one plain blocking socket beside the shared multiplexed connection,
//! for a plain `redis://` server. A caller on an ordinary thread (the Python sync API) that finds it
//! free writes its command and blocks reading the reply on its own thread: no hand-off to a runtime
//! thread and back, which on a small machine costs as much as the round trip itself. Busy (another
//! thread's call is on it), or down after a failed connect, the caller is told to take the multiplexed
//! connection, which pipelines concurrent callers.
//!
//! Every call passes the store's circuit breaker first ([`Gate`]): while it is open the call is
//! answered at once with the outage error, and a failed connect or a timeout here opens it.
//!
//! Connection lifecycle ([`CallAttempt`] decides): before a call is written, the socket is checked for a close the server or a
//! proxy already sent (FIN or RST: an idle timeout, `CLIENT KILL`); such a socket is replaced and the
//! call goes out on the fresh one. A write that fails before any byte left is retried once on a fresh
//! connection. Once a byte may have reached the server, nothing is ever sent again: a timeout or a
//! close while waiting is an error (the command may have run). Connecting, the preamble (AUTH, SELECT)
//! and the call together stay within the call's timeout.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::{Duration, Instant};

use redis::{Cmd, Value};

use super::endpoint::Endpoint;
use super::gate::Gate;
use super::reply::{classify, closes_connection, Failure};
use super::script::LuaScript;
use super::socket_peek::{self, Peeked};
use super::wire_reader::ReplyReader;
use crate::error::{Error, Result};
use crate::store::connection_core::{
    connect_timed_out, preamble_unanswered, transport_error, CallAttempt, Next, Written,
};

pub(crate) struct BlockingLane {
    endpoint: Endpoint,
    timeout: Duration,
    gate: Gate,
    state: Mutex<LaneState>,
    /// Bumped at every new socket: what the server was found to run is checked again.
    opened: Arc<AtomicU64>,
}

#[derive(Default)]
struct LaneState {
    link: Option<Link>,
}

/// One open socket and the reader of its replies.
struct Link {
    socket: TcpStream,
    reader: ReplyReader,
    /// What a read fills, made once per socket rather than zeroed again for every reply.
    chunk: Box<[u8; 4096]>,
    /// The read and write timeouts set on the socket now (set again only when a call has less left).
    set_timeout: Option<Duration>,
}

/// How a write ended, and the error when it did not end well.
struct Sent(Written, Option<std::io::Error>);

impl BlockingLane {
    /// A lane to one plain `redis://` server (TLS, Unix sockets, cluster and Sentinel have none: they
    /// stay on the multiplexed connection). Nothing is opened yet.
    /// `opened` is bumped at every new socket.
    pub(crate) fn new(endpoint: Endpoint, timeout: Duration, gate: Gate, opened: Arc<AtomicU64>) -> Self {
        BlockingLane {
            endpoint,
            timeout,
            gate,
            state: Mutex::new(LaneState::default()),
            opened,
        }
    }

    /// Runs `cmd`, an EVALSHA of `script`, loading the script on NOSCRIPT. `None` when the lane is busy
    /// with another thread's call (then use the multiplexed connection).
    pub(crate) fn eval(self: &Arc<Self>, script: &LuaScript, cmd: &Cmd) -> Option<Result<Value>> {
        self.call(Some(script), &super::packing::packed(cmd))
    }

    /// Runs any command that is not a script call (NOSCRIPT is then a failure). `None` when busy.
    pub(crate) fn query(self: &Arc<Self>, cmd: &Cmd) -> Option<Result<Value>> {
        self.call(None, &super::packing::packed(cmd))
    }

    /// [`query`](Self::query) of a command already written as RESP bytes. `None` when busy.
    pub(crate) fn query_written(self: &Arc<Self>, bytes: &[u8]) -> Option<Result<Value>> {
        self.call(None, bytes)
    }

    /// Opens the lane's socket now if it has none that is open (what a check of the server's code
    /// needs first: opening one moves the generation on), without sending anything. `None` when busy.
    pub(crate) fn connect(self: &Arc<Self>) -> Option<Result<()>> {
        if let Err(open) = self.gate.admit() {
            return Some(Err(open));
        }
        let mut state = self.lock_state()?;
        Some(self.open_if_needed(&mut state, Instant::now() + self.timeout))
    }

    /// The lane's state, unless another thread holds it (`None`).
    fn lock_state(&self) -> Option<std::sync::MutexGuard<'_, LaneState>> {
        match self.state.try_lock() {
            Ok(state) => Some(state),
            Err(TryLockError::WouldBlock) => None,
            // A panic while holding the lane left the socket in an unknown state: start over.
            Err(TryLockError::Poisoned(poisoned)) => {
                let mut state = poisoned.into_inner();
                state.link = None;
                Some(state)
            }
        }
    }

    /// A socket that is open in `state`: the one there, or a new one (a refused connect opens the
    /// breaker).
    fn open_if_needed(&self, state: &mut LaneState, deadline: Instant) -> Result<()> {
        if state.link.as_ref().is_some_and(|link| !link.is_open()) {
            state.link = None;
        }
        if state.link.is_none() {
            match open_link(&self.endpoint, deadline, self.timeout) {
                Ok(link) => {
                    state.link = Some(link);
                    self.opened.fetch_add(1, Ordering::Release);
                }
                Err(err) => {
                    if err.is_store_failure() {
                        self.gate.outage();
                    }
                    return Err(err);
                }
            }
        }
        Ok(())
    }

    /// One call on the lane, written as `bytes`; `script` is the script it runs, loaded on NOSCRIPT.
    fn call(self: &Arc<Self>, script: Option<&LuaScript>, bytes: &[u8]) -> Option<Result<Value>> {
        if let Err(open) = self.gate.admit() {
            return Some(Err(open));
        }
        let mut state = self.lock_state()?;
        let deadline = Instant::now() + self.timeout;
        let mut call = CallAttempt::new();
        let outcome = loop {
            if let Err(err) = self.open_if_needed(&mut state, deadline) {
                return Some(Err(err));
            }
            let link = state.link.as_mut()?;
            let Sent(written, err) = link.write(bytes, deadline);
            match call.written(written) {
                Next::AwaitReply => break link.reply(deadline, self.timeout),
                Next::ResendOnFresh => state.link = None,
                _ => {
                    state.link = None;
                    let err = err.unwrap_or_else(|| std::io::ErrorKind::WriteZero.into());
                    return Some(Err(transport_error(&err, "sending the call")));
                }
            }
        };
        let reply = match outcome {
            Ok(reply) => {
                self.gate.success();
                if closes_connection(&reply) {
                    state.link = None;
                }
                classify(Ok(reply), self.timeout)
            }
            Err(err) => {
                // A timeout or a close leaves a reply unread or the socket dead: never reuse it.
                state.link = None;
                if err.is_timeout() {
                    self.gate.outage();
                }
                return Some(Err(err));
            }
        };
        Some(match reply {
            Err(Failure::NoScript) => match (call.no_script(), script) {
                (Next::LoadAndResend, Some(script)) => {
                    self.load_and_retry(&mut state, script, bytes, deadline)
                }
                _ => Err(crate::store::connection_core::noscript_after_load()),
            },
            Err(Failure::Other(err)) => Err(err),
            Ok(value) => Ok(value),
        })
    }

    /// After NOSCRIPT (the script did not run): SCRIPT LOAD, then the same call once more.
    fn load_and_retry(
        &self,
        state: &mut LaneState,
        script: &LuaScript,
        bytes: &[u8],
        deadline: Instant,
    ) -> Result<Value> {
        let Some(link) = state.link.as_mut() else {
            return Err(Error::StoreUnavailable(
                "the connection closed after NOSCRIPT".into(),
            ));
        };
        let mut load = redis::cmd("SCRIPT");
        load.arg("LOAD").arg(&script.body);
        let mut both = load.get_packed_command();
        both.extend_from_slice(bytes);
        if let Sent(Written::Nothing | Written::Partly, err) = link.write(&both, deadline) {
            state.link = None;
            let err = err.unwrap_or_else(|| std::io::ErrorKind::WriteZero.into());
            return Err(transport_error(&err, "loading the script"));
        }
        let (loaded, again) = match link.reply(deadline, self.timeout) {
            Ok(loaded) => (loaded, link.reply(deadline, self.timeout)),
            Err(err) => (Value::Nil, Err(err)),
        };
        if again.is_err() {
            state.link = None;
        }
        let again = again?;
        classify(Ok(loaded), self.timeout).map_err(|failure| match failure {
            Failure::NoScript => Error::StoreUnavailable("NOSCRIPT from SCRIPT LOAD".into()),
            Failure::Other(err) => err,
        })?;
        classify(Ok(again), self.timeout).map_err(|failure| match failure {
            Failure::NoScript => crate::store::connection_core::noscript_after_load(),
            Failure::Other(err) => err,
        })
    }
}

/// Connects to `endpoint` and sends its preamble (AUTH, SELECT), all before `deadline`.
fn open_link(endpoint: &Endpoint, deadline: Instant, timeout: Duration) -> Result<Link> {
    let left = remaining(deadline, timeout).map_err(|_| connect_timed_out(timeout, false))?;
    let address = (endpoint.host(), endpoint.port());
    let addresses = std::net::ToSocketAddrs::to_socket_addrs(&address)
        .map_err(|err| unavailable(&err, "resolving the host"))?;
    let mut last = None;
    let mut socket = None;
    for address in addresses {
        match TcpStream::connect_timeout(&address, left) {
            Ok(connected) => {
                socket = Some(connected);
                break;
            }
            Err(err) => last = Some(err),
        }
    }
    let socket = socket.ok_or_else(|| match last {
        Some(err) => unavailable(&err, "connecting"),
        None => Error::StoreUnavailable("the host has no address".into()),
    })?;
    let _ = socket.set_nodelay(true);
    let mut link = Link {
        socket,
        reader: ReplyReader::new(),
        chunk: Box::new([0; 4096]),
        set_timeout: None,
    };
    if endpoint.preamble_replies() > 0 {
        if let Sent(Written::Nothing | Written::Partly, err) = link.write(endpoint.preamble(), deadline) {
            let err = err.unwrap_or_else(|| std::io::ErrorKind::WriteZero.into());
            return Err(transport_error(&err, "connecting"));
        }
        for _ in 0..endpoint.preamble_replies() {
            let reply = link
                .reply(deadline, timeout)
                .map_err(|err| while_connecting(err, timeout))?;
            super::wire_reader::Reply(reply).into_result()?;
        }
    }
    Ok(link)
}

/// Whether the server at `endpoint` answers its preamble and a `PING` within `timeout`: the circuit
/// breaker's background probe. Any answer counts, error replies included (a wrong password is then the
/// calls' own error to report, not an outage).
pub(crate) fn answers_ping(endpoint: &Endpoint, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut link = match open_link(endpoint, deadline, timeout) {
        Ok(link) => link,
        Err(err) => return !err.is_store_failure(),
    };
    matches!(
        link.write(b"*1\r\n$4\r\nPING\r\n", deadline),
        Sent(Written::All, _)
    ) && link.reply(deadline, timeout).is_ok()
}

impl Link {
    /// Whether the socket can take a call: no close (FIN) or reset (RST) has arrived, and no stray
    /// bytes wait to be read (which would be another call's reply).
    fn is_open(&self) -> bool {
        if self.reader.is_broken() {
            return false;
        }
        // Bytes nobody asked for would be another call's reply: that socket is not reused either.
        socket_peek::peek(raw(&self.socket)) == Peeked::Nothing
    }

    /// Makes the socket's timeouts `left`, give or take a tenth: a call on an open connection usually
    /// has nearly its whole timeout left, so most calls set nothing (two system calls saved per call).
    fn bound_by(&mut self, left: Duration) {
        let fits = self
            .set_timeout
            .is_some_and(|set| set >= left.mul_f64(0.9) && set <= left.mul_f64(1.1));
        if !fits {
            let _ = self.socket.set_read_timeout(Some(left));
            let _ = self.socket.set_write_timeout(Some(left));
            self.set_timeout = Some(left);
        }
    }

    fn write(&mut self, bytes: &[u8], deadline: Instant) -> Sent {
        let mut written = 0;
        while written < bytes.len() {
            let left = match deadline.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left,
                _ => {
                    let timed_out = std::io::Error::new(ErrorKind::TimedOut, "write timed out");
                    return Sent(sent_so_far(written), Some(timed_out));
                }
            };
            self.bound_by(left);
            match self.socket.write(&bytes[written..]) {
                Ok(0) => {
                    let closed = std::io::Error::new(ErrorKind::WriteZero, "the connection is closed");
                    return Sent(sent_so_far(written), Some(closed));
                }
                Ok(n) => written += n,
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(err) => return Sent(sent_so_far(written), Some(err)),
            }
        }
        Sent(Written::All, None)
    }

    /// Reads the next whole reply, before `deadline`.
    fn reply(&mut self, deadline: Instant, timeout: Duration) -> Result<Value> {
        loop {
            if let Some(reply) = self.reader.next_reply()? {
                return Ok(reply.0);
            }
            self.bound_by(remaining(deadline, timeout)?);
            match self.socket.read(&mut self.chunk[..]) {
                Ok(0) => {
                    return Err(Error::StoreUnavailable(format!(
                        "{CLOSED_BEFORE_REPLY} (the command may have run)"
                    )))
                }
                Ok(n) => self.reader.push(&self.chunk[..n]),
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(err) if matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(Error::Timeout(timeout))
                }
                Err(err) => return Err(unavailable(&err, "waiting for the reply")),
            }
        }
    }
}

/// A failed read of the preamble's replies (AUTH, SELECT), told as what it is: nothing but the
/// preamble was sent, so no call may have run.
fn while_connecting(err: Error, timeout: Duration) -> Error {
    match err {
        Error::Timeout(_) => connect_timed_out(timeout, false),
        Error::StoreUnavailable(why) if why.starts_with(CLOSED_BEFORE_REPLY) => preamble_unanswered(None),
        Error::StoreUnavailable(why) => preamble_unanswered(Some(&why)),
        other => other,
    }
}

/// How a close before a reply starts its message.
const CLOSED_BEFORE_REPLY: &str = "the connection closed before the reply came";

/// How much of a write that stopped after `written` bytes left.
fn sent_so_far(written: usize) -> Written {
    if written == 0 {
        Written::Nothing
    } else {
        Written::Partly
    }
}

/// The time left before `deadline`, or the timeout error.
fn remaining(deadline: Instant, timeout: Duration) -> Result<Duration> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(left) if !left.is_zero() => Ok(left),
        _ => Err(Error::Timeout(timeout)),
    }
}

fn unavailable(err: &std::io::Error, doing: &str) -> Error {
    transport_error(err, doing)
}

#[cfg(unix)]
fn raw(socket: &TcpStream) -> std::os::fd::RawFd {
    std::os::fd::AsRawFd::as_raw_fd(socket)
}

#[cfg(not(unix))]
fn raw(socket: &TcpStream) -> &TcpStream {
    socket
}
