//! Scenarios run by Rust clients through a fault proxy while faults play (a seeded plan on the proxy,
//! or faults of the server itself), each recording a history for the checker: limiter hits on keys of
//! every algorithm, and lock holders writing to a fenced resource. Every loop is bounded by the faults'
//! length and a count.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratelock::{
    DistributedLock, Error, FairLock, LeaseGuard, Limiter, LimiterOptions, LockGuard, LockOptions,
    PermitGuard, ReadWriteLock, Rule, Rules, Semaphore, Store, StoreOptions,
};

use crate::history::{History, Op, Outcome};

/// One key per algorithm, each with a rule of 20/second: what the limiter scenarios hit.
pub const RULES: [(&str, &str); 5] = [
    ("gcra", "20/second"),
    ("bucket", "20/second using token_bucket"),
    ("fixed", "20/second using fixed_window"),
    ("sliding", "20/second using sliding_window"),
    ("log", "20/second using sliding_log"),
];

/// What a call's error says about whether it happened.
pub fn outcome_of(err: &Error) -> Outcome {
    if err.is_protocol() {
        Outcome::Protocol
    } else if err.is_store_failure() {
        Outcome::Ambiguous
    } else {
        Outcome::Fail
    }
}

/// What plays while the clients run: `length` (the clients stop a little after it) and `play`, run on
/// the calling thread (e.g. `FaultPlan::play`, or a server stopped and started again).
pub struct Faults<F: FnOnce()> {
    /// How long the faults take.
    pub length: Duration,
    /// Plays them.
    pub play: F,
}

/// Limiter clients: `clients_per_door` tasks on each of `urls` (a fault proxy's doors, or a store's
/// own URL for faults of the store itself), each hitting every key of
/// `rules` in turn until the faults end (at most `max_hits` each). Returns the history and the rule of
/// each key, for `check_limits`.
pub fn limit_clients(
    urls: &[String],
    faults: Faults<impl FnOnce()>,
    rules: &[(&str, &str)],
    clients_per_door: usize,
    max_hits: usize,
    timeout: Duration,
) -> (History, BTreeMap<String, Rule>) {
    let history = History::new();
    let rules = limit_clients_into(&history, urls, faults, rules, clients_per_door, max_hits, timeout);
    (history, rules)
}

/// [`limit_clients`] recording into `history` (which the faults may record into as well).
pub fn limit_clients_into(
    history: &History,
    urls: &[String],
    faults: Faults<impl FnOnce()>,
    rules: &[(&str, &str)],
    clients_per_door: usize,
    max_hits: usize,
    timeout: Duration,
) -> BTreeMap<String, Rule> {
    let parsed: Vec<(String, Rules)> = rules
        .iter()
        .map(|(key, text)| (key.to_string(), text.parse().expect("a valid rule")))
        .collect();
    let by_key = parsed
        .iter()
        .map(|(key, rules)| (key.clone(), rules[0].clone()))
        .collect();
    let stop_at = history.now_ns() + faults.length.as_nanos() as u64 + 200_000_000;
    run_clients(urls.len(), clients_per_door, faults, |door, n| {
        let options = LimiterOptions::default().with_store(StoreOptions::default().with_timeout(timeout));
        let store = Store::new(&urls[door], &options.store).expect("a store for the door");
        let limiter = Limiter::with_store(store, options).expect("a limiter");
        let (history, parsed, client) = (history.clone(), parsed.clone(), format!("rust-{door}-{n}"));
        async move {
            for round in 0..max_hits {
                if history.now_ns() > stop_at {
                    break;
                }
                let (key, rules) = &parsed[round % parsed.len()];
                let invoke_ns = history.now_ns();
                let answer = limiter.hit(key, rules, 1).await;
                let complete_ns = history.now_ns();
                let (outcome, allowed) = match &answer {
                    Ok(decision) => (Outcome::Ok, Some(decision.allowed)),
                    Err(err) => (outcome_of(err), None),
                };
                history.push(Op {
                    client: client.clone(),
                    op: "hit".into(),
                    key: key.clone(),
                    invoke_ns,
                    complete_ns,
                    outcome,
                    allowed,
                    token: None,
                    timeout_ns: Some(timeout.as_nanos() as u64),
                });
                // Paced, so the clients' hits spread over the whole plan.
                let pause = if answer.is_err() { 5 } else { 2 };
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
        }
    });
    by_key
}

/// A resource that checks fencing tokens: it takes a write only with a token at least the highest it
/// took (what the protected system must do).
#[derive(Default)]
pub struct FencedResource {
    highest: Mutex<u64>,
}

impl FencedResource {
    /// Offers a write with `token`; records it in `history` under the resource's own lock, so the
    /// history's order of writes is the order the resource saw them.
    pub fn write(&self, history: &History, client: &str, key: &str, token: u64) -> bool {
        let mut highest = self.highest.lock().expect("resource lock");
        let invoke_ns = history.now_ns();
        let taken = token >= *highest;
        if taken {
            *highest = token;
        }
        history.push(Op {
            client: client.into(),
            op: "write".into(),
            key: key.into(),
            invoke_ns,
            complete_ns: history.now_ns(),
            outcome: Outcome::Ok,
            allowed: Some(taken),
            token: Some(token),
            timeout_ns: None,
        });
        taken
    }
}

/// Which lock kind the clients of [`hold_clients`] take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// A `DistributedLock`.
    Lock,
    /// A `Semaphore` of this many permits.
    Semaphore(u64),
    /// A `FairLock`.
    Fair,
    /// A `ReadWriteLock`: each client takes the write hold every third round, a read hold otherwise.
    ReadWrite,
}

/// A client's handle on the lock of its kind.
enum Handle {
    Lock(DistributedLock),
    Semaphore(Semaphore),
    Fair(FairLock),
    ReadWrite(ReadWriteLock),
}

/// One hold, whichever kind it is.
enum Holding {
    Lock(LockGuard),
    Permit(PermitGuard),
    Lease(LeaseGuard),
}

impl Handle {
    fn open(kind: LockKind, store: &Store, name: &str, options: LockOptions) -> ratelock::Result<Handle> {
        Ok(match kind {
            LockKind::Lock => Handle::Lock(DistributedLock::new(store, name, options)?),
            LockKind::Semaphore(permits) => Handle::Semaphore(Semaphore::new(store, name, permits, options)?),
            LockKind::Fair => Handle::Fair(FairLock::new(store, name, options)?),
            LockKind::ReadWrite => Handle::ReadWrite(ReadWriteLock::new(store, name, options)?),
        })
    }

    /// Waits up to `wait` for a hold; the history's name for the acquire and the hold.
    async fn take(&self, round: usize, wait: Duration) -> (&'static str, ratelock::Result<Holding>) {
        match self {
            Handle::Lock(lock) => ("acquire", lock.acquire(wait).await.map(Holding::Lock)),
            Handle::Semaphore(pool) => ("acquire_permit", pool.acquire(wait).await.map(Holding::Permit)),
            Handle::Fair(lock) => ("acquire", lock.acquire(wait).await.map(Holding::Lease)),
            Handle::ReadWrite(lock) if round.is_multiple_of(3) => (
                "acquire_write",
                lock.acquire_write(wait).await.map(Holding::Lease),
            ),
            Handle::ReadWrite(lock) => ("acquire_read", lock.acquire_read(wait).await.map(Holding::Lease)),
        }
    }
}

impl Holding {
    fn token(&self) -> Option<u64> {
        match self {
            Holding::Lock(guard) => Some(guard.fencing_token()),
            Holding::Permit(_) => None,
            Holding::Lease(guard) => Some(guard.fencing_token()),
        }
    }

    async fn release(self) -> ratelock::Result<ratelock::Released> {
        match self {
            Holding::Lock(guard) => guard.release().await,
            Holding::Permit(guard) => guard.release().await,
            Holding::Lease(guard) => guard.release().await,
        }
    }
}

/// Lock clients: [`hold_clients`] on a `DistributedLock`.
#[allow(clippy::too_many_arguments)]
pub fn lock_clients(
    urls: &[String],
    faults: Faults<impl FnOnce()>,
    name: &str,
    clients_per_door: usize,
    max_rounds: usize,
    ttl: Duration,
    hold: Duration,
    timeout: Duration,
) -> History {
    hold_clients(
        urls,
        faults,
        LockKind::Lock,
        name,
        clients_per_door,
        max_rounds,
        ttl,
        hold,
        timeout,
    )
}

/// Clients of any lock kind: `clients_per_door` tasks on each of `urls`, each taking `name` (lease
/// `ttl`, waiting up to twice that), writing to one shared fenced resource when the hold is exclusive
/// and has a token, holding `hold`, and releasing, until the faults end (at most `max_rounds` each).
#[allow(clippy::too_many_arguments)]
pub fn hold_clients(
    urls: &[String],
    faults: Faults<impl FnOnce()>,
    kind: LockKind,
    name: &str,
    clients_per_door: usize,
    max_rounds: usize,
    ttl: Duration,
    hold: Duration,
    timeout: Duration,
) -> History {
    let history = History::new();
    let resource = Arc::new(FencedResource::default());
    let stop_at = history.now_ns() + faults.length.as_nanos() as u64 + 200_000_000;
    let wait = ttl * 2;
    run_clients(urls.len(), clients_per_door, faults, |door, n| {
        let store = Store::new(&urls[door], &StoreOptions::default().with_timeout(timeout))
            .expect("a store for the door");
        let options = LockOptions::default().with_ttl(ttl);
        let handle = Handle::open(kind, &store, name, options).expect("a lock handle");
        let (history, resource) = (history.clone(), resource.clone());
        let (client, name) = (format!("rust-{door}-{n}"), name.to_owned());
        async move {
            let record = |op: &str, invoke_ns: u64, outcome: Outcome, token: Option<u64>, limit: Duration| {
                history.push(Op {
                    client: client.clone(),
                    op: op.into(),
                    key: name.clone(),
                    invoke_ns,
                    complete_ns: history.now_ns(),
                    outcome,
                    allowed: None,
                    token,
                    timeout_ns: Some(limit.as_nanos() as u64),
                })
            };
            for round in 0..max_rounds {
                if history.now_ns() > stop_at {
                    break;
                }
                let invoke_ns = history.now_ns();
                let (op, taken) = handle.take(round, wait).await;
                let holding = match taken {
                    Ok(holding) => holding,
                    Err(err) => {
                        let outcome = if err.is_wait_timeout() {
                            Outcome::Fail
                        } else {
                            outcome_of(&err)
                        };
                        record(op, invoke_ns, outcome, None, wait + timeout);
                        continue;
                    }
                };
                let token = holding.token();
                record(op, invoke_ns, Outcome::Ok, token, wait + timeout);
                if let (Some(token), false) = (token, op == "acquire_read") {
                    resource.write(&history, &client, &name, token);
                }
                tokio::time::sleep(hold).await;
                let invoke_ns = history.now_ns();
                let outcome = match holding.release().await {
                    Ok(_) => Outcome::Ok,
                    Err(err) => outcome_of(&err),
                };
                record("release", invoke_ns, outcome, token, timeout);
            }
        }
    });
    history
}

/// Runs one task per client (`clients_per_door` on each of `doors` doors, made by `client(door, n)`) on
/// a runtime of their own while `faults` play on this thread, and waits for every one of them.
fn run_clients<Fut>(
    doors: usize,
    clients_per_door: usize,
    faults: Faults<impl FnOnce()>,
    mut client: impl FnMut(usize, usize) -> Fut,
) where
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime for the clients");
    let tasks: Vec<_> = (0..doors)
        .flat_map(|door| (0..clients_per_door).map(move |n| (door, n)))
        .map(|(door, n)| runtime.spawn(client(door, n)))
        .collect();
    (faults.play)();
    runtime.block_on(async {
        for task in tasks {
            task.await.expect("a client");
        }
    });
}
