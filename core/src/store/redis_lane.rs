//! The Redis store's blocking lane: one plain blocking socket beside the shared multiplexed connection,
//! for a plain `redis://` server. A caller on an ordinary thread (the Python sync API) that finds it
//! free writes its command and blocks reading the reply on its own thread: no hand-off to a runtime
//! thread and back, which on a small machine costs as much as the round trip itself. Busy (another
//! thread's call is on it), or down after a failed connect, the caller is told to take the multiplexed
//! connection, which pipelines concurrent callers.
//!
//! Connection lifecycle: before a call is written, the socket is checked for a close the server or a
//! proxy already sent (FIN or RST: an idle timeout, `CLIENT KILL`); such a socket is replaced and the
//! call goes out on the fresh one. A write that fails before any byte left is retried once on a fresh
//! connection. Once a byte may have reached the server, nothing is ever sent again: a timeout or a
//! close while waiting is an error (the command may have run). Connecting, the preamble (AUTH, SELECT)
//! and the call together stay within the call's timeout.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex, TryLockError};
use std::time::{Duration, Instant};

use redis::{Cmd, Value};

use super::redis::{classify, Failure};
use super::script::LuaScript;
use super::socket_peek::{self, Peeked};
use super::wire::Endpoint;
use super::wire_reader::ReplyReader;
use crate::error::{Error, Result};

/// After a failed connect, how long before the next attempt (callers use the multiplexed connection,
/// which reconnects with its own backoff, meanwhile).
const RECONNECT_PAUSE: Duration = Duration::from_millis(500);

pub(crate) struct BlockingLane {
    endpoint: Endpoint,
    timeout: Duration,
    state: Mutex<LaneState>,
}

#[derive(Default)]
struct LaneState {
    link: Option<Link>,
    down_until: Option<Instant>,
}

/// One open socket and the reader of its replies.
struct Link {
    socket: TcpStream,
    reader: ReplyReader,
    /// The read and write timeouts set on the socket now (set again only when a call has less left).
    set_timeout: Option<Duration>,
}

/// How a write ended.
enum Sent {
    /// Every byte was handed to the kernel.
    All,
    /// Nothing left: the connection was already gone (safe to send on a fresh one).
    Nothing(std::io::Error),
    /// Some bytes may have left: the command may run.
    Partly(std::io::Error),
}

impl BlockingLane {
    /// A lane for `url` when it is one plain `redis://` server (`None` otherwise: TLS, Unix sockets,
    /// cluster and Sentinel stay on the multiplexed connection). Nothing is opened yet.
    pub(crate) fn for_url(url: &str, timeout: Duration) -> Option<Self> {
        let endpoint = Endpoint::from_url(url).ok()??;
        Some(BlockingLane {
            endpoint,
            timeout,
            state: Mutex::new(LaneState::default()),
        })
    }

    /// Runs `cmd`, an EVALSHA of `script`, loading the script on NOSCRIPT. `None` when the lane is busy
    /// or cannot connect (then use the multiplexed connection).
    pub(crate) fn eval(self: &Arc<Self>, script: &LuaScript, cmd: &Cmd) -> Option<Result<Value>> {
        let mut state = match self.state.try_lock() {
            Ok(state) => state,
            Err(TryLockError::WouldBlock) => return None,
            // A panic while holding the lane left the socket in an unknown state: start over.
            Err(TryLockError::Poisoned(poisoned)) => {
                let mut state = poisoned.into_inner();
                state.link = None;
                state
            }
        };
        let deadline = Instant::now() + self.timeout;
        let bytes = cmd.get_packed_command();
        let mut fresh = false;
        // The call goes out at most twice, and the second time only if no byte of the first left.
        let outcome = loop {
            if state.link.as_ref().is_some_and(|link| !link.is_open()) {
                state.link = None;
            }
            if state.link.is_none() {
                if state.down_until.is_some_and(|until| Instant::now() < until) {
                    return None;
                }
                match self.open(deadline) {
                    Ok(link) => (state.link, state.down_until, fresh) = (Some(link), None, true),
                    Err(_) => {
                        state.down_until = Some(Instant::now() + RECONNECT_PAUSE);
                        return None;
                    }
                }
            }
            let link = state.link.as_mut()?;
            match link.write(&bytes, deadline) {
                Sent::All => break link.reply(deadline, self.timeout),
                Sent::Nothing(_) if !fresh => state.link = None,
                Sent::Nothing(err) | Sent::Partly(err) => {
                    state.link = None;
                    return Some(Err(unavailable(&err, "sending the call")));
                }
            }
        };
        let reply = match outcome {
            Ok(reply) => classify(Ok(reply), self.timeout),
            Err(err) => {
                // A timeout or a close leaves a reply unread or the socket dead: never reuse it.
                state.link = None;
                return Some(Err(err));
            }
        };
        Some(match reply {
            Err(Failure::NoScript) => self.load_and_retry(&mut state, script, &bytes, deadline),
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
        match link.write(&both, deadline) {
            Sent::All => {}
            Sent::Nothing(err) | Sent::Partly(err) => {
                state.link = None;
                return Err(unavailable(&err, "loading the script"));
            }
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
            Failure::NoScript => Error::StoreUnavailable("NOSCRIPT after SCRIPT LOAD".into()),
            Failure::Other(err) => err,
        })
    }

    /// Connects and sends the preamble (AUTH, SELECT), all before `deadline`.
    fn open(&self, deadline: Instant) -> Result<Link> {
        let left = remaining(deadline, self.timeout)?;
        let address = (self.endpoint.host(), self.endpoint.port());
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
            set_timeout: None,
        };
        if self.endpoint.preamble_replies() > 0 {
            match link.write(self.endpoint.preamble(), deadline) {
                Sent::All => {}
                Sent::Nothing(err) | Sent::Partly(err) => return Err(unavailable(&err, "connecting")),
            }
            for _ in 0..self.endpoint.preamble_replies() {
                let reply = link.reply(deadline, self.timeout)?;
                super::wire_reader::Reply(reply).into_result()?;
            }
        }
        Ok(link)
    }
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
                    return if written == 0 {
                        Sent::Nothing(timed_out)
                    } else {
                        Sent::Partly(timed_out)
                    };
                }
            };
            self.bound_by(left);
            match self.socket.write(&bytes[written..]) {
                Ok(0) => {
                    let closed = std::io::Error::new(ErrorKind::WriteZero, "the connection is closed");
                    return if written == 0 {
                        Sent::Nothing(closed)
                    } else {
                        Sent::Partly(closed)
                    };
                }
                Ok(n) => written += n,
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(err) if written == 0 => return Sent::Nothing(err),
                Err(err) => return Sent::Partly(err),
            }
        }
        Sent::All
    }

    /// Reads the next whole reply, before `deadline`.
    fn reply(&mut self, deadline: Instant, timeout: Duration) -> Result<Value> {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(reply) = self.reader.next_reply()? {
                return Ok(reply.0);
            }
            self.bound_by(remaining(deadline, timeout)?);
            match self.socket.read(&mut chunk) {
                Ok(0) => {
                    return Err(Error::StoreUnavailable(
                        "the connection closed before the reply came (the command may have run)".into(),
                    ))
                }
                Ok(n) => self.reader.push(&chunk[..n]),
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(err) if matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(Error::Timeout(timeout))
                }
                Err(err) => return Err(unavailable(&err, "waiting for the reply")),
            }
        }
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
    Error::StoreUnavailable(format!("{doing}: {err}"))
}

#[cfg(unix)]
fn raw(socket: &TcpStream) -> std::os::fd::RawFd {
    std::os::fd::AsRawFd::as_raw_fd(socket)
}

#[cfg(not(unix))]
fn raw(socket: &TcpStream) -> &TcpStream {
    socket
}
