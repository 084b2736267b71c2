//! The gate every call to one Redis store passes in one process: the store's circuit breaker (see
//! `connection_core`), and its half-open probe, run off every caller's path: a thread of its own asks
//! the server (the store's probe: connect, preamble and `PING` over the blocking lane's connection
//! code) and tells the breaker whether it answered. Calls meanwhile keep answering at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result, BREAKER_OPEN};
use crate::store::connection_core::{Admission, BreakerState, SharedBreaker};

/// A blocking check whether the server answers (true) or not, run on a thread of its own.
pub(crate) type Probe = Arc<dyn Fn() -> bool + Send + Sync>;

/// One store's breaker in one process, shared by the async connection, the blocking lane, the lock
/// waits and Node's wire client. Cheap to clone.
#[derive(Clone)]
pub struct Gate {
    breaker: Arc<SharedBreaker>,
    /// The background probe, for one plain server. Without it (TLS, cluster, Sentinel) the call that
    /// finds a probe due goes to the server itself, as the probe.
    probe: Option<Probe>,
    /// A cluster's: since when (µs since the Unix epoch; 0: not now) every call has met an outage,
    /// no node answering any (see [`failed_on_a_node`](Self::failed_on_a_node)).
    unanswered_since: Arc<AtomicU64>,
    /// How long every call must fail before a cluster's breaker opens: the store's timeout, in µs.
    timeout_us: u64,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").field("state", &self.state()).finish()
    }
}

impl Gate {
    /// A closed gate whose probes (and trial calls) take at most `timeout`.
    pub(crate) fn new(probe: Option<Probe>, timeout: Duration) -> Self {
        let seed = u64::from(std::process::id()) ^ crate::clock::now_us();
        Gate {
            breaker: Arc::new(SharedBreaker::new(seed, timeout.saturating_mul(2))),
            probe,
            unanswered_since: Arc::default(),
            timeout_us: crate::clock::micros(timeout),
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
            Admission::Probe => match &self.probe {
                Some(probe) => {
                    probe_in_background(probe.clone(), self.breaker.clone());
                    Err(open_error(true))
                }
                None => Ok(()),
            },
            Admission::Refuse => Err(open_error(self.probe.is_some())),
        }
    }

    /// The server answered (any reply, error replies included).
    pub fn success(&self) {
        // Read first: every answered call comes here, and a store would cost a shared write.
        if self.unanswered_since.load(Ordering::Relaxed) != 0 {
            self.unanswered_since.store(0, Ordering::Relaxed);
        }
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
    ///
    /// A Redis Cluster's calls go to [`failed_on_a_node`](Self::failed_on_a_node) instead: only the
    /// store's own connect (`connecting`) comes here.
    pub(crate) fn failed(&self, err: &Error, connecting: bool) {
        match err {
            Error::Timeout(_) => self.outage(),
            Error::StoreUnavailable(_) if connecting => self.outage(),
            Error::StoreUnavailable(_) if self.state() == BreakerState::HalfOpen => self.outage(),
            Error::StoreUnavailable(_) => {}
            _ => self.success(),
        }
    }

    /// Records what a failed call of a Redis Cluster store says. One node's outage stays that node's:
    /// a node whose call timed out is suspect and refused at once (`suspect_nodes.rs`), and a dead one
    /// refuses its connections, so the calls for the other shards, which their masters still answer,
    /// are not refused with it. The breaker opens when every call has met an outage for a whole
    /// timeout, no node answering any (the cluster is down), or when the store cannot connect to the
    /// cluster at all ([`failed`](Self::failed) with `connecting`); a half-open trial that meets an
    /// outage opens it again, and an answer of any kind closes it.
    pub(crate) fn failed_on_a_node(&self, err: &Error) {
        if !err.is_store_failure() {
            self.success();
            return;
        }
        if self.state() == BreakerState::HalfOpen {
            self.outage();
            return;
        }
        let now = crate::clock::now_us().max(1);
        match self
            .unanswered_since
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
        {
            Err(since) if now.saturating_sub(since) >= self.timeout_us => self.outage(),
            // The first outage since an answer, or one within the timeout of it.
            _ => {}
        }
    }
}

/// What a call gets while the breaker is open: until a background probe reaches the server (one plain
/// server), or until a call let out after the pause does (TLS, cluster, Sentinel: no background probe).
fn open_error(probed: bool) -> Error {
    let until = if probed {
        "a background probe reaches it"
    } else {
        "a call let out after a short pause reaches it"
    };
    Error::StoreUnavailable(format!(
        "{BREAKER_OPEN}: the server failed a moment ago; calls answer at once until {until}"
    ))
}

/// Runs one probe in the background; its answer closes or reopens `breaker`.
fn probe_in_background(probe: Probe, breaker: Arc<SharedBreaker>) {
    let started = std::thread::Builder::new().name("ratelock-probe".into()).spawn({
        let breaker = breaker.clone();
        move || {
            crate::host_signals::keep_off_this_thread();
            match probe() {
                true => breaker.success(),
                false => breaker.outage(),
            }
        }
    });
    if started.is_err() {
        // No thread to probe with: stay open and let a later call start the next probe.
        breaker.outage();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_call_that_meets_an_outage_reopens_the_breaker() {
        // No endpoint (TLS, Cluster, Sentinel): the first call after the pause is the trial.
        let gate = Gate::new(None, Duration::from_millis(100));
        gate.outage();
        let refused = gate.admit().unwrap_err().to_string();
        assert!(
            refused.contains("a call let out after a short pause"),
            "{refused}"
        );
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

    #[test]
    fn a_cluster_nodes_outage_opens_no_breaker_but_a_failed_trial_reopens_it() {
        let gate = Gate::new(None, Duration::from_millis(100));
        gate.failed_on_a_node(&Error::Timeout(Duration::from_millis(100)));
        gate.failed_on_a_node(&Error::StoreUnavailable("connecting: Connection refused".into()));
        assert_eq!(
            gate.state(),
            BreakerState::Closed,
            "one node's outage stays the node's"
        );
        gate.failed(
            &Error::StoreUnavailable("connecting: Connection refused".into()),
            true,
        );
        assert_eq!(
            gate.state(),
            BreakerState::Open,
            "no node of the cluster could be reached"
        );
        std::thread::sleep(Duration::from_millis(450));
        assert!(gate.admit().is_ok(), "the trial goes out");
        gate.failed_on_a_node(&Error::Timeout(Duration::from_millis(100)));
        assert_eq!(gate.state(), BreakerState::Open, "not left half-open for good");
        std::thread::sleep(Duration::from_millis(450));
        assert!(gate.admit().is_ok());
        gate.failed_on_a_node(&Error::Protocol("an answer".into()));
        assert_eq!(gate.state(), BreakerState::Closed, "an answer closes it");
    }

    #[test]
    fn a_cluster_whose_calls_all_fail_for_a_timeout_opens_the_breaker() {
        let gate = Gate::new(None, Duration::from_millis(100));
        let node_down = Error::StoreUnavailable("connecting: Connection refused".into());
        gate.failed_on_a_node(&node_down);
        std::thread::sleep(Duration::from_millis(120));
        gate.success();
        gate.failed_on_a_node(&node_down);
        assert_eq!(
            gate.state(),
            BreakerState::Closed,
            "another shard answered in between"
        );
        std::thread::sleep(Duration::from_millis(120));
        gate.failed_on_a_node(&node_down);
        assert_eq!(
            gate.state(),
            BreakerState::Open,
            "no node answered for a whole timeout"
        );
    }
}
