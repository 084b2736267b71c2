//! The Redis store's blocking lane: one plain blocking connection beside the shared multiplexed one.
//! A caller on an ordinary thread (the Python sync API) that finds it free writes its command and
//! blocks reading the reply on its own thread: no hand-off to a runtime thread and back, which on a
//! small machine costs as much as the round trip itself. Busy (another thread's call is on it) or down,
//! the caller is told to take the multiplexed connection, which pipelines concurrent callers.
//! Connecting happens on a helper thread, never inside a caller's call, so no call waits longer than
//! its timeout because the lane was (re)connecting.

use std::sync::{Arc, Mutex, TryLockError};
use std::time::{Duration, Instant};

use redis::{Cmd, Value};

use super::redis::{classify, Failure};
use super::script::LuaScript;
use crate::error::{Error, Result};

/// After a failed connect, how long before the next attempt (callers use the multiplexed connection,
/// which reconnects with its own backoff, meanwhile).
const RECONNECT_PAUSE: Duration = Duration::from_millis(500);

pub(crate) struct BlockingLane {
    client: redis::Client,
    timeout: Duration,
    state: Mutex<LaneState>,
}

#[derive(Default)]
struct LaneState {
    connection: Option<redis::Connection>,
    connecting: bool,
    down_until: Option<Instant>,
}

impl BlockingLane {
    /// A lane, not connected yet: the first blocking call starts connecting it (async-only users never
    /// open it).
    pub(crate) fn new(client: redis::Client, timeout: Duration) -> Self {
        BlockingLane {
            client,
            timeout,
            state: Mutex::new(LaneState::default()),
        }
    }

    /// Opens the connection (on the helper thread). A failure pauses attempts for a moment.
    fn connect(&self) {
        let opened = self.open();
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.settle(opened);
    }

    /// Runs `cmd`, an EVALSHA of `script`, loading the script on NOSCRIPT. `None` when the lane is busy
    /// or cannot connect. A failure on the way (timeout, dropped connection) closes the connection and
    /// is returned, never retried: the command may have run.
    pub(crate) fn eval(self: &Arc<Self>, script: &LuaScript, cmd: &Cmd) -> Option<Result<Value>> {
        let mut state = match self.state.try_lock() {
            Ok(state) => state,
            Err(TryLockError::WouldBlock) => return None,
            // A panic while holding the lane left the connection in an unknown state: start over.
            Err(TryLockError::Poisoned(poisoned)) => {
                let mut state = poisoned.into_inner();
                state.connection = None;
                state
            }
        };
        let connection = self.connection(&mut state)?;
        let mut broken = false;
        let mut send = |cmd: &Cmd| {
            let reply = redis::ConnectionLike::req_command(&mut *connection, cmd);
            // A transport failure (timeout, reset) leaves a reply unread or the socket dead: the
            // connection is never reused. A server error reply leaves it in order.
            broken |= reply.is_err();
            classify(reply, self.timeout)
        };
        let reply = match send(cmd) {
            Err(Failure::NoScript) => {
                let mut load = redis::cmd("SCRIPT");
                load.arg("LOAD").arg(&script.body);
                send(&load).and_then(|_| send(cmd))
            }
            other => other,
        };
        if broken {
            state.connection = None;
        }
        Some(reply.map_err(|failure| match failure {
            Failure::NoScript => Error::StoreUnavailable("NOSCRIPT after SCRIPT LOAD".into()),
            Failure::Other(err) => err,
        }))
    }

    /// The open connection; `None` while there is none, after starting a connect on a helper thread
    /// unless one is under way or the last failure is too recent.
    fn connection<'s>(self: &Arc<Self>, state: &'s mut LaneState) -> Option<&'s mut redis::Connection> {
        let idle = state.connection.is_none() && !state.connecting;
        if idle && state.down_until.is_none_or(|until| Instant::now() >= until) {
            state.connecting = true;
            let lane = Arc::clone(self);
            let started = std::thread::Builder::new()
                .name("ratelock-lane".into())
                .spawn(move || lane.connect());
            state.connecting = started.is_ok();
        }
        state.connection.as_mut()
    }

    fn open(&self) -> redis::RedisResult<redis::Connection> {
        let connection = self.client.get_connection_with_timeout(self.timeout)?;
        connection.set_read_timeout(Some(self.timeout))?;
        connection.set_write_timeout(Some(self.timeout))?;
        Ok(connection)
    }
}

impl LaneState {
    fn settle(&mut self, opened: redis::RedisResult<redis::Connection>) {
        self.connecting = false;
        match opened {
            Ok(connection) => {
                self.connection = Some(connection);
                self.down_until = None;
            }
            Err(_) => self.down_until = Some(Instant::now() + RECONNECT_PAUSE),
        }
    }
}
