//! The shared vectors (`tests/vectors/*.json`, format in `tests/vectors/README.md`): loading them,
//! running them against a store with explicit `now`, and filling in expectations from the Rust core.

use std::path::{Path, PathBuf};

use ratelock::store::{EntryChange, OverrideChange};
use ratelock::{Decision, LimitStore, Rules, Store};
use serde::{Deserialize, Serialize};

/// One vector file: scenarios that each start from empty state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VectorFile {
    /// What the file covers.
    pub description: String,
    /// The scenarios.
    pub scenarios: Vec<Scenario>,
}

/// A sequence of steps on fresh state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scenario {
    /// Unique within the file.
    pub name: String,
    /// What it shows.
    pub description: String,
    /// Rules used by steps that give none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<String>,
    /// Key used by steps that give none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// One operation and what it must answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    /// `hit`, `peek`, `refund` (give back `cost`, then answer as a peek), `reserve` (book the earliest
    /// slot within `max_wait_us`), `reset`, `set_override` (`override_rules`) and `clear_override`,
    /// or a change to the key's entry: `block`, `deny`, `allow` (for
    /// `for_us`), `unblock`, `clear`.
    pub op: String,
    /// Time in µs since the Unix epoch.
    pub now_us: u64,
    /// Overrides the scenario key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Overrides the scenario rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<String>,
    /// Units (default 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub cost: u64,
    /// The expected decision (hit and peek).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// The expected error code instead (see `Error::code`), e.g. `COST_EXCEEDS_CAPACITY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_error: Option<String>,
    /// `block`, `deny`, `allow`: µs until the entry ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_us: Option<u64>,
    /// `unblock`, `clear`: whether an entry was removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_changed: Option<bool>,
    /// `reserve`: the longest wait for a slot, in µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wait_us: Option<u64>,
    /// `set_override`: the rules the key's own give way to (`clear_override` takes them away).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_rules: Option<String>,
}

fn one() -> u64 {
    1
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

/// The expected decision: the deciding rule's figures and every rule's `[allowed, limit, remaining,
/// reset_after_us, retry_after_us]` (allowed as 1/0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expect {
    /// Every rule allowed.
    pub allowed: bool,
    /// Deciding rule's limit.
    pub limit: u64,
    /// Deciding rule's remaining.
    pub remaining: u64,
    /// Deciding rule's reset, µs.
    pub reset_after_us: u64,
    /// Wait until the same request would be allowed, µs (0 when allowed).
    pub retry_after_us: u64,
    /// Index of the deciding rule.
    pub rule_index: usize,
    /// Per rule: allowed (1/0), limit, remaining, reset_after_us, retry_after_us.
    pub per_rule: Vec<[u64; 5]>,
    /// What decided (`ratelock::Reason::name`): `rule` when absent.
    #[serde(default = "rule_reason", skip_serializing_if = "is_rule_reason")]
    pub reason: String,
    /// Let through only because the rules that denied are in shadow: false when absent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub would_deny: bool,
}

fn rule_reason() -> String {
    "rule".into()
}

fn is_rule_reason(reason: &str) -> bool {
    reason == "rule"
}

impl Expect {
    /// The expectation a decision satisfies.
    pub fn of(decision: &Decision) -> Self {
        Expect {
            allowed: decision.allowed,
            limit: decision.limit,
            remaining: decision.remaining,
            reset_after_us: decision.reset_after.as_micros() as u64,
            retry_after_us: decision.retry_after.as_micros() as u64,
            rule_index: decision.rule_index,
            per_rule: decision
                .rules()
                .map(|r| {
                    [
                        r.allowed as u64,
                        r.limit,
                        r.remaining,
                        r.reset_after.as_micros() as u64,
                        r.retry_after.as_micros() as u64,
                    ]
                })
                .collect(),
            reason: decision.reason.name().into(),
            would_deny: decision.would_deny,
        }
    }
}

/// What one step produced: a decision, an error code, or nothing (reset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A decision.
    Decision(Expect),
    /// An error's stable code.
    Error(String),
    /// A reset, or an entry put.
    Done,
    /// `unblock` or `clear`: whether an entry was removed.
    Changed(bool),
}

/// The directory holding the vector files.
pub fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors")
}

/// Every vector file, sorted by name.
pub fn load_all() -> Vec<(String, VectorFile)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(vectors_dir())
        .expect("read tests/vectors")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read vector file");
            let file: VectorFile =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path.file_name().unwrap().to_string_lossy().into_owned(), file)
        })
        .collect()
}

/// Which of the store's entry points a vector run goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `Store::check`, the async path every binding can take.
    Async,
    /// `Store::check_blocking` (Redis: the blocking connection), which must then be free.
    Blocking,
}

/// Runs one step against a store under `prefix`.
pub async fn run_step(store: &Store, prefix: &str, scenario: &Scenario, step: &Step, via: Via) -> Answer {
    let key = step
        .key
        .as_ref()
        .or(scenario.key.as_ref())
        .map_or("k", String::as_str);
    let text = step
        .rules
        .as_ref()
        .or(scenario.rules.as_ref())
        .expect("a step needs rules");
    let rules: Rules = match text.parse() {
        Ok(rules) => rules,
        Err(err) => return Answer::Error(err.code().to_owned()),
    };
    let spend = match step.op.as_str() {
        "hit" | "reserve" => true,
        "peek" | "refund" => false,
        "reset" => {
            return match store.reset(prefix, key.as_bytes(), &rules).await {
                Ok(()) => Answer::Done,
                Err(err) => Answer::Error(err.code().to_owned()),
            }
        }
        other => return change_entry(store, prefix, key, step, other, &scenario.name).await,
    };
    let request = ratelock::store::LimitRequest {
        prefix,
        key: key.as_bytes(),
        rules: &rules,
        cost: step.cost,
        now_us: Some(step.now_us),
        spend,
        max_wait_us: (step.op == "reserve").then(|| step.max_wait_us.unwrap_or(0)),
    };
    let checked = match via {
        _ if step.op == "refund" => store.refund(&request).await,
        Via::Async => store.check(&request).await,
        Via::Blocking => blocking_check(store, &request),
    };
    match checked {
        Ok(verdict) => Answer::Decision(Expect::of(&Decision::decided(verdict, &rules))),
        Err(err) => Answer::Error(err.code().to_owned()),
    }
}

/// `block`, `deny`, `allow`, `unblock` or `clear` on the key's entry.
async fn change_entry(
    store: &Store,
    prefix: &str,
    key: &str,
    step: &Step,
    op: &str,
    scenario: &str,
) -> Answer {
    use ratelock::algorithm::standing::StandingCall;
    if op == "set_override" || op == "clear_override" {
        return change_override(store, prefix, key, step).await;
    }
    let span = step.for_us.map(std::time::Duration::from_micros);
    if !matches!(op, "block" | "deny" | "allow" | "unblock" | "clear") {
        panic!("unknown op {op:?} in scenario {scenario}");
    }
    let call = StandingCall::named(op, span, "for_us");
    let changed = match call {
        Ok(call) => {
            let (key, now_us) = (key.as_bytes(), Some(step.now_us));
            store
                .stand(&EntryChange {
                    prefix,
                    key,
                    call,
                    now_us,
                })
                .await
        }
        Err(err) => Err(err),
    };
    match (changed, op) {
        (Ok(changed), "unblock" | "clear") => Answer::Changed(changed),
        (Ok(_), _) => Answer::Done,
        (Err(err), _) => Answer::Error(err.code().to_owned()),
    }
}

/// `set_override` (with `override_rules`, kept with no end) or `clear_override` on the store.
async fn change_override(store: &Store, prefix: &str, key: &str, step: &Step) -> Answer {
    use ratelock::algorithm::overrides::Overrides;
    let overrides = match &step.override_rules {
        Some(text) => match text.parse::<Rules>() {
            Ok(rules) => Some(Overrides::new(rules)),
            Err(err) => return Answer::Error(err.code().to_owned()),
        },
        None => None,
    };
    let change = OverrideChange {
        prefix,
        key: key.as_bytes(),
        overrides: overrides.as_ref(),
        for_us: None,
        now_us: Some(step.now_us),
    };
    let changed = store.set_override(&change).await;
    match (changed, overrides) {
        (Ok(changed), None) => Answer::Changed(changed),
        (Ok(_), Some(_)) => Answer::Done,
        (Err(err), _) => Answer::Error(err.code().to_owned()),
    }
}

/// `Store::check_blocking`, waiting (up to 5 s) for the blocking connection to be open: the first
/// blocking call only starts connecting it.
fn blocking_check(
    store: &Store,
    request: &ratelock::store::LimitRequest<'_>,
) -> ratelock::Result<ratelock::algorithm::standing::Verdict> {
    crate::eventually("opening the blocking connection", || {
        store.check_blocking(request)
    })
}

/// The answer a step expects.
pub fn expected(step: &Step) -> Answer {
    match (&step.expect, &step.expect_error) {
        (Some(expect), None) => Answer::Decision(expect.clone()),
        (None, Some(code)) => Answer::Error(code.clone()),
        (None, None) => step.expect_changed.map_or(Answer::Done, Answer::Changed),
        (Some(_), Some(_)) => panic!("a step expects either a decision or an error, not both"),
    }
}

/// Runs every scenario of every file against `store`; returns one line per disagreement.
pub async fn check_all(store: &Store, files: &[(String, VectorFile)]) -> (usize, Vec<String>) {
    check_all_via(store, files, Via::Async).await
}

/// Runs every vector against `store` through `via` and panics with every disagreement, if any.
pub async fn assert_store_matches(store: &Store, via: Via) {
    let (steps, failures) = check_all_via(store, &load_all(), via).await;
    assert!(steps > 500, "only {steps} steps loaded");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// [`check_all`] through the chosen entry point of the store.
pub async fn check_all_via(store: &Store, files: &[(String, VectorFile)], via: Via) -> (usize, Vec<String>) {
    let mut steps = 0;
    let mut failures = Vec::new();
    for (file_index, (name, file)) in files.iter().enumerate() {
        for (index, scenario) in file.scenarios.iter().enumerate() {
            let prefix = format!("vec{file_index}.{index}");
            for (step_index, step) in scenario.steps.iter().enumerate() {
                steps += 1;
                let got = run_step(store, &prefix, scenario, step, via).await;
                let want = expected(step);
                if got != want {
                    failures.push(format!(
                        "{name} / {} / step {step_index} ({} at {}): expected {want:?}, got {got:?}",
                        scenario.name, step.op, step.now_us
                    ));
                }
            }
        }
    }
    (steps, failures)
}
