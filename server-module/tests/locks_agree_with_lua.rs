//! The lock and semaphore commands agree with their scripts (`core/lua/lock_*.lua`,
//! `semaphore_*.lua`), call for call, on a real redis-server.
//!
//! Build the module first, with the same target dir (these tests load the cdylib beside them):
//!     cargo build --manifest-path server-module/Cargo.toml
//!     cargo test  --manifest-path server-module/Cargo.toml
//! Each script runs as the store runs it, minus the call-tag envelope (prelude.lua in front, loaded once,
//! EVALSHA) on one set of keys, and the module command runs on a mirror of them. Replies must be
//! identical (errors as text), except the µs until a lock's lease ends, which both read off the key's
//! PTTL a moment apart; every touched key's type and contents must be identical and its PTTL within a
//! few ms.
//!
//! A lock's lease lives as long as its key, by wall time; a semaphore's permits end at explicit `now`
//! values that run ahead of wall time. So that the two copies never disagree merely because one key
//! expired a moment before its mirror, leases are either long (they outlive the sequence) or short and
//! followed by a pause that ends them on both sides; permits end by jumps of `now`.

use std::collections::{BTreeMap, HashMap};
use std::thread::sleep;
use std::time::{Duration, Instant};

use redis::{Connection, Value};

mod common;

use common::{
    assert_replica_ran_absolute_expiry, connect, key_snapshot, key_snapshots, lua_script, run, slack_since,
    start_replica, start_server, tagged, wall_us, Rng, PTTL_SLACK_MS,
};

/// Each script and the module command standing in for it.
const COMMANDS: [(&str, &str); 9] = [
    ("lock_acquire", "RATELOCK.LOCK_ACQUIRE"),
    ("lock_release", "RATELOCK.LOCK_RELEASE"),
    ("lock_extend", "RATELOCK.LOCK_EXTEND"),
    ("lock_state", "RATELOCK.LOCK_STATE"),
    ("lock_force_release", "RATELOCK.LOCK_FORCE_RELEASE"),
    ("semaphore_acquire", "RATELOCK.SEMAPHORE_ACQUIRE"),
    ("semaphore_release", "RATELOCK.SEMAPHORE_RELEASE"),
    ("semaphore_extend", "RATELOCK.SEMAPHORE_EXTEND"),
    ("semaphore_state", "RATELOCK.SEMAPHORE_STATE"),
];

/// Seeded operation sequences, each on keys of its own, and the calls in each.
const SEQUENCES: u64 = 120;
const CALLS_PER_SEQUENCE: usize = 30;
/// The longest "short" lease (µs), and the pause after one that ends it on both copies.
const SHORT_LEASE_US: u64 = 20_000;
const LAPSE: Duration = Duration::from_millis(30);
/// Owner tokens as the clients make them (hex), and the permit ids.
const OWNERS: [&str; 3] = [
    "9f86d081884c7d659a2feaa0c55ad015",
    "3e23e8160039594a33894f6564e1b134",
    "2c26b46b68ffc68ff99b453c1d304134",
];

/// When a call's lease ends by wall time during the sequence, and so when to look at its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lapse {
    /// Long leases only: look right after the call.
    Never,
    /// A lease of a few ms: look right after the call, then again once it has ended.
    AfterLooking,
    /// A lease under a few ms: look only once it has ended (one copy may lose it a moment first).
    BeforeLooking,
}

/// One generated call: the script, its KEYS (without the side's prefix) and ARGV.
#[derive(Debug)]
struct Call {
    script: &'static str,
    keys: Vec<String>,
    argv: Vec<String>,
    lapse: Lapse,
}

/// A redis-server with every script loaded, sending each call to both copies.
struct Mirror {
    con: Connection,
    shas: HashMap<&'static str, String>,
}

impl Mirror {
    fn new(con: Connection) -> Mirror {
        let mut mirror = Mirror {
            con,
            shas: HashMap::new(),
        };
        for (script, _) in COMMANDS {
            let sha: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(lua_script(script))
                .query(&mut mirror.con)
                .unwrap();
            mirror.shas.insert(script, sha);
        }
        mirror
    }

    /// The script's reply on the `lua:` keys and the module command's on the `mod:` keys, both run in
    /// one MULTI, so that a lease of a few ms cannot end on one copy before the other is written.
    fn both(&mut self, call: &Call) -> (Result<Value, String>, Result<Value, String>) {
        let side =
            |prefix: &str| -> Vec<String> { call.keys.iter().map(|k| format!("{prefix}:{k}")).collect() };
        let mut pipe = redis::pipe();
        pipe.atomic()
            .ignore_errors()
            .cmd("EVALSHA")
            .arg(&self.shas[call.script])
            .arg(call.keys.len())
            .arg(side("lua"))
            .arg(&call.argv)
            .cmd(command_of(call.script))
            .arg(call.keys.len())
            .arg(side("mod"))
            .arg(&call.argv);
        let replies: Vec<redis::RedisResult<Value>> = pipe.query(&mut self.con).unwrap();
        let mut replies = replies.into_iter().map(|reply| {
            reply.map_err(|e| format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or("")))
        });
        (replies.next().unwrap(), replies.next().unwrap())
    }

    /// Asserts that every key of `call` is stored alike on both copies.
    fn assert_keys_agree(&mut self, call: &Call, context: &dyn Fn() -> String) {
        for key in &call.keys {
            let pair = key_snapshots(&mut self.con, &[&format!("lua:{key}"), &format!("mod:{key}")]);
            let (lua, module) = (&pair[0], &pair[1]);
            assert!(
                lua.agrees_with(module),
                "{key} is stored differently: script {lua:?}, module {module:?} at {}",
                context()
            );
        }
    }
}

fn command_of(script: &str) -> &'static str {
    COMMANDS.iter().find(|(s, _)| *s == script).unwrap().1
}

/// The replies must be equal, except the µs until a lock's lease ends (a busy acquire's second
/// figure, a held lock's state's second figure): both come from the key's PTTL, read a moment apart.
fn assert_replies_agree(
    script: &str,
    lua: &Result<Value, String>,
    module: &Result<Value, String>,
    context: &dyn Fn() -> String,
) {
    let from_pttl = match (script, lua) {
        ("lock_acquire", Ok(Value::Array(items))) | ("lock_state", Ok(Value::Array(items))) => {
            let first = if script == "lock_acquire" { 0 } else { 1 };
            items.first() == Some(&Value::Int(first))
        }
        _ => false,
    };
    if !from_pttl {
        assert_eq!(lua, module, "replies differ at {}", context());
        return;
    }
    let (Ok(Value::Array(a)), Ok(Value::Array(b))) = (lua, module) else {
        panic!("replies differ at {}: {lua:?} vs {module:?}", context())
    };
    assert_eq!(
        a.len(),
        b.len(),
        "replies differ at {}: {a:?} vs {b:?}",
        context()
    );
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        match (i, x, y) {
            (1, Value::Int(x), Value::Int(y)) => assert!(
                (x - y).abs() <= PTTL_SLACK_MS * 1000 && x % 1000 == 0 && y % 1000 == 0,
                "µs left differ at {}: {a:?} vs {b:?}",
                context()
            ),
            _ => assert_eq!(x, y, "replies differ at {}: {a:?} vs {b:?}", context()),
        }
    }
}

/// A short name for a reply, to count which outcomes the generated calls reached.
fn outcome(script: &str, reply: &Result<Value, String>) -> String {
    let label = match reply {
        Err(_) => "error".to_string(),
        Ok(Value::Int(n)) => n.to_string(),
        Ok(Value::Array(items)) => match (script, &items[..]) {
            ("lock_acquire", [Value::Int(1), _, Value::Int(holds)]) if *holds > 1 => "re-entered".into(),
            ("semaphore_state", [Value::Int(n), ..]) if *n > 0 => "in use".into(),
            (_, [Value::Int(n), ..]) => n.to_string(),
            _ => format!("{items:?}"),
        },
        Ok(other) => format!("{other:?}"),
    };
    format!("{script} {label}")
}

/// A lease length (µs) and when it ends: mostly long, sometimes a few ms, sometimes under 1 ms.
fn lease_length(rng: &mut Rng) -> (u64, Lapse) {
    match rng.below(20) {
        0..=14 => (60_000_000 + rng.below(60_000_000), Lapse::Never),
        15..=17 => (8_000 + rng.below(SHORT_LEASE_US - 8_000), Lapse::AfterLooking),
        _ => (1 + rng.below(999), Lapse::BeforeLooking),
    }
}

/// One sequence's state of play: the grants the script made per lock (owner, fence), and how far
/// `now` runs ahead of the wall clock.
struct Play {
    sequence: u64,
    grants: Vec<Vec<(usize, u64)>>,
    drift: u64,
}

impl Play {
    /// Keeps the grant a granted `lock_acquire` answered (owner, fence), for later releases to name.
    fn remember_grant(&mut self, call: &Call, reply: &Result<Value, String>) {
        if let (Ok(Value::Array(items)), "lock_acquire") = (reply, call.script) {
            if let [Value::Int(1), Value::Int(fence), _] = items[..] {
                let owner = OWNERS.iter().position(|o| *o == call.argv[0]).unwrap();
                let lock = call.keys[0].split("lock").nth(1).unwrap()[..1]
                    .parse::<usize>()
                    .unwrap();
                self.grants[lock].push((owner, fence as u64));
            }
        }
    }

    fn now(&mut self, rng: &mut Rng) -> u64 {
        self.drift += match rng.below(20) {
            0..=9 => rng.below(2_000),
            10..=15 => rng.below(200_000),
            16 => rng.below(700_000_000), // past many permits' ends: they are reclaimed
            _ => 0,
        };
        wall_us() + self.drift
    }

    /// The fencing token a release or extend names: mostly the owner's latest grant, sometimes an
    /// older (stale) one, another owner's, or no number at all.
    fn fence(&self, rng: &mut Rng, lock: usize, owner: usize) -> String {
        let grants = &self.grants[lock];
        let own = grants.iter().rev().find(|(o, _)| *o == owner);
        match (rng.below(10), own) {
            (0..=5, Some((_, fence))) => fence.to_string(),
            (6..=7, _) if !grants.is_empty() => grants[rng.below(grants.len() as u64) as usize].1.to_string(),
            (8, _) => ["", "x", "12.5"][rng.below(3) as usize].to_string(),
            _ => (wall_us() + self.drift).to_string(),
        }
    }

    fn lock_call(&mut self, rng: &mut Rng) -> Call {
        let lock = rng.below(3) as usize;
        let base = format!("{{s{}:lock{lock}}}", self.sequence);
        let (lease, counter) = (format!("{base}:lock"), format!("{base}:fence"));
        let channel = format!("{base}:released");
        let owner = rng.below(OWNERS.len() as u64) as usize;
        let mut lapse = Lapse::Never;
        let (script, keys, argv): (&'static str, Vec<String>, Vec<String>) = match rng.below(100) {
            0..=39 => {
                let (ttl, ends) = lease_length(rng);
                lapse = ends;
                let reentrant = if rng.below(3) == 0 { "0" } else { "1" };
                let mut argv = vec![
                    OWNERS[owner].into(),
                    ttl.to_string(),
                    reentrant.into(),
                    self.now(rng).to_string(),
                ];
                if rng.below(12) == 0 {
                    // Bad arguments: the script's own error.
                    match rng.below(5) {
                        0 => argv[0] = String::new(),
                        1 => argv[1] = "0".into(),
                        2 => argv[1] = "abc".into(),
                        3 => argv[1] = "-7".into(),
                        _ => argv.truncate(1),
                    }
                }
                ("lock_acquire", vec![lease, counter], argv)
            }
            40..=59 => {
                let argv = vec![OWNERS[owner].into(), channel, self.fence(rng, lock, owner)];
                ("lock_release", vec![lease], argv)
            }
            60..=74 => {
                let ttl = match rng.below(10) {
                    0 => {
                        lapse = Lapse::BeforeLooking;
                        ["0", "-1500"][rng.below(2) as usize].to_string()
                    }
                    _ => {
                        let (ttl, ends) = lease_length(rng);
                        lapse = ends;
                        ttl.to_string()
                    }
                };
                let argv = vec![OWNERS[owner].into(), ttl, self.fence(rng, lock, owner)];
                ("lock_extend", vec![lease], argv)
            }
            75..=89 => ("lock_state", vec![lease, counter], vec![]),
            90..=94 => ("lock_force_release", vec![lease], vec![channel]),
            // No ARGV at all: the script's nil owner names no grant.
            _ => (
                ["lock_release", "lock_extend"][rng.below(2) as usize],
                vec![lease],
                vec![],
            ),
        };
        Call {
            script,
            keys,
            argv,
            lapse,
        }
    }

    fn semaphore_call(&mut self, rng: &mut Rng) -> Call {
        let semaphore = rng.below(3);
        let key = format!("{{s{}:sem{semaphore}}}:permits", self.sequence);
        let channel = format!("{{s{}:sem{semaphore}}}:released", self.sequence);
        let id = format!("{}:{}", OWNERS[rng.below(3) as usize], rng.below(2));
        let limit = if rng.below(10) == 0 {
            1 + rng.below(4)
        } else {
            1 + semaphore
        };
        let now = self.now(rng).to_string();
        // Permits are long (they end by jumps of `now`) or a few ms (then the key may end by wall time).
        let mut lapse = Lapse::Never;
        let mut length = |rng: &mut Rng| match rng.below(12) {
            0 => {
                let ttl = 1 + rng.below(SHORT_LEASE_US);
                lapse = if ttl < 5_000 {
                    Lapse::BeforeLooking
                } else {
                    Lapse::AfterLooking
                };
                ttl
            }
            _ => 60_000_000 + rng.below(540_000_000),
        };
        let (script, argv): (&'static str, Vec<String>) = match rng.below(100) {
            0..=44 => {
                let mut argv = vec![id, limit.to_string(), length(rng).to_string(), now];
                if rng.below(15) == 0 {
                    match rng.below(4) {
                        0 => argv[0] = String::new(),
                        1 => argv[1] = "0".into(),
                        2 => argv[2] = "0".into(),
                        _ => argv[1] = "x".into(),
                    }
                }
                ("semaphore_acquire", argv)
            }
            45..=64 => ("semaphore_release", vec![id, channel, now]),
            65..=79 => {
                let ttl = if rng.below(10) == 0 { 0 } else { length(rng) };
                ("semaphore_extend", vec![id, ttl.to_string(), now])
            }
            _ => ("semaphore_state", vec![now]),
        };
        Call {
            script,
            keys: vec![key],
            argv,
            lapse,
        }
    }
}

#[test]
fn locks_and_semaphores_agree_with_lua() {
    let server = start_server();
    let mut mirror = Mirror::new(connect(&server));
    let seed = std::env::var("RATELOCK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x10C_5EED_u64);
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for sequence in 0..SEQUENCES {
        let mut rng = Rng((seed ^ sequence.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
        let mut play = Play {
            sequence,
            grants: vec![Vec::new(); 3],
            drift: 0,
        };
        for step in 0..CALLS_PER_SEQUENCE {
            let call = if rng.below(5) < 3 {
                play.lock_call(&mut rng)
            } else {
                play.semaphore_call(&mut rng)
            };
            let (lua, module) = mirror.both(&call);
            let context = || format!("sequence {sequence} step {step} (seed {seed}): {call:?}");
            assert_replies_agree(call.script, &lua, &module, &context);
            play.remember_grant(&call, &lua);
            *outcomes.entry(outcome(call.script, &lua)).or_default() += 1;
            if call.lapse != Lapse::BeforeLooking {
                mirror.assert_keys_agree(&call, &context);
            }
            if call.lapse != Lapse::Never {
                sleep(LAPSE);
                mirror.assert_keys_agree(&call, &context);
            }
        }
    }
    eprintln!("{} calls: {outcomes:#?}", SEQUENCES as usize * CALLS_PER_SEQUENCE);
    let expected = [
        "lock_acquire 1",
        "lock_acquire re-entered",
        "lock_acquire 0",
        "lock_acquire error",
        "lock_release 1",
        "lock_release 2",
        "lock_release 0",
        "lock_release -1",
        "lock_extend 1",
        "lock_extend 0",
        "lock_extend -1",
        "lock_state 1",
        "lock_state 0",
        "lock_force_release 1",
        "lock_force_release 0",
        "semaphore_acquire 1",
        "semaphore_acquire 0",
        "semaphore_acquire error",
        "semaphore_release 1",
        "semaphore_release 0",
        "semaphore_extend 1",
        "semaphore_extend 0",
        "semaphore_state in use",
        "semaphore_state 0",
    ];
    for outcome in expected {
        assert!(
            outcomes.get(outcome).copied().unwrap_or(0) >= 3,
            "the mix never reached {outcome}"
        );
    }
}

/// With `now` empty each side reads the server's clock (the script TIME, the module the system
/// clock) a moment apart: the fences minted and the µs figures agree within the slack, the rest exactly.
#[test]
fn server_clock_calls_agree() {
    let server = start_server();
    let mut mirror = Mirror::new(connect(&server));
    let close = |a: &Result<Value, String>, b: &Result<Value, String>| -> bool {
        match (a, b) {
            (Ok(Value::Array(x)), Ok(Value::Array(y))) => {
                x.len() == y.len()
                    && x.iter().zip(y).all(|(x, y)| match (x, y) {
                        (Value::Int(x), Value::Int(y)) => (x - y).abs() <= PTTL_SLACK_MS * 1000,
                        _ => x == y,
                    })
            }
            _ => a == b,
        }
    };
    let calls = [
        (
            "lock_acquire",
            vec!["{c}:lock", "{c}:fence"],
            vec![OWNERS[0], "60000000", "1", ""],
        ),
        (
            "lock_acquire",
            vec!["{c}:lock", "{c}:fence"],
            vec![OWNERS[0], "60000000", "1", ""],
        ),
        ("lock_state", vec!["{c}:lock", "{c}:fence"], vec![]),
        (
            "semaphore_acquire",
            vec!["{c}:permits"],
            vec!["p1", "1", "60000000", ""],
        ),
        (
            "semaphore_acquire",
            vec!["{c}:permits"],
            vec!["p2", "1", "60000000", ""],
        ),
        ("semaphore_state", vec!["{c}:permits"], vec![""]),
        (
            "semaphore_extend",
            vec!["{c}:permits"],
            vec!["p1", "90000000", ""],
        ),
        (
            "semaphore_release",
            vec!["{c}:permits"],
            vec!["p1", "{c}:released", ""],
        ),
        ("lock_force_release", vec!["{c}:lock"], vec!["{c}:released"]),
    ];
    for (script, keys, argv) in calls {
        let call = Call {
            script,
            keys: keys.into_iter().map(String::from).collect(),
            argv: argv.into_iter().map(String::from).collect(),
            lapse: Lapse::Never,
        };
        let (lua, module) = mirror.both(&call);
        assert!(close(&lua, &module), "{script}: {lua:?} vs {module:?}");
        for key in &call.keys {
            // Both copies read in one MULTI, as both were written in one.
            let pair = key_snapshots(&mut mirror.con, &[&format!("lua:{key}"), &format!("mod:{key}")]);
            let (a, b) = (&pair[0], &pair[1]);
            assert_eq!(a.kind, b.kind, "{key}");
            assert!((a.pttl - b.pttl).abs() <= PTTL_SLACK_MS, "{key}: {a:?} vs {b:?}");
        }
    }
}

/// A call carrying the client's tag past the contract is answered with it (an array reply with the
/// tag appended); an error is never wrapped.
#[test]
fn a_tagged_call_is_answered_with_its_tag() {
    let server = start_server();
    let mut con = connect(&server);
    let now = wall_us();
    let answered = run(
        &mut con,
        redis::cmd("RATELOCK.LOCK_ACQUIRE")
            .arg(2)
            .arg("{t}:lock")
            .arg("{t}:fence")
            .arg(OWNERS[0])
            .arg(60_000_000)
            .arg(0)
            .arg(now)
            .arg("4242"),
    );
    let granted = Value::Array(vec![Value::Int(1), Value::Int(now as i64), Value::Int(1)]);
    assert_eq!(
        answered,
        Ok(Value::Array(vec![
            Value::Int(1),
            Value::Int(now as i64),
            Value::Int(1),
            Value::BulkString(b"4242".to_vec())
        ]))
    );
    assert_eq!(answered, Ok(tagged("4242", granted)));
    let state = run(
        &mut con,
        redis::cmd("RATELOCK.SEMAPHORE_STATE")
            .arg(1)
            .arg("{t}:permits")
            .arg(now)
            .arg("7"),
    );
    assert_eq!(
        state,
        Ok(Value::Array(vec![
            Value::Int(0),
            Value::Int(0),
            Value::BulkString(b"7".to_vec())
        ]))
    );
    let refused = run(
        &mut con,
        redis::cmd("RATELOCK.SEMAPHORE_ACQUIRE")
            .arg(1)
            .arg("{t}:permits")
            .arg("p")
            .arg(0)
            .arg(1000)
            .arg(now)
            .arg("8"),
    );
    assert_eq!(
        refused,
        Err("ERR ratelock: semaphore_acquire needs an id, N >= 1 and a lease >= 1 µs".into())
    );
}

/// A release (of a lock, by force, of a permit) publishes "released" on its channel, once per
/// release; a release that gives nothing back publishes nothing.
#[test]
fn a_release_publishes_released() {
    let server = start_server();
    let mut con = connect(&server);
    let mut listener = connect(&server);
    let mut pubsub = listener.as_pubsub();
    pubsub.subscribe("{p}:released").unwrap();
    pubsub.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let now = wall_us();
    let ok = |reply: Result<Value, String>| reply.unwrap();
    ok(run(
        &mut con,
        redis::cmd("RATELOCK.LOCK_ACQUIRE")
            .arg(2)
            .arg("{p}:lock")
            .arg("{p}:fence")
            .arg(OWNERS[0])
            .arg(60_000_000)
            .arg(0)
            .arg(now),
    ));
    let release = |owner: &str| {
        let mut cmd = redis::cmd("RATELOCK.LOCK_RELEASE");
        cmd.arg(1).arg("{p}:lock").arg(owner).arg("{p}:released").arg(now);
        cmd
    };
    assert_eq!(
        run(&mut con, &release(OWNERS[1])),
        Ok(ints(&[-1, 0])),
        "another owner"
    );
    assert_eq!(
        run(&mut con, &release(OWNERS[0])),
        Ok(ints(&[1, 0])),
        "the holder"
    );
    assert_eq!(
        run(&mut con, &release(OWNERS[0])),
        Ok(ints(&[0, 0])),
        "released before"
    );
    ok(run(
        &mut con,
        redis::cmd("RATELOCK.LOCK_FORCE_RELEASE")
            .arg(1)
            .arg("{p}:lock")
            .arg("{p}:released"),
    ));
    let permit = |command: &str| {
        let mut cmd = redis::cmd(command);
        cmd.arg(1).arg("{p}:permits").arg("p1");
        cmd
    };
    assert_eq!(
        run(
            &mut con,
            permit("RATELOCK.SEMAPHORE_RELEASE").arg("{p}:released").arg(now)
        ),
        Ok(Value::Int(0))
    );
    ok(run(
        &mut con,
        permit("RATELOCK.SEMAPHORE_ACQUIRE")
            .arg(2)
            .arg(60_000_000)
            .arg(now),
    ));
    assert_eq!(
        run(
            &mut con,
            permit("RATELOCK.SEMAPHORE_RELEASE").arg("{p}:released").arg(now)
        ),
        Ok(Value::Int(1))
    );
    // The lock's release, the forced release (which always tells), the permit's release.
    for _ in 0..3 {
        let message = pubsub.get_message().expect("a \"released\" message");
        assert_eq!(message.get_channel_name(), "{p}:released");
        assert_eq!(message.get_payload::<String>().unwrap(), "released");
    }
    assert!(
        pubsub.get_message().is_err(),
        "one message per release, none for the others"
    );
}

fn ints(values: &[i64]) -> Value {
    Value::Array(values.iter().copied().map(Value::Int).collect())
}

/// The commands' writes reach a replica as effects with absolute expiry (SET, HSET, DEL, ZADD, ZREM,
/// PEXPIREAT), never as RATELOCK.* commands: a replica without the module ends with the same keys,
/// values and TTLs.
#[test]
fn lock_writes_replicate_as_effects() {
    let master = start_server();
    let mut con = connect(&master);
    let (_replica, mut replica_con) = start_replica(&master);
    let mut rng = Rng(0x5E_1A_7E);
    let mut play = Play {
        sequence: 9_999,
        grants: vec![Vec::new(); 3],
        drift: 0,
    };
    let mut keys = std::collections::BTreeSet::new();
    let started = Instant::now();
    for _ in 0..400 {
        let call = if rng.below(2) == 0 {
            play.lock_call(&mut rng)
        } else {
            play.semaphore_call(&mut rng)
        };
        if call.lapse != Lapse::Never {
            continue; // keys that end during the comparison would prove nothing
        }
        let reply = run(
            &mut con,
            redis::cmd(command_of(call.script))
                .arg(call.keys.len())
                .arg(&call.keys)
                .arg(&call.argv),
        );
        play.remember_grant(&call, &reply);
        keys.extend(call.keys);
    }
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "leases of 60 s must outlive the run"
    );
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1, "the replica did not acknowledge the writes");
    let mut stored = 0;
    for key in &keys {
        let read = Instant::now();
        let (a, b) = (key_snapshot(&mut con, key), key_snapshot(&mut replica_con, key));
        assert!(
            a.agrees_within(&b, slack_since(read)),
            "{key} differs on the replica: {a:?} vs {b:?}"
        );
        stored += usize::from(a.kind != "none");
    }
    assert!(stored >= 6, "only {stored} keys were stored");
    assert_replica_ran_absolute_expiry(&mut replica_con);
}

/// Writers are flagged `write deny-oom`, but those that only give memory back (a release, a lease's new
/// end) `write` alone, so that a full server still runs them as it runs their scripts; the state
/// readers `readonly`; and Redis learns every key through the getkeys API.
#[test]
fn commands_declare_their_flags_and_keys() {
    let server = start_server();
    let mut con = connect(&server);
    for (script, command) in COMMANDS {
        let info: Value = redis::cmd("COMMAND")
            .arg("INFO")
            .arg(command)
            .query(&mut con)
            .unwrap();
        let text = format!("{info:?}").to_lowercase();
        if script.ends_with("_state") {
            assert!(
                text.contains("readonly") && !text.contains("\"write\""),
                "{command}: {text}"
            );
        } else if matches!(
            script,
            "lock_release" | "lock_extend" | "lock_force_release" | "semaphore_release"
        ) {
            assert!(
                text.contains("write") && !text.contains("denyoom"),
                "{command}: {text}"
            );
        } else {
            assert!(
                text.contains("write") && text.contains("denyoom"),
                "{command}: {text}"
            );
        }
        let two_keys = matches!(script, "lock_acquire" | "lock_state");
        let keys: Vec<&str> = if two_keys {
            vec!["{k}:a", "{k}:b"]
        } else {
            vec!["{k}:a"]
        };
        let found: Vec<String> = redis::cmd("COMMAND")
            .arg("GETKEYS")
            .arg(command)
            .arg(keys.len())
            .arg(&keys)
            .arg("x")
            .query(&mut con)
            .unwrap();
        assert_eq!(found, keys, "{command}");
    }
}

/// The expiry each side sets is the script's to the millisecond (its `ceil` of µs to ms, the 1 ms
/// floor of an extend, a key that ends at once): each pair of calls runs in one MULTI/EXEC, between two
/// TIME readings, and the two keys' PEXPIRETIME must be equal when both readings fall in the same ms
/// (inside EXEC no key expires, so even a 1 ms lease can be read back).
#[test]
fn expiry_times_match_to_the_millisecond() {
    let server = start_server();
    let mut mirror = Mirror::new(connect(&server));
    let mut rng = Rng(0xE_C0DE);
    let (mut exact, mut deleted, mut raced) = (0, 0, 0);
    for round in 0..400u64 {
        let now = wall_us() + round * 1_000_000;
        let length = match rng.below(4) {
            0 => 1 + rng.below(2_999),
            1 => 1 + rng.below(1_000) * 1_000 + rng.below(2),
            _ => 1 + rng.below(100_000_000),
        };
        let base = format!("{{x{round}}}");
        let (lock, counter, permits) = (
            format!("{base}:lock"),
            format!("{base}:fence"),
            format!("{base}:permits"),
        );
        let setup = [
            Call {
                script: "lock_acquire",
                keys: vec![lock.clone(), counter.clone()],
                argv: vec![OWNERS[0].into(), "60000000".into(), "1".into(), now.to_string()],
                lapse: Lapse::Never,
            },
            Call {
                script: "semaphore_acquire",
                keys: vec![permits.clone()],
                argv: vec!["p".into(), "3".into(), "60000000".into(), now.to_string()],
                lapse: Lapse::Never,
            },
        ];
        let mut fence = None;
        for call in &setup {
            let (lua, module) = mirror.both(call);
            assert_eq!(lua, module);
            if let Ok(Value::Array(items)) = &lua {
                if call.script == "lock_acquire" {
                    fence = Some(items[1].clone());
                }
            }
        }
        let Some(Value::Int(fence)) = fence else {
            panic!("no grant")
        };
        let signed = if rng.below(8) == 0 {
            format!("-{length}")
        } else {
            length.to_string()
        };
        let (script, keys, argv): (&str, Vec<String>, Vec<String>) = match rng.below(5) {
            0 => (
                "lock_acquire",
                vec![lock, counter],
                vec![OWNERS[0].into(), length.to_string(), "1".into(), now.to_string()],
            ),
            1 | 2 => (
                "lock_extend",
                vec![lock],
                vec![OWNERS[0].into(), signed, fence.to_string()],
            ),
            3 => (
                "semaphore_acquire",
                vec![permits],
                vec!["q".into(), "3".into(), length.to_string(), now.to_string()],
            ),
            _ => {
                let ttl = if rng.below(6) == 0 { 0 } else { length };
                (
                    "semaphore_extend",
                    vec![permits],
                    vec!["p".into(), ttl.to_string(), now.to_string()],
                )
            }
        };
        // The acquired permit alone, so that the key's expiry is its lease (the extended one is alone).
        if script == "semaphore_acquire" {
            for side in ["lua", "mod"] {
                let _: () = redis::cmd("ZREM")
                    .arg(format!("{side}:{}", keys[0]))
                    .arg("p")
                    .query(&mut mirror.con)
                    .unwrap();
            }
        }
        let key = keys[0].clone();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("TIME")
            .cmd("EVALSHA")
            .arg(&mirror.shas[script])
            .arg(keys.len())
            .arg(keys.iter().map(|k| format!("lua:{k}")).collect::<Vec<_>>())
            .arg(&argv)
            .cmd(command_of(script))
            .arg(keys.len())
            .arg(keys.iter().map(|k| format!("mod:{k}")).collect::<Vec<_>>())
            .arg(&argv)
            .cmd("TIME")
            .cmd("PEXPIRETIME")
            .arg(format!("lua:{key}"))
            .cmd("PEXPIRETIME")
            .arg(format!("mod:{key}"));
        let replies: Vec<Value> = pipe.query(&mut mirror.con).unwrap();
        let ms = |time: &Value| -> i64 {
            let (secs, micros): (i64, i64) = redis::from_redis_value(time.clone()).unwrap();
            secs * 1000 + micros / 1000
        };
        let context = format!("round {round}: {script} {argv:?}: {replies:?}");
        assert_eq!(replies[1], replies[2], "replies differ at {context}");
        let (lua_at, module_at) = match (&replies[4], &replies[5]) {
            (Value::Int(a), Value::Int(b)) => (*a, *b),
            other => panic!("PEXPIRETIME {other:?} at {context}"),
        };
        if lua_at == -2 && module_at == -2 {
            deleted += 1;
        } else if lua_at == -2 || module_at == -2 {
            // Redis's PEXPIRE reads the clock twice (the base, then "already past?"), so a 1 ms expiry
            // is a deletion when the ms turns between the two reads, on either path alike (about one
            // call in 5,000 measured, for the script and the module).
            let survivor = lua_at.max(module_at);
            assert!(
                survivor <= ms(&replies[3]) + 1,
                "one side's key ended at once, not the other's: {context}"
            );
            raced += 1;
        } else if ms(&replies[0]) == ms(&replies[3]) {
            assert_eq!(lua_at, module_at, "expiry differs at {context}");
            exact += 1;
        } else {
            // Each call read the clock somewhere between the two TIMEs: its expiry may differ from the
            // other's by as much as they are apart (a loaded machine stalls the server between them).
            let apart = ms(&replies[3]) - ms(&replies[0]);
            assert!(
                (lua_at - module_at).abs() <= apart + 1,
                "expiry differs at {context}"
            );
        }
    }
    eprintln!("{exact} expiries compared to the ms, {deleted} keys ended at once, {raced} 1 ms races");
    assert!(exact > 100 && deleted > 0, "{exact} exact, {deleted} deleted");
}
