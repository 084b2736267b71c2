//! What a Redis Cluster node connection answers for the routing without asking the node again: the
//! `PING` that checks the connection, while the node answered a call moments ago, and `CLUSTER SLOTS`,
//! while the node answered one moments ago.
//!
//! redis-rs rebuilds its slot map after every call that finds no connection for its slot: it asks a
//! node for `CLUSTER SLOTS`, then PINGs every node's connection, and holds every shard's calls until
//! it is done. While a master is down, its calls fail as fast as its port refuses them, so the
//! healthy nodes were asked ~500 times a second and the healthy shards answered half their calls.
//! Answered from here, a rebuild needs no round trip and holds nothing; the slot map it builds is at
//! most [`SLOT_MAP_KEPT`] old (a failover takes seconds to be announced), and a connection that broke
//! since its last answer is found by the next call's write, as on one server.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use redis::{Cmd, Value};

use crate::clock::{micros, process_now_us};

/// How long a node's `CLUSTER SLOTS` answer stands for the next ones.
pub(crate) const SLOT_MAP_KEPT: Duration = Duration::from_millis(100);
/// How recently a connection must have answered for the routing's `PING` to be answered for it.
pub(crate) const ALIVE_FOR: Duration = Duration::from_millis(50);

/// The routing's questions this module can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Question {
    /// `PING`, the routing's check of a connection.
    Ping,
    /// `CLUSTER SLOTS`, the routing's question for the slot map.
    SlotMap,
}

impl Question {
    /// Which question `cmd` is, if it is one of them.
    pub(crate) fn of(cmd: &Cmd) -> Option<Question> {
        let mut args = cmd.args_iter().filter_map(|arg| match arg {
            redis::Arg::Simple(bytes) => Some(bytes),
            _ => None,
        });
        let first = args.next()?;
        if first.eq_ignore_ascii_case(b"PING") {
            return args.next().is_none().then_some(Question::Ping);
        }
        let second = args.next()?;
        (first.eq_ignore_ascii_case(b"CLUSTER")
            && second.eq_ignore_ascii_case(b"SLOTS")
            && args.next().is_none())
        .then_some(Question::SlotMap)
    }
}

/// One node connection's recent answers (shared by the clones redis-rs makes of the connection).
#[derive(Default)]
pub(crate) struct RecentAnswers {
    /// When the connection last answered a call, in µs by the process clock (0: never).
    answered_at_us: AtomicU64,
    /// The node's last `CLUSTER SLOTS` answer, and when it came.
    slot_map: Mutex<Option<(Instant, Value)>>,
}

impl RecentAnswers {
    /// What to answer `question` with, without asking the node: `None` to ask it.
    pub(crate) fn answer(&self, question: Question) -> Option<Value> {
        match question {
            Question::Ping => {
                let at = self.answered_at_us.load(Ordering::Relaxed);
                let alive = at != 0 && process_now_us().saturating_sub(at) < micros(ALIVE_FOR);
                alive.then(|| Value::SimpleString("PONG".into()))
            }
            Question::SlotMap => self
                .slot_map
                .lock()
                .as_ref()
                .filter(|(at, _)| at.elapsed() < SLOT_MAP_KEPT)
                .map(|(_, map)| map.clone()),
        }
    }

    /// Notes that the connection failed a call: it is vouched for again only once it answers.
    pub(crate) fn failed(&self) {
        self.answered_at_us.store(0, Ordering::Relaxed);
    }

    /// Notes that the connection answered `reply` to `question` (`None`: another call).
    pub(crate) fn answered(&self, question: Option<Question>, reply: &Value) {
        self.answered_at_us.store(process_now_us(), Ordering::Relaxed);
        if question == Some(Question::SlotMap) && !matches!(reply, Value::ServerError(_)) {
            *self.slot_map.lock() = Some((Instant::now(), reply.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_routings_ping_and_slot_map_questions_are_answered_here() {
        assert_eq!(Question::of(&redis::cmd("PING")), Some(Question::Ping));
        assert_eq!(
            Question::of(redis::cmd("cluster").arg("slots")),
            Some(Question::SlotMap)
        );
        assert_eq!(Question::of(redis::cmd("PING").arg("hello")), None);
        assert_eq!(Question::of(redis::cmd("CLUSTER").arg("NODES")), None);
        assert_eq!(Question::of(redis::cmd("GET").arg("PING")), None);
    }

    #[test]
    fn a_connection_is_vouched_for_only_moments_after_an_answer() {
        let recent = RecentAnswers::default();
        assert_eq!(recent.answer(Question::Ping), None, "never answered");
        recent.answered(None, &Value::Int(1));
        assert_eq!(
            recent.answer(Question::Ping),
            Some(Value::SimpleString("PONG".into()))
        );
        std::thread::sleep(ALIVE_FOR + Duration::from_millis(10));
        assert_eq!(recent.answer(Question::Ping), None, "answered too long ago");
    }

    #[test]
    fn a_slot_map_stands_for_its_span_and_an_error_never_does() {
        let recent = RecentAnswers::default();
        assert_eq!(recent.answer(Question::SlotMap), None);
        let refused = redis::parse_redis_value(b"-CLUSTERDOWN The cluster is down\r\n").unwrap();
        recent.answered(Some(Question::SlotMap), &refused);
        assert_eq!(
            recent.answer(Question::SlotMap),
            None,
            "an error reply is never kept"
        );
        let map = Value::Array(vec![Value::Int(0), Value::Int(16383)]);
        recent.answered(Some(Question::SlotMap), &map);
        assert_eq!(recent.answer(Question::SlotMap), Some(map));
        std::thread::sleep(SLOT_MAP_KEPT + Duration::from_millis(10));
        assert_eq!(recent.answer(Question::SlotMap), None, "kept too long");
    }
}
