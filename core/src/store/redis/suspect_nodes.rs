//! Redis Cluster nodes a call timed out on, or whose connect failed as an outage (refused, timed out),
//! kept out of redis-rs's routing until they answer again.
//!
//! While a node is suspect, every call, check and connect redis-rs makes to it fails at once with
//! nothing sent: redis-rs routes the node's slots to the rest of its shard (a replica sends them back
//! with MOVED until the cluster promotes it), and neither a slot-map refresh nor a reconnect waits on
//! the node. Both hold redis-rs's connection map while they run, so a frozen node they waited on (it
//! accepts connections; only its calls time out) would hold every shard's calls. One probe per suspect
//! node PINGs it on a connection of its own until it answers within the timeout (it is then trusted
//! again), for at most [`PROBE_FOR`] (the mark then goes, and the next timeout marks it again).
//!
//! A mark lasts only while its probe keeps it fresh, so a probe whose runtime stopped cannot leave a
//! node out for good, and it belongs to the process that made it: a forked child (whose probes did not
//! survive the fork) ignores its parent's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::pipelined::Pipelined;

/// How long a probe goes on before it gives the node up to the next timeout.
const PROBE_FOR: Duration = Duration::from_secs(600);
/// The first pause between a probe's PINGs, doubled after each up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const LONGEST_PAUSE: Duration = Duration::from_secs(2);

/// A suspect node's mark: the process that made it, and until when it holds unless its probe renews it.
struct Mark {
    pid: u32,
    until: Instant,
}

/// The suspect nodes, by `host:port`.
static SUSPECTS: Mutex<Option<HashMap<String, Mark>>> = Mutex::new(None);
/// How many marks [`SUSPECTS`] holds (some may have run out): with none, a call takes no lock.
static MARKS: AtomicUsize = AtomicUsize::new(0);

/// Whether calls to `address` (`host:port`) are to fail at once, unsent.
pub(crate) fn is_suspect(address: &str) -> bool {
    if MARKS.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let marks = SUSPECTS.lock();
    marks
        .as_ref()
        .and_then(|marks| marks.get(address))
        .is_some_and(|mark| mark.pid == std::process::id() && mark.until > Instant::now())
}

/// Marks `address` suspect, a call to it over `link` having timed out after `timeout`, and starts its
/// probe (on a connection of its own to the same node), unless it is suspect already. Without a runtime
/// to probe on, nothing is marked.
pub(crate) fn suspect(address: &str, link: &Pipelined, timeout: Duration) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if !mark(address, timeout + FIRST_PAUSE) {
        return;
    }
    runtime.spawn(probe(address.to_owned(), link.fresh(), timeout));
}

/// Marks `address` for `span`, unless this process marked it already (then `false`).
fn mark(address: &str, span: Duration) -> bool {
    let mut marks = SUSPECTS.lock();
    let marks = marks.get_or_insert_with(HashMap::new);
    let now = Instant::now();
    if let Some(mark) = marks.get(address) {
        if mark.pid == std::process::id() && mark.until > now {
            return false;
        }
    }
    let mark = Mark {
        pid: std::process::id(),
        until: now + span,
    };
    if marks.insert(address.to_owned(), mark).is_none() {
        MARKS.fetch_add(1, Ordering::Relaxed);
    }
    true
}

/// PINGs the node over `node` until it answers within `timeout` or [`PROBE_FOR`] has passed, keeping
/// its mark fresh meanwhile; then takes the mark off.
async fn probe(address: String, node: Pipelined, timeout: Duration) {
    let started = Instant::now();
    let mut pause = FIRST_PAUSE;
    let ping = super::packing::packed(&redis::cmd("PING"));
    loop {
        renew(&address, timeout * 2 + pause);
        // A reply of any kind is a node that answers; what it answers is the calls' to meet.
        if node.send_telling(ping.clone()).await.0.is_ok() || started.elapsed() > PROBE_FOR {
            break;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
    if let Some(marks) = SUSPECTS.lock().as_mut() {
        if marks.remove(&address).is_some() {
            MARKS.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Keeps `address`'s mark for `span` more.
fn renew(address: &str, span: Duration) {
    if let Some(mark) = SUSPECTS.lock().as_mut().and_then(|marks| marks.get_mut(address)) {
        mark.until = Instant::now() + span;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_holds_for_its_span_and_is_made_once() {
        let address = "192.0.2.1:7000";
        assert!(!is_suspect(address));
        assert!(mark(address, Duration::from_millis(60)));
        assert!(is_suspect(address));
        assert!(!mark(address, Duration::from_millis(60)), "marked twice");
        std::thread::sleep(Duration::from_millis(80));
        assert!(!is_suspect(address), "a mark no probe renews runs out");
        assert!(mark(address, Duration::from_millis(60)));
    }

    #[test]
    fn another_process_marks_are_not_ours() {
        let address = "192.0.2.2:7000";
        let parents = Mark {
            pid: std::process::id().wrapping_add(1),
            until: Instant::now() + Duration::from_secs(60),
        };
        SUSPECTS
            .lock()
            .get_or_insert_with(HashMap::new)
            .insert(address.to_owned(), parents);
        MARKS.fetch_add(1, Ordering::Relaxed);
        assert!(!is_suspect(address), "a parent's mark, seen after a fork");
        assert!(mark(address, Duration::from_secs(1)));
    }
}
