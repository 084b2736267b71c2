//! The checker: reads a history (any driver's) and names every operation that breaks what ratelock
//! promises. It only reasons from what the history proves: a server decided each call at some instant
//! between its invoke and its complete, so an admission counts inside a window only when its whole
//! bracket does, and an ambiguous call never counts as admitted. The invariants, per fault, are in
//! `tests/faults/README.md`.

use std::collections::BTreeMap;

use ratelock::{Algorithm, Rule};

use super::record::{Op, Outcome};

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Operations the check read.
    pub operations: usize,
    /// Of those, how many ended ambiguous.
    pub ambiguous: usize,
    /// Each broken promise, in words (empty when every invariant held).
    pub violations: Vec<String>,
    /// The slowest call, ns.
    pub slowest_ns: u64,
}

impl Findings {
    fn of(ops: &[&Op]) -> Self {
        Findings {
            operations: ops.len(),
            ambiguous: ops.iter().filter(|op| op.outcome == Outcome::Ambiguous).count(),
            violations: Vec::new(),
            slowest_ns: ops.iter().map(|op| op.took_ns()).max().unwrap_or(0),
        }
    }

    /// Two checks' findings over one history together (their counts are of the same operations).
    pub fn and(mut self, other: Findings) -> Findings {
        self.operations = self.operations.max(other.operations);
        self.ambiguous = self.ambiguous.max(other.ambiguous);
        self.violations.extend(other.violations);
        self.slowest_ns = self.slowest_ns.max(other.slowest_ns);
        self
    }
}

/// The most admissions `rule` allows in any span of `span_ns`, plus one rule's worth per state loss.
pub fn admission_bound(rule: &Rule, span_ns: u64, state_losses: u64) -> u64 {
    let period_ns = rule.period().as_nanos().max(1) as u64;
    let periods = span_ns.div_ceil(period_ns).max(1);
    let own = match rule.algorithm() {
        // A bucket admits its capacity at once, then at the rule's rate.
        Algorithm::Gcra | Algorithm::TokenBucket | Algorithm::LeakyBucket => {
            let refilled = (span_ns as u128 * rule.limit() as u128).div_ceil(period_ns as u128) as u64;
            rule.capacity() + refilled
        }
        // A window's limit, in every window the span touches (a span of one period touches two).
        Algorithm::FixedWindow | Algorithm::SlidingWindow => rule.limit() * (periods + 1),
        // An exact log: the limit in any one period.
        Algorithm::SlidingLog => rule.limit() * periods,
        other => panic!("the checker has no admission bound for {other:?} yet: add one"),
    };
    own + state_losses * rule.capacity()
}

/// Limiter histories: for each key's rule, certain admissions inside any span never exceed
/// [`admission_bound`]. `state_losses` is how many times the server lost all its state during the run;
/// a `state_loss` op in the history (an evicted key, say) counts as one more loss for its key.
pub fn check_limits(ops: &[Op], rules: &BTreeMap<String, Rule>, state_losses: u64) -> Findings {
    let hits: Vec<&Op> = ops.iter().filter(|op| op.op == "hit").collect();
    let mut findings = Findings::of(&hits);
    for (key, rule) in rules {
        let own_losses = ops
            .iter()
            .filter(|op| op.op == "state_loss" && &op.key == key)
            .count() as u64;
        let state_losses = state_losses + own_losses;
        let mut admitted: Vec<(u64, u64)> = hits
            .iter()
            .filter(|op| &op.key == key && op.outcome == Outcome::Ok && op.allowed == Some(true))
            .map(|op| (op.invoke_ns, op.complete_ns))
            .collect();
        admitted.sort_unstable();
        for (i, &(start, _)) in admitted.iter().enumerate() {
            let mut ends: Vec<u64> = admitted[i..].iter().map(|&(_, end)| end).collect();
            ends.sort_unstable();
            for (count, &end) in ends.iter().enumerate() {
                let inside = count as u64 + 1;
                let bound = admission_bound(rule, end - start, state_losses);
                if inside > bound {
                    findings.violations.push(format!(
                        "{key} ({rule}): {inside} admissions certainly within {:.1} ms, at most {bound} allowed",
                        (end - start) as f64 / 1e6
                    ));
                    break;
                }
            }
            if findings.violations.len() > 20 {
                break;
            }
        }
    }
    findings
}

/// How a hold shares its lock: alone, with other readers, or as one of a semaphore's permits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Exclusive,
    Read,
    Permit,
}

impl Mode {
    /// The mode an acquire op names: `acquire` and `acquire_write` are exclusive, `acquire_read` a
    /// read hold, `acquire_permit` a semaphore's permit.
    fn of(op: &str) -> Option<Mode> {
        match op {
            "acquire" | "acquire_write" => Some(Mode::Exclusive),
            "acquire_read" => Some(Mode::Read),
            "acquire_permit" => Some(Mode::Permit),
            _ => None,
        }
    }
}

/// One grant as the history proves it: held at least from `from` to `until` (ns).
#[derive(Debug, Clone, Copy)]
struct Held {
    client_index: usize,
    mode: Mode,
    token: Option<u64>,
    from: u64,
    until: u64,
}

/// Lock histories: [`check_holds`] for a lock of one holder at a time (a distributed or fair lock).
pub fn check_locks(ops: &[Op], ttl_ns: u64, state_kept: bool) -> Findings {
    check_holds(ops, ttl_ns, 1, state_kept)
}

/// Histories of every lock kind (`acquire`, `acquire_read`, `acquire_write`, `acquire_permit`,
/// `release`, and `write` to the fenced resource). Without state loss: an exclusive hold (a lock, a
/// fair lock, a write hold) is never certainly held beside another hold; read holds share only with
/// read holds; at most `permits` permits are certainly held at once. With state loss, holds may
/// overlap, but of two that do, the later grant has the higher token. The resource never takes a
/// write with a token below one it took. `ttl_ns` is the lease length (a grant lasts at least from its
/// acquire's invoke plus the ttl, renewed or not).
pub fn check_holds(ops: &[Op], ttl_ns: u64, permits: u64, state_kept: bool) -> Findings {
    let lock_ops: Vec<&Op> = ops
        .iter()
        .filter(|op| Mode::of(&op.op).is_some() || matches!(op.op.as_str(), "release" | "extend" | "write"))
        .collect();
    let mut findings = Findings::of(&lock_ops);
    let mut by_key: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in &lock_ops {
        by_key.entry(&op.key).or_default().push(op);
    }
    for (key, ops) in by_key {
        let holds = certain_holds(&ops, ttl_ns);
        for (i, a) in holds.iter().enumerate() {
            for b in &holds[i + 1..] {
                let overlap = a.from < b.until && b.from < a.until;
                let same = a.client_index == b.client_index && a.token == b.token && a.from == b.from;
                let shareable = matches!(
                    (a.mode, b.mode),
                    (Mode::Read, Mode::Read) | (Mode::Permit, Mode::Permit)
                );
                if !overlap || same || shareable {
                    continue;
                }
                let (earlier, later) = if a.from <= b.from { (a, b) } else { (b, a) };
                let tokens = (earlier.token.unwrap_or(0), later.token.unwrap_or(0));
                if state_kept {
                    findings.violations.push(format!(
                        "{key}: grants {} ({:?}) and {} ({:?}) both certainly held at {:.1} ms",
                        tokens.0,
                        earlier.mode,
                        tokens.1,
                        later.mode,
                        later.from as f64 / 1e6
                    ));
                } else if later.token.is_some() && tokens.1 <= tokens.0 {
                    findings.violations.push(format!(
                        "{key}: grant {} overlaps grant {} without a higher token",
                        tokens.1, tokens.0
                    ));
                }
            }
        }
        if state_kept {
            for start in holds.iter().filter(|h| h.mode == Mode::Permit) {
                let at = start.from;
                let held = holds
                    .iter()
                    .filter(|h| h.mode == Mode::Permit && h.from <= at && at < h.until)
                    .count() as u64;
                if held > permits {
                    findings.violations.push(format!(
                        "{key}: {held} permits certainly held at {:.1} ms, {permits} exist",
                        at as f64 / 1e6
                    ));
                    break;
                }
            }
        }
        findings.violations.extend(fenced_writes(key, &ops));
    }
    findings
}

/// Each client's grants with the span the history proves they were held: from the acquire's
/// complete to the earlier of its release's invoke and the lease's least end.
fn certain_holds(ops: &[&Op], ttl_ns: u64) -> Vec<Held> {
    let mut clients: Vec<&str> = ops.iter().map(|op| op.client.as_str()).collect();
    clients.sort_unstable();
    clients.dedup();
    let mut holds = Vec::new();
    for (client_index, client) in clients.iter().enumerate() {
        let mut mine: Vec<&&Op> = ops.iter().filter(|op| op.client == *client).collect();
        mine.sort_by_key(|op| op.invoke_ns);
        for (i, op) in mine.iter().enumerate() {
            let (Some(mode), Outcome::Ok) = (Mode::of(&op.op), op.outcome) else {
                continue;
            };
            let released = mine[i + 1..]
                .iter()
                .find(|later| later.op == "release")
                .map_or(u64::MAX, |later| later.invoke_ns);
            let until = released.min(op.invoke_ns + ttl_ns);
            if until > op.complete_ns {
                holds.push(Held {
                    client_index,
                    mode,
                    token: op.token,
                    from: op.complete_ns,
                    until,
                });
            }
        }
    }
    holds
}

/// The fenced resource's log (`write` ops, in the order the resource took them: by complete time):
/// a write it took never carries a token below one it took before.
fn fenced_writes(key: &str, ops: &[&Op]) -> Vec<String> {
    let mut writes: Vec<&&Op> = ops.iter().filter(|op| op.op == "write").collect();
    writes.sort_by_key(|op| op.complete_ns);
    let mut highest = 0;
    let mut violations = Vec::new();
    for write in writes {
        let (Some(token), Some(true)) = (write.token, write.allowed) else {
            continue;
        };
        if token < highest {
            violations.push(format!(
                "{key}: the resource took token {token} after token {highest}"
            ));
        }
        highest = highest.max(token);
    }
    violations
}

/// Every call: it completes within its own timeout plus `slack_ns` (no hang), and no reply was another
/// call's (no protocol outcome).
pub fn check_calls(ops: &[Op], slack_ns: u64) -> Findings {
    let calls: Vec<&Op> = ops
        .iter()
        .filter(|op| op.op != "lost" && op.op != "state_loss")
        .collect();
    let mut findings = Findings::of(&calls);
    for op in &calls {
        if op.outcome == Outcome::Protocol {
            findings.violations.push(format!(
                "{} {} {}: a reply that was not this call's (protocol error)",
                op.client, op.op, op.key
            ));
        }
        if let Some(timeout) = op.timeout_ns {
            if op.took_ns() > timeout + slack_ns {
                findings.violations.push(format!(
                    "{} {} {}: took {:.1} ms, past its timeout of {:.1} ms",
                    op.client,
                    op.op,
                    op.key,
                    op.took_ns() as f64 / 1e6,
                    timeout as f64 / 1e6
                ));
            }
        }
    }
    findings
}
