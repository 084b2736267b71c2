//! What a call costs the server, counted in machine instructions: one redis-server runs under
//! valgrind's callgrind, each path is sent a fixed number of times, and the instructions the server ran
//! for them, divided by the calls, are the path's cost. The µs of `INFO commandstats` (server-cost)
//! move by a quarter from one run to the next on a shared VM; an instruction count repeats to within a
//! fraction of a percent, so the ratios the targets set against the minimal GCRA script and INCR +
//! PEXPIRE read the same from run to run. The counts include reading the request and writing the reply
//! (which commandstats leaves out), as they are for every path. Run alone:
//! `cargo run --release -p ratelock-bench -- server-instructions`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ratelock_testkit::RedisServer;

use crate::contract_floors;
use crate::lock_scripts;
use crate::lock_server_cost::{
    self, ACQUIRE_KEYSPACE, FENCE_COUNTER_NAME, FUNCTIONS_LABEL, FUNCTIONS_TARGET_RATIO, REDLOCK_LABEL,
};
use crate::redis_benchmark::{requests_per_second, BenchmarkRun};
use crate::report::{Row, Target, Unit};
use crate::server_cost::{
    self, FIXED_WINDOW_LABEL, FIXED_WINDOW_TARGET_RATIO, INCR_PEXPIRE_LABEL, LUA_FCALL_PREFIX,
    LUA_GCRA_LABEL, LUA_GCRA_NAME, LUA_GCRA_TARGET_RATIO, MINIMAL_GCRA_LABEL, MODULE_GCRA_NAME,
    SLIDING_WINDOW_LABEL, THREE_GCRA_LABEL, THREE_RULES_LABEL,
};

/// Calls counted per path, after `WARM_UP_CALLS` that are not.
const CALLS: u64 = 5_000;
const WARM_UP_CALLS: u64 = 2_000;
/// Users drawn from: every call is allowed (a few hits a user, far below 100/minute).
const KEYSPACE: u64 = 1_000;
/// Locks held before each release run, and the calls of the counted run (after `RELEASE_WARM_UP` in
/// a run of their own): about 5% of the counted draws meet a lock released earlier in the run, the same
/// share for every family.
const HELD_LOCKS: u64 = 20_000;
const RELEASE_CALLS: u64 = 2_000;
const RELEASE_WARM_UP: u64 = 500;
/// The lease of every lock a run takes or writes: ten minutes, so that none runs out under callgrind
/// before a family's run ends (the 30 s of the server-cost section were blamed once for a run that
/// released 1,903 of 2,500 held locks and one that kept 5,001 of 7,000 acquires; both are what a
/// counted run that draws the warm-up's keys again leaves: see `CountedServer::per_call`). The work of
/// a call does not depend on the lease's length.
const LEASE_UNDER_CALLGRIND_MS: u64 = 600_000;

/// A redis-server under callgrind (the test kit's, on a free loopback port, stopped by its PID), and
/// the directory its dumps go to.
struct CountedServer {
    server: RedisServer,
    dumps: PathBuf,
}

impl CountedServer {
    /// Starts the server, loading `module` when given.
    fn start(module: Option<&Path>) -> Self {
        let dumps = std::env::temp_dir().join(format!("ratelock-bench-callgrind-{}", std::process::id()));
        fs::create_dir_all(&dumps).expect("a directory for callgrind's dumps");
        let out_file = format!("--callgrind-out-file={}", dumps.join("callgrind.out").display());
        let module = module.map(|so| so.display().to_string());
        let mut arguments = Vec::new();
        if let Some(so) = &module {
            arguments.extend(["--loadmodule", so.as_str()]);
        }
        let server = RedisServer::start_under(&["valgrind", "--tool=callgrind", &out_file], &arguments);
        CountedServer { server, dumps }
    }

    /// `callgrind_control <flag> <pid>`: `-z` zeroes the counts, `-d` dumps them.
    fn control(&self, flag: &str) {
        let output = Command::new("callgrind_control")
            .args([flag, &self.pid().to_string()])
            .output()
            .expect("callgrind_control (valgrind) runs");
        assert!(
            output.status.success(),
            "callgrind_control {flag} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// The instructions run since the last zeroing: dumps them, reads the dump, removes it.
    fn instructions_since_zero(&self) -> u64 {
        for old in dump_files(&self.dumps) {
            let _ = fs::remove_file(old);
        }
        self.control("-d");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(total) = dump_files(&self.dumps).iter().find_map(|file| dump_total(file)) {
                return total;
            }
            assert!(Instant::now() < deadline, "no callgrind dump appeared");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Instructions per call of `command` (`__rand_int__` drawn from `keyspace`), counted over
    /// `calls` calls after `warm_up` calls that are not. `prepare` sets the server's keys before each
    /// of the two runs. redis-benchmark seeds its draws with the second XOR its process id, and the
    /// two runs, a few seconds and a few processes apart, sometimes get the same seed: the counted run
    /// then draws the warm-up's keys again, and a lock family's counted releases met locks the warm-up
    /// had released (1,903 and 1,907 of 2,500 released in two runs, where distinct seeds give about
    /// 2,351, and one family failed the bench).
    fn per_call(
        &self,
        command: &[String],
        keyspace: u64,
        (warm_up, calls): (u64, u64),
        prepare: &mut dyn FnMut(),
    ) -> f64 {
        let run = |requests| BenchmarkRun {
            requests,
            clients: 10,
            pipeline: 10,
            keyspace: Some(keyspace),
        };
        let port = self.server.port();
        prepare();
        requests_per_second(port, command, &run(warm_up)).expect("the warm-up run");
        prepare();
        self.control("-z");
        requests_per_second(port, command, &run(calls)).expect("the counted run");
        self.instructions_since_zero() as f64 / calls as f64
    }
}

impl CountedServer {
    fn pid(&self) -> u32 {
        self.server.pid().expect("the counted server runs")
    }
}

impl Drop for CountedServer {
    fn drop(&mut self) {
        self.server.stop();
        let _ = fs::remove_dir_all(&self.dumps);
    }
}

fn dump_files(directory: &Path) -> Vec<PathBuf> {
    fs::read_dir(directory)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .collect()
        })
        .unwrap_or_default()
}

/// A complete dump's instruction total (its `totals:` line, written last); `None` while being written.
fn dump_total(file: &Path) -> Option<u64> {
    let text = fs::read_to_string(file).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("totals:"))
        .and_then(|total| total.trim().parse().ok())
}

/// Which paths are counted, and each one's yardstick: the minimal GCRA script, (for a fixed window
/// and its floor) INCR + PEXPIRE, or (for several rules in one FCALL) the one GCRA rule's FCALL; and the
/// target the issue sets on the ratio, where it sets one.
fn counted(name: &str) -> Option<(String, Target)> {
    let fcall = |label: &str| format!("{LUA_FCALL_PREFIX}{label}");
    let floor = |label: &str| format!("{}{label}", contract_floors::PREFIX);
    if name == fcall(LUA_GCRA_LABEL) {
        return Some((
            MINIMAL_GCRA_LABEL.into(),
            Target::RatioAtMost(LUA_GCRA_TARGET_RATIO),
        ));
    }
    if name == fcall(FIXED_WINDOW_LABEL) {
        return Some((
            INCR_PEXPIRE_LABEL.into(),
            Target::RatioAtMost(FIXED_WINDOW_TARGET_RATIO),
        ));
    }
    if name == fcall(THREE_RULES_LABEL) || name == fcall(THREE_GCRA_LABEL) {
        return Some((fcall(LUA_GCRA_LABEL), Target::None));
    }
    let lightest = |label: &str| format!("{}{label}", contract_floors::LIGHTEST_PREFIX);
    if [LUA_GCRA_NAME, MODULE_GCRA_NAME, MINIMAL_GCRA_LABEL].contains(&name)
        || name == floor(contract_floors::GCRA_READS)
        || name == lightest(contract_floors::GCRA_LIGHTEST)
        || name == fcall(SLIDING_WINDOW_LABEL)
    {
        return Some((MINIMAL_GCRA_LABEL.into(), Target::None));
    }
    if name == INCR_PEXPIRE_LABEL
        || name == floor(contract_floors::COUNTER_READS)
        || name == lightest(contract_floors::WINDOW_LIGHTEST)
    {
        return Some((INCR_PEXPIRE_LABEL.into(), Target::None));
    }
    None
}

pub fn rows(notes: &mut Vec<String>) -> Vec<Row> {
    let module = server_cost::module_path();
    let server = CountedServer::start(module.as_deref());
    let mut connection = server.server.connection();
    let mut counts: Vec<(String, f64)> = Vec::new();
    for path in server_cost::paths(&mut connection, module.is_some(), false) {
        if counted(&path.name).is_some() {
            // The counted run finds the warm-up's keys (every call allowed either way).
            flush(&mut connection);
            let per_call = server.per_call(&path.command, KEYSPACE, (WARM_UP_CALLS, CALLS), &mut || {});
            counts.push((path.name, per_call));
        }
    }
    let pairs = lock_pairs(&server, &mut connection, module.is_some());
    let count_of = |wanted: &str| {
        counts
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, count)| *count)
    };
    let mut rows: Vec<Row> = counts
        .iter()
        .filter_map(|(name, count)| {
            let (yardstick, target) = counted(name)?;
            Some(Row {
                name: format!("server instructions per call (callgrind): {name}"),
                unit: Unit::Instructions,
                measured: Some(*count),
                baseline: count_of(&yardstick),
                target,
            })
        })
        .collect();
    // The one-rule call against the least its contract can cost (the floor's call shape and reads).
    rows.push(Row {
        name: format!(
            "server instructions per call (callgrind): {LUA_FCALL_PREFIX}{LUA_GCRA_LABEL} vs its contract's floor"
        ),
        unit: Unit::Instructions,
        measured: count_of(&format!("{LUA_FCALL_PREFIX}{LUA_GCRA_LABEL}")),
        baseline: count_of(&format!("{}{}", contract_floors::PREFIX, contract_floors::GCRA_READS)),
        target: Target::None,
    });
    let redlock_pair = pairs
        .iter()
        .find(|(label, ..)| *label == REDLOCK_LABEL)
        .map(|(_, a, r)| a + r);
    for (label, acquire, release) in &pairs {
        rows.push(Row {
            name: format!("server instructions per lock pair (callgrind): {label}"),
            unit: Unit::Instructions,
            measured: Some(acquire + release),
            baseline: redlock_pair,
            target: if *label == FUNCTIONS_LABEL {
                Target::RatioAtMost(FUNCTIONS_TARGET_RATIO)
            } else {
                Target::None
            },
        });
        notes.push(format!(
            "server instructions, lock pair, {label}: acquire {acquire:.0} per call (free locks), release {release:.0} per call (held locks)"
        ));
    }
    notes.push(format!(
        "server instructions: one redis-server under valgrind --tool=callgrind{}; per path: FLUSHALL, \
         {WARM_UP_CALLS} calls not counted, then {CALLS} counted (redis-benchmark -c 10 -P 10 -r {KEYSPACE}, \
         every call allowed), the instructions the whole server ran for them (request parsing and \
         reply writing included) divided by {CALLS}; the same for each path, so the ratios compare like \
         with like and repeat from run to run; a lock pair is an acquire on free locks ({CALLS} counted, \
         -r {ACQUIRE_KEYSPACE}, one fencing counter) plus a release on {HELD_LOCKS} held locks written first \
         as each family's acquire leaves them ({RELEASE_CALLS} counted after {RELEASE_WARM_UP}); every \
         lease {LEASE_UNDER_CALLGRIND_MS} ms",
        if module.is_some() {
            ", loading ratelock's module"
        } else {
            ""
        }
    ));
    rows
}

fn key_count(connection: &mut redis::Connection) -> u64 {
    redis::cmd("DBSIZE").query(connection).expect("DBSIZE")
}

fn flush(connection: &mut redis::Connection) {
    let _: () = redis::cmd("FLUSHALL").query(connection).expect("FLUSHALL");
}

/// Each lock family's instructions per acquire (of a free lock) and per release (of a held one):
/// ratelock's pair by the module (when loaded), FCALL and EVALSHA, and redlock's.
fn lock_pairs(
    server: &CountedServer,
    connection: &mut redis::Connection,
    with_module: bool,
) -> Vec<(&'static str, f64, f64)> {
    let [_, fence_counter, _] = lock_scripts::keys_of(FENCE_COUNTER_NAME);
    let mut pairs = Vec::new();
    for family in lock_server_cost::families(connection, with_module, LEASE_UNDER_CALLGRIND_MS) {
        let acquire = server.per_call(
            &family.acquire,
            ACQUIRE_KEYSPACE,
            (WARM_UP_CALLS, CALLS),
            &mut || {
                flush(connection);
                let _: () = redis::cmd("SET")
                    .arg(&fence_counter)
                    .arg(1)
                    .query(connection)
                    .expect("SET of the fencing counter");
            },
        );
        // Nearly every counted acquire took a free lock (a draw repeats one in 100,000 times or so);
        // the fencing counter is the one other key.
        let taken = key_count(connection).saturating_sub(1);
        assert!(
            taken as f64 >= 0.99 * CALLS as f64,
            "{}: {taken} of {CALLS} locks taken",
            family.label
        );
        let release = server.per_call(
            &family.release,
            HELD_LOCKS,
            (RELEASE_WARM_UP, RELEASE_CALLS),
            &mut || {
                flush(connection);
                lock_server_cost::write_held_locks(
                    connection,
                    family.held,
                    0,
                    HELD_LOCKS - 1,
                    LEASE_UNDER_CALLGRIND_MS,
                );
            },
        );
        // Most counted releases gave back a held lock (the others drew one released earlier in the
        // run: about 1,903 of 2,000 release).
        let released = HELD_LOCKS - key_count(connection);
        assert!(
            released as f64 >= 0.9 * RELEASE_CALLS as f64,
            "{}: {released} of {RELEASE_CALLS} released",
            family.label
        );
        pairs.push((family.label, acquire, release));
    }
    flush(connection);
    pairs
}
