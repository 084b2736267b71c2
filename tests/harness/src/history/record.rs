//! One history format for every driver (Rust, Python, Node): JSON lines, one operation each, with its
//! invoke and complete times on the driver's monotonic clock (nanoseconds since the history began; a
//! faked client clock never touches them) and what came of it. See `tests/faults/README.md`.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// What a call came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The call answered (see `allowed` / `token`).
    Ok,
    /// The call failed in a way that says it did nothing (refused before sending, a typed "busy").
    Fail,
    /// The call timed out or its connection dropped: it may or may not have happened.
    Ambiguous,
    /// A reply that was not this call's, or a shape the call did not expect: always a violation.
    Protocol,
}

/// One operation of one client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// Which client (process or task) made it, e.g. `rust-3`, `python-0`.
    pub client: String,
    /// What it was: `hit` (a limiter), `acquire`, `extend`, `release`, `write` (to the fenced
    /// resource), `lost` (a lost signal fired), `state_loss` (the test harness lost server state).
    pub op: String,
    /// The limit key or lock name.
    pub key: String,
    /// When the call started (ns since the history began, monotonic).
    pub invoke_ns: u64,
    /// When it returned.
    pub complete_ns: u64,
    /// What it came to.
    pub outcome: Outcome,
    /// A limiter's answer (`hit`), or whether the resource took a write (`write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<bool>,
    /// The fencing token granted (`acquire`) or sent (`write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u64>,
    /// The call's own timeout, in ns (for the no-hang check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ns: Option<u64>,
}

impl Op {
    /// How long the call took.
    pub fn took_ns(&self) -> u64 {
        self.complete_ns.saturating_sub(self.invoke_ns)
    }
}

/// A history being recorded by one driver: shared by its tasks, written out as JSON lines.
#[derive(Clone)]
pub struct History {
    started: Instant,
    ops: Arc<Mutex<Vec<Op>>>,
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

impl History {
    /// An empty history whose clock starts now.
    pub fn new() -> Self {
        History {
            started: Instant::now(),
            ops: Arc::default(),
        }
    }

    /// Nanoseconds since the history began.
    pub fn now_ns(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }

    /// Records one operation.
    pub fn push(&self, op: Op) {
        self.ops.lock().expect("history lock").push(op);
    }

    /// Every operation recorded so far.
    pub fn ops(&self) -> Vec<Op> {
        self.ops.lock().expect("history lock").clone()
    }

    /// Writes the history as JSON lines to `<dir>/<name>-<n>.jsonl` (`dir`: `RATELOCK_FAULT_HISTORIES`,
    /// else `target/fault-histories` of this workspace; `n` counts the histories this process kept),
    /// reads it back, and returns what was read: the operations a checker then reads are exactly
    /// those on disk, for anyone to check again with `check_history`.
    pub fn kept(&self, name: &str) -> Vec<Op> {
        static KEPT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::var_os("RATELOCK_FAULT_HISTORIES")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fault-histories"));
        std::fs::create_dir_all(&dir).expect("the histories' directory");
        let n = KEPT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let safe: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let path = dir.join(format!("{safe}-{}-{n}.jsonl", std::process::id()));
        self.save(&path).expect("the history is written");
        let read = load(&path).expect("the history reads back");
        assert_eq!(
            read.len(),
            self.ops().len(),
            "{}: every operation is on disk",
            path.display()
        );
        eprintln!("history: {}", path.display());
        read
    }

    /// Writes the history to `path` as JSON lines.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        for op in self.ops() {
            serde_json::to_writer(&mut out, &op)?;
            out.write_all(b"\n")?;
        }
        out.flush()
    }
}

/// Reads a JSON-lines history written by any driver.
pub fn load(path: &Path) -> std::io::Result<Vec<Op>> {
    let file = std::io::BufReader::new(std::fs::File::open(path)?);
    file.lines()
        .filter(|line| !matches!(line, Ok(text) if text.trim().is_empty()))
        .map(|line| {
            serde_json::from_str(&line?).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        })
        .collect()
}
