//! The gate every call to one Redis store passes in one process: the store's circuit breaker (see
//! `connection_core`), and its half-open probe, run off every caller's path: a thread of its own
//! connects, sends the preamble (AUTH, SELECT) and a `PING` within the store's timeout, and tells the
//! breaker whether the server answered. Calls meanwhile keep answering at once.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::endpoint::Endpoint;
use super::wire_reader::ReplyReader;
use crate::error::{Error, Result};
use crate::store::connection_core::{Admission, BreakerState, SharedBreaker};

/// One store's breaker in one process, shared by the async connection, the blocking lane, the lock
/// waits and Node's wire client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Gate {
    breaker: Arc<SharedBreaker>,
    /// Where a background probe connects: one plain server. Without it (TLS, cluster, Sentinel) the
    /// call that finds a probe due goes to the server itself, as the probe.
    endpoint: Option<Endpoint>,
    timeout: Duration,
}

impl Gate {
    pub(crate) fn new(endpoint: Option<Endpoint>, timeout: Duration) -> Self {
        let seed = u64::from(std::process::id()) ^ (timeout.as_nanos() as u64).rotate_left(17);
        Gate {
            breaker: Arc::new(SharedBreaker::new(
                seed ^ crate::clock::now_us(),
                timeout.saturating_mul(2),
            )),
            endpoint,
            timeout,
        }
    }

    /// Where the breaker stands (for health checks).
    pub fn state(&self) -> BreakerState {
        self.breaker.state()
    }

    /// `Ok` when a call may go out now; else the immediate outage error that the failure policy
    /// answers. A due probe starts in the background here.
    pub fn admit(&self) -> Result<()> {
        match self.breaker.admit() {
            Admission::Proceed => Ok(()),
            Admission::Probe => match &self.endpoint {
                Some(endpoint) => {
                    probe_in_background(endpoint.clone(), self.timeout, self.breaker.clone());
                    Err(open_error())
                }
                None => Ok(()),
            },
            Admission::Refuse => Err(open_error()),
        }
    }

    /// The server answered (any reply, error replies included).
    pub fn success(&self) {
        self.breaker.success();
    }

    /// A connect failed or a call timed out.
    pub fn outage(&self) {
        self.breaker.outage();
    }

    /// Records what a failed call says about the server: a timeout, or a failed connect
    /// (`connecting`), opens the breaker; an answer of any kind (a configuration error, a protocol
    /// error) closes it; a connection lost mid-call says nothing (the next connect will tell).
    /// A call that was the half-open trial (no background probe for this URL) and met any outage
    /// reopens the breaker: left half-open, it would refuse every call from then on.
    pub(crate) fn failed(&self, err: &Error, connecting: bool) {
        match err {
            Error::Timeout(_) => self.outage(),
            Error::StoreUnavailable(_) if connecting => self.outage(),
            Error::StoreUnavailable(_) if self.state() == BreakerState::HalfOpen => self.outage(),
            Error::StoreUnavailable(_) => {}
            _ => self.success(),
        }
    }
}

/// What a call gets while the breaker is open.
fn open_error() -> Error {
    Error::StoreUnavailable(
        "circuit breaker open: the server failed a moment ago; calls answer at once until a background probe reaches it"
            .into(),
    )
}

/// Starts one probe of `endpoint` in the background; its outcome closes or reopens `breaker`.
fn probe_in_background(endpoint: Endpoint, timeout: Duration, breaker: Arc<SharedBreaker>) {
    let started = std::thread::Builder::new().name("ratelock-probe".into()).spawn({
        let breaker = breaker.clone();
        move || match answers(&endpoint, timeout) {
            true => breaker.success(),
            false => breaker.outage(),
        }
    });
    if started.is_err() {
        // No thread to probe with: stay open and let a later call start the next probe.
        breaker.outage();
    }
}

/// Whether the server answers the preamble and a `PING` before `timeout` runs out. Any reply counts,
/// error replies included (a wrong password is then the calls' own error to report, not an outage).
fn answers(endpoint: &Endpoint, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let Ok(addresses) = (endpoint.host(), endpoint.port()).to_socket_addrs() else {
        return false;
    };
    for address in addresses {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return false;
        };
        let Ok(mut socket) = TcpStream::connect_timeout(&address, left) else {
            continue;
        };
        let mut bytes = endpoint.preamble().to_vec();
        bytes.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        let expected = endpoint.preamble_replies() + 1;
        return exchange(&mut socket, &bytes, expected, deadline);
    }
    false
}

fn exchange(socket: &mut TcpStream, bytes: &[u8], expected: usize, deadline: Instant) -> bool {
    let left = |deadline: Instant| {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    };
    let Some(time) = left(deadline) else { return false };
    if socket.set_write_timeout(Some(time)).is_err() || socket.write_all(bytes).is_err() {
        return false;
    }
    let mut reader = ReplyReader::new();
    let mut seen = 0;
    let mut chunk = [0u8; 512];
    while seen < expected {
        match reader.next_reply() {
            Ok(Some(_)) => {
                seen += 1;
                continue;
            }
            Ok(None) => {}
            Err(_) => return false,
        }
        let Some(time) = left(deadline) else { return false };
        if socket.set_read_timeout(Some(time)).is_err() {
            return false;
        }
        match socket.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => reader.push(&chunk[..n]),
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_call_that_meets_an_outage_reopens_the_breaker() {
        // No endpoint (TLS, Cluster, Sentinel): the first call after the pause is the trial.
        let gate = Gate::new(None, Duration::from_millis(100));
        gate.outage();
        assert!(gate.admit().is_err(), "refused while open");
        std::thread::sleep(Duration::from_millis(450));
        assert!(gate.admit().is_ok(), "the trial goes out");
        assert_eq!(gate.state(), BreakerState::HalfOpen);
        gate.failed(&Error::StoreUnavailable("LOADING Redis is loading".into()), false);
        assert_eq!(gate.state(), BreakerState::Open, "not left half-open for good");
        std::thread::sleep(Duration::from_millis(450));
        assert!(gate.admit().is_ok());
        gate.success();
        assert_eq!(gate.state(), BreakerState::Closed);
    }
}
