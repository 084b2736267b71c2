//! RATELOCK.FAIR_LOCK and RATELOCK.RW_LOCK agree with `core/lua/fair_lock.lua` and `rw_lock.lua`,
//! call for call, on a real redis-server (build the module first; see limit_agrees_with_lua.rs).
//!
//! Thousands of seeded sequences of calls (several grant ids; every operation with right and wrong ids,
//! tokens and modes; leases and places from 1 µs to seconds; an explicit `now` that runs ahead of the
//! wall clock so that leases and places lapse; a few malformed calls) go through the script (prelude.lua
//! in front, EVALSHA) on one set of keys and through the module command on a mirrored set, the wake
//! channel mirrored too. After every call the replies must be identical, errors as text; so must the
//! messages published on the two channel sets, and every key's type, contents and PTTL (within a few ms).

use std::time::Instant;

use redis::{Connection, PubSub, Value};

mod common;

use common::{
    assert_replica_ran_absolute_expiry, connect, lua_script, run, start_replica, start_server, tagged,
    wall_us, Rng,
};

/// Sequences per lock kind, and calls per sequence.
const SEQUENCES: usize = 1500;
const STEPS: usize = 12;
/// How far apart the two copies' PTTLs may be: the module's call runs a moment after the script's, so
/// this plus the longest time seen between the two calls of a step in the sequence (a busy machine
/// can stall a call for longer).
const PTTL_SLACK_MS: i64 = 25;
/// The channel a step's end is marked on, so that each step's messages are read in full.
const STEP_MARK: &str = "step:mark";

/// One lock kind: its script, its command and its keys (KEYS order) after `<side>:{<sequence>}:`.
struct Kind {
    script: &'static str,
    command: &'static str,
    keys: [&'static str; 4],
    /// The suffix of the wake channel (fair: a prefix the head's id is appended to).
    channel: &'static str,
}

const FAIR: Kind = Kind {
    script: "fair_lock",
    command: "RATELOCK.FAIR_LOCK",
    keys: ["fair", "fair-queue", "fair-places", "fence"],
    channel: "wake:",
};

const RW: Kind = Kind {
    script: "rw_lock",
    command: "RATELOCK.RW_LOCK",
    keys: ["rw-readers", "rw-writer", "rw-waiting", "fence"],
    channel: "released",
};

impl Kind {
    fn keys(&self, side: &str, sequence: &str) -> Vec<String> {
        self.keys
            .iter()
            .map(|k| format!("{side}:{{{sequence}}}:{k}"))
            .collect()
    }

    fn channel(&self, side: &str, sequence: &str) -> String {
        format!("{side}:{{{sequence}}}:{}", self.channel)
    }

    /// prelude.lua and the script, as the store sends them (less the call-tag envelope).
    fn load(&self, con: &mut Connection) -> String {
        redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(lua_script(self.script))
            .query(con)
            .unwrap()
    }
}

/// A key's type and contents (lists in order, sorted sets with scores, hashes sorted) and its PTTL.
#[derive(Debug, Clone)]
struct Snapshot {
    kind: String,
    contents: Vec<String>,
    pttl: i64,
}

fn snapshots(con: &mut Connection, keys: &[String]) -> Vec<Snapshot> {
    let mut pipe = redis::pipe();
    for key in keys {
        pipe.cmd("TYPE").arg(key).cmd("PTTL").arg(key);
    }
    let heads: Vec<(String, i64)> = pipe.query(con).unwrap();
    let mut pipe = redis::pipe();
    for (key, (kind, _)) in keys.iter().zip(&heads) {
        match kind.as_str() {
            "none" => pipe.cmd("EXISTS").arg(key),
            "string" => pipe.cmd("GET").arg(key),
            "list" => pipe.cmd("LRANGE").arg(key).arg(0).arg(-1),
            "hash" => pipe.cmd("HGETALL").arg(key),
            "zset" => pipe.cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES"),
            other => panic!("{key} has unexpected type {other}"),
        };
    }
    let bodies: Vec<Value> = pipe.query(con).unwrap();
    heads
        .into_iter()
        .zip(bodies)
        .map(|((kind, pttl), body)| {
            let mut contents: Vec<String> = match (kind.as_str(), body) {
                ("none", _) => vec![],
                (_, Value::Array(items)) => items.iter().map(text).collect(),
                (_, single) => vec![text(&single)],
            };
            if kind == "hash" {
                let mut pairs: Vec<String> = contents.chunks(2).map(|p| p.join("=")).collect();
                pairs.sort();
                contents = pairs;
            }
            Snapshot { kind, contents, pttl }
        })
        .collect()
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        Value::Nil => "(nil)".into(),
        other => format!("{other:?}"),
    }
}

/// Whether two copies of a key agree. A key about to expire (PTTL within the slack) may already be
/// gone on the other side (or go between its TYPE and its read): the two copies' expiry times are a
/// moment apart.
fn agree(a: &Snapshot, b: &Snapshot, slack_ms: i64) -> bool {
    let fading = |s: &Snapshot| (0..=slack_ms).contains(&s.pttl);
    let gone = |s: &Snapshot| s.kind == "none" || s.contents.is_empty();
    if (fading(a) || fading(b)) && (gone(a) || gone(b)) {
        return true;
    }
    let ttls = (a.pttl < 0 && a.pttl == b.pttl)
        || (a.pttl >= 0 && b.pttl >= 0 && (a.pttl - b.pttl).abs() <= slack_ms);
    a.kind == b.kind && a.contents == b.contents && ttls
}

/// The messages published since the last step mark, split by side (`lua:` / `mod:`), each as
/// (channel without its side, payload); reads up to the mark this publishes.
/// Published messages as (channel, payload).
type Messages = Vec<(String, String)>;

fn step_messages(con: &mut Connection, sub: &mut PubSub) -> (Messages, Messages) {
    let _: i64 = redis::cmd("PUBLISH")
        .arg(STEP_MARK)
        .arg("end")
        .query(con)
        .unwrap();
    let (mut lua, mut module) = (Vec::new(), Vec::new());
    loop {
        let msg = sub.get_message().expect("a published message");
        let channel = msg.get_channel_name().to_string();
        let payload: String = msg.get_payload().unwrap();
        if channel == STEP_MARK {
            return (lua, module);
        }
        match channel.split_once(':') {
            Some(("lua", rest)) => lua.push((rest.to_string(), payload)),
            Some(("mod", rest)) => module.push((rest.to_string(), payload)),
            _ => panic!("a message on {channel}"),
        }
    }
}

/// What a run of calls saw, to check that the mix covered every outcome.
#[derive(Debug, Default)]
struct Tally {
    calls: usize,
    granted: usize,
    refused: usize,
    done: usize,
    not_done: usize,
    errors: usize,
    /// Errors the script raises as a Lua runtime error (its text names the script's line), which the
    /// module answers with a text of its own.
    lua_runtime_errors: usize,
    messages: usize,
}

/// The argument generator of one lock kind: the ARGV of the next call (with `channel` standing for the
/// wake channel, mirrored per side), given what the script answered so far.
trait Calls {
    fn next(&mut self, rng: &mut Rng, now: &str) -> Vec<String>;
    fn saw(&mut self, argv: &[String], reply: &Result<Value, String>);
}

/// A lease or place length in µs: mostly lapsing within a few steps, some at once, some long.
fn length_us(rng: &mut Rng) -> u64 {
    [1, 700, 5_000, 40_000, 300_000, 2_000_000, 30_000_000][rng.below(7) as usize] + rng.below(50)
}

/// A fair lock's place length in µs: none shorter than 40 ms, so that a queue and its places never
/// expire in real time during a sequence (they lapse by the explicit `now`). The two keys expire at the
/// same ms, but a call landing on that ms may find one gone and the other not, on either side (see
/// `fair_keys::read`); 0 (the place lapses at once, and the keys go with it) now and then.
fn place_us(rng: &mut Rng) -> u64 {
    match rng.below(20) {
        0 => 0,
        n => [40_000, 300_000, 2_000_000, 30_000_000][n as usize % 4] + rng.below(50),
    }
}

fn integers(reply: &Result<Value, String>) -> Vec<i64> {
    match reply {
        Ok(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::Int(n) => *n,
                other => panic!("not an integer: {other:?}"),
            })
            .collect(),
        _ => vec![],
    }
}

/// Fair-lock calls over a few grant ids; tokens remembered from grants.
struct FairCalls {
    ids: Vec<String>,
    fences: Vec<(String, i64)>,
}

impl FairCalls {
    fn token(&self, rng: &mut Rng, id: &str) -> String {
        let known = self
            .fences
            .iter()
            .rev()
            .find(|(holder, _)| holder == id)
            .map(|&(_, f)| f);
        let any = self.fences.last().map_or(1, |&(_, f)| f);
        match rng.below(20) {
            0..=12 => known.unwrap_or(any).to_string(),
            13..=14 => any.to_string(),
            15..=16 => (known.unwrap_or(any) + 1).to_string(),
            17 => "0".into(),
            18 => String::new(),
            _ => "x".into(),
        }
    }
}

impl Calls for FairCalls {
    fn next(&mut self, rng: &mut Rng, now: &str) -> Vec<String> {
        let id = self.ids[rng.below(self.ids.len() as u64) as usize].clone();
        // A release or extend mostly names the latest grant, which may still hold the lock.
        let grantee = match self.fences.last() {
            Some((holder, _)) if rng.below(4) != 0 => holder.clone(),
            _ => id.clone(),
        };
        let call = |op: &str, id: &str, fence: &str, ttl: String, place: String| -> Vec<String> {
            vec![
                op.into(),
                now.into(),
                id.into(),
                fence.into(),
                ttl,
                place,
                "channel".into(),
            ]
        };
        match rng.below(100) {
            0..=34 => call(
                "acquire",
                &id,
                "0",
                length_us(rng).to_string(),
                place_us(rng).to_string(),
            ),
            35..=43 => call(
                "try",
                &id,
                "0",
                length_us(rng).to_string(),
                place_us(rng).to_string(),
            ),
            44..=58 => {
                let token = self.token(rng, &grantee);
                call("release", &grantee, &token, "0".into(), "0".into())
            }
            59..=69 => {
                let token = self.token(rng, &grantee);
                let ttl = if rng.below(15) == 0 { 0 } else { length_us(rng) };
                call("extend", &grantee, &token, ttl.to_string(), "0".into())
            }
            70..=79 => call("withdraw", &id, "0", "0".into(), "0".into()),
            80..=88 => call("state", "", "0", "0".into(), "0".into()),
            _ => match rng.below(9) {
                0 => call("bogus", &id, "0", "5".into(), "5".into()),
                1 => call("", &id, "0", "5".into(), "5".into()),
                2 => call("acquire", "", "0", "5000".into(), "5000".into()),
                3 => call("acquire", &id, "0", "0".into(), "5000".into()),
                4 => call("try", &id, "0", String::new(), "5000".into()),
                5 => call("try", &id, "0", "5000".into(), "x".into()),
                6 => {
                    // A missing lease: a Lua error in the script when the id holds the lock.
                    let token = self.token(rng, &id);
                    call("extend", &id, &token, String::new(), "0".into())
                }
                7 => call("release", "", "", "0".into(), "0".into()),
                _ => call("withdraw", "", "0", "0".into(), "0".into()),
            },
        }
    }

    fn saw(&mut self, argv: &[String], reply: &Result<Value, String>) {
        let figures = integers(reply);
        if matches!(argv[0].as_str(), "acquire" | "try") && figures.first() == Some(&1) {
            self.fences.push((argv[2].clone(), figures[1]));
        }
    }
}

/// Read-write-lock calls over a few grant ids; holds remembered from grants (id, mode, token).
struct RwCalls {
    ids: Vec<String>,
    holds: Vec<(String, String, i64)>,
}

impl RwCalls {
    /// (id, mode, token) of a hold, mostly right, sometimes wrong in one way.
    fn hold(&self, rng: &mut Rng) -> (String, String, String) {
        let pick = |n: u64| self.ids[n as usize % self.ids.len()].clone();
        // Mostly one of the latest holds, which may still be live.
        let latest = self.holds.len().saturating_sub(1 + rng.below(3) as usize);
        let at = if rng.below(5) == 0 {
            rng.below(self.holds.len() as u64 + 1) as usize
        } else {
            latest
        };
        let Some((id, mode, fence)) = self.holds.get(at).cloned() else {
            let mode = if rng.below(2) == 0 { "r" } else { "w" };
            return (pick(rng.next()), mode.into(), "1".into());
        };
        match rng.below(20) {
            0..=13 => (id, mode, fence.to_string()),
            14 => (id, if mode == "r" { "w" } else { "r" }.into(), fence.to_string()),
            15 => (pick(rng.next()), mode, fence.to_string()),
            16 => (id, mode, (fence + 1).to_string()),
            17 => (id, "x".into(), fence.to_string()),
            18 => (id, mode, String::new()),
            _ => (id, mode, "0".into()),
        }
    }
}

impl Calls for RwCalls {
    fn next(&mut self, rng: &mut Rng, now: &str) -> Vec<String> {
        let id = self.ids[rng.below(self.ids.len() as u64) as usize].clone();
        let flag = |rng: &mut Rng| if rng.below(4) == 0 { "0" } else { "1" }.to_string();
        let call = |op: &str, id: &str, mode: &str, fence: &str, ttl: String, rest: [String; 3]| {
            let mut argv: Vec<String> =
                vec![op.into(), now.into(), id.into(), mode.into(), fence.into(), ttl];
            argv.extend(rest);
            argv.push("channel".into());
            argv
        };
        let zeros = || ["0".to_string(), "0".to_string(), "0".to_string()];
        match rng.below(100) {
            0..=39 => {
                let mode = if rng.below(5) < 2 { "w" } else { "r" };
                let rest = [length_us(rng).to_string(), flag(rng), flag(rng)];
                call("acquire", &id, mode, "0", length_us(rng).to_string(), rest)
            }
            40..=56 => {
                let (id, mode, fence) = self.hold(rng);
                call("release", &id, &mode, &fence, "0".into(), zeros())
            }
            57..=69 => {
                let (id, mode, fence) = self.hold(rng);
                let ttl = if rng.below(15) == 0 { 0 } else { length_us(rng) };
                call("extend", &id, &mode, &fence, ttl.to_string(), zeros())
            }
            70..=79 => call("withdraw", &id, "w", "0", "0".into(), zeros()),
            80..=89 => call("state", "", "r", "0", "0".into(), zeros()),
            _ => match rng.below(9) {
                0 => call("bogus", &id, "r", "0", "5".into(), zeros()),
                1 => call("acquire", "", "r", "0", "5000".into(), zeros()),
                2 => call("acquire", &id, "x", "0", "5000".into(), zeros()),
                3 => call("acquire", &id, "w", "0", "0".into(), zeros()),
                4 => call(
                    "acquire",
                    &id,
                    "r",
                    "0",
                    "5000".into(),
                    [String::new(), "1".into(), "1".into()],
                ),
                5 => {
                    // A waiting writer without a mark length: a Lua error in the script when refused.
                    call(
                        "acquire",
                        &id,
                        "w",
                        "0",
                        "5000".into(),
                        [String::new(), "1".into(), "1".into()],
                    )
                }
                6 => {
                    // A missing lease: always a Lua error in the script.
                    let (id, mode, fence) = self.hold(rng);
                    call("extend", &id, &mode, &fence, String::new(), zeros())
                }
                7 => call("release", &id, "w", "", "0".into(), zeros()),
                _ => call("withdraw", "", "w", "0", "0".into(), zeros()),
            },
        }
    }

    fn saw(&mut self, argv: &[String], reply: &Result<Value, String>) {
        let figures = integers(reply);
        if argv[0] == "acquire" && figures.first() == Some(&1) {
            self.holds.push((argv[2].clone(), argv[3].clone(), figures[1]));
        }
    }
}

/// A fair-lock generator over 2 to 4 grant ids.
fn fair_calls(rng: &mut Rng) -> Box<dyn Calls> {
    let ids = (0..2 + rng.below(3)).map(|i| format!("g{i}")).collect();
    Box::new(FairCalls { ids, fences: vec![] })
}

/// A read-write-lock generator over 2 to 4 grant ids (with a ':' in them, as in the readers' members).
fn rw_calls(rng: &mut Rng) -> Box<dyn Calls> {
    let ids = (0..2 + rng.below(3)).map(|i| format!("g:{i}")).collect();
    Box::new(RwCalls { ids, holds: vec![] })
}

/// Runs `SEQUENCES` seeded sequences of `kind` through both paths, asserting after every call.
fn agree_with_lua(kind: &Kind, seed: u64, calls_for: fn(&mut Rng) -> Box<dyn Calls>) -> Tally {
    let server = start_server();
    let mut con = connect(&server);
    let mut sub_con = connect(&server);
    let mut sub = sub_con.as_pubsub();
    sub.psubscribe(&["lua:*", "mod:*", STEP_MARK]).unwrap();
    let sha = kind.load(&mut con);
    let seed = std::env::var("RATELOCK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(seed);
    let mut rng = Rng(seed | 1);
    let mut tally = Tally::default();
    let mut drift: u64 = 0;
    for sequence in 0..SEQUENCES {
        let tag = format!("s{sequence}");
        let (lua_keys, module_keys) = (kind.keys("lua", &tag), kind.keys("mod", &tag));
        let mut keys = lua_keys.clone();
        keys.extend(module_keys.iter().cloned());
        // Some counters start far ahead of the clock (tokens are then counter + 1) or unreadable.
        let counter = match rng.below(8) {
            0 => Some((wall_us() + 10_000_000_000).to_string()),
            1 => Some("x".to_string()),
            _ => None,
        };
        if let Some(counter) = &counter {
            for side in [&lua_keys, &module_keys] {
                let _: () = redis::cmd("SET")
                    .arg(&side[3])
                    .arg(counter)
                    .query(&mut con)
                    .unwrap();
            }
        }
        let mut calls = calls_for(&mut rng);
        let mut history = String::new();
        let mut slack_ms = PTTL_SLACK_MS;
        for step in 0..STEPS {
            // `now` runs ahead of the wall clock by a growing drift, a few ms at least per call, so that
            // a key that expires in real time has also lapsed at the explicit `now`.
            drift += 3_000
                + match rng.below(20) {
                    0..=9 => rng.below(20_000),
                    10..=15 => rng.below(300_000),
                    16..=18 => rng.below(3_000_000),
                    _ => rng.below(40_000_000),
                };
            let now = (wall_us() + drift).to_string();
            let argv = calls.next(&mut rng, &now);
            let with_channel = |side: &str| -> Vec<String> {
                let mut argv = argv.clone();
                *argv.last_mut().unwrap() = kind.channel(side, &tag);
                argv
            };
            let started = Instant::now();
            let lua_reply = run(
                &mut con,
                redis::cmd("EVALSHA")
                    .arg(&sha)
                    .arg(4)
                    .arg(&lua_keys)
                    .arg(with_channel("lua")),
            );
            let module_reply = run(
                &mut con,
                redis::cmd(kind.command)
                    .arg(4)
                    .arg(&module_keys)
                    .arg(with_channel("mod")),
            );
            slack_ms = slack_ms.max(PTTL_SLACK_MS + started.elapsed().as_millis() as i64 + 1);
            let context = || {
                format!(
                    "{} sequence {sequence} step {step} (seed {seed}): argv {argv:?}\nthe sequence so far:\n{history}",
                    kind.command
                )
            };
            tally.calls += 1;
            match (&lua_reply, &module_reply) {
                (Err(lua), Err(module)) if lua.contains("user_script") => {
                    // A state the script refuses through `fail()` is refused by the module in the
                    // same words, at its own keys (Redis appends where the script raised). An
                    // argument the script never checks fails it in Lua's words; the module names it.
                    let raised = lua
                        .split(" script: ")
                        .next()
                        .unwrap_or(lua)
                        .replace("lua:", "mod:");
                    let same_refusal = raised.starts_with("ERR ratelock: ") && raised == *module;
                    let named_argument =
                        lua.contains("a nil value") && module.starts_with("ERR ratelock module: ");
                    assert!(
                        same_refusal || named_argument,
                        "a Lua runtime error {lua:?} answered {module:?} at {}",
                        context()
                    );
                    tally.lua_runtime_errors += 1;
                }
                _ => assert_eq!(lua_reply, module_reply, "replies differ at {}", context()),
            }
            calls.saw(&argv, &lua_reply);
            let figures = integers(&lua_reply);
            match (argv[0].as_str(), figures.first()) {
                (_, None) => tally.errors += 1,
                ("acquire" | "try", Some(1)) => tally.granted += 1,
                ("acquire" | "try", Some(_)) => tally.refused += 1,
                ("state", _) => {}
                (_, Some(1)) => tally.done += 1,
                (_, Some(_)) => tally.not_done += 1,
            }
            let (lua_messages, module_messages) = step_messages(&mut con, &mut sub);
            assert_eq!(
                lua_messages,
                module_messages,
                "published messages differ at {}",
                context()
            );
            tally.messages += lua_messages.len();
            let stored = snapshots(&mut con, &keys);
            let (lua_stored, module_stored) = stored.split_at(4);
            for ((a, b), key) in lua_stored.iter().zip(module_stored).zip(&module_keys) {
                assert!(
                    agree(a, b, slack_ms),
                    "{key} differs at {}: lua {a:?}, module {b:?}",
                    context()
                );
            }
            history +=
                &format!("{argv:?} -> {module_reply:?}\n  lua {lua_stored:?}\n  mod {module_stored:?}\n");
        }
    }
    tally
}

#[test]
fn fair_lock_agrees_with_lua() {
    let tally = agree_with_lua(&FAIR, 0xFA12_0001, fair_calls);
    eprintln!("fair_lock: {tally:?}");
    assert!(tally.granted > 1000 && tally.refused > 1000 && tally.done > 500 && tally.not_done > 500);
    assert!(
        tally.errors > 100 && tally.lua_runtime_errors > 0 && tally.messages > 100,
        "{tally:?}"
    );
}

#[test]
fn rw_lock_agrees_with_lua() {
    let tally = agree_with_lua(&RW, 0x0A0B_0002, rw_calls);
    eprintln!("rw_lock: {tally:?}");
    assert!(tally.granted > 1000 && tally.refused > 1000 && tally.done > 500 && tally.not_done > 500);
    assert!(
        tally.errors > 100 && tally.lua_runtime_errors > 0 && tally.messages > 100,
        "{tally:?}"
    );
}

/// A call carrying the client's tag past the script's contract is answered with it, as the scripts'
/// envelope answers (the script's array reply with the tag appended); an error is never wrapped.
#[test]
fn a_tagged_call_is_answered_with_its_tag() {
    let server = start_server();
    let mut con = connect(&server);
    for (kind, calls) in [
        (&FAIR, fair_calls as fn(&mut Rng) -> Box<dyn Calls>),
        (&RW, rw_calls),
    ] {
        let sha = kind.load(&mut con);
        let mut rng = Rng(0x7A6);
        let mut calls = calls(&mut rng);
        let (lua_keys, module_keys) = (kind.keys("lua", "tag"), kind.keys("mod", "tag"));
        let (mut wrapped, mut errors) = (0, 0);
        for call in 0..300u64 {
            let argv = calls.next(&mut rng, &(wall_us() + call * 5_000).to_string());
            let tag = (9_007_199_254_000_000 + call).to_string();
            let lua = run(
                &mut con,
                redis::cmd("EVALSHA").arg(&sha).arg(4).arg(&lua_keys).arg(&argv),
            );
            let module = run(
                &mut con,
                redis::cmd(kind.command)
                    .arg(4)
                    .arg(&module_keys)
                    .arg(&argv)
                    .arg(&tag),
            );
            calls.saw(&argv, &lua);
            match (&lua, module) {
                (Ok(reply), Ok(answered)) => {
                    assert_eq!(answered, tagged(&tag, reply.clone()));
                    wrapped += 1;
                }
                (Err(lua), Err(module)) if lua.contains("user_script") => {
                    assert!(module.starts_with("ERR ratelock module: "), "{module}")
                }
                (Err(lua), Err(module)) => {
                    assert_eq!(*lua, module, "{argv:?}");
                    errors += 1;
                }
                (lua, module) => panic!("{argv:?}: lua {lua:?}, tagged module {module:?}"),
            }
        }
        assert!(wrapped > 200 && errors > 5, "{} {wrapped} {errors}", kind.command);
    }
}

/// Calls that are malformed before any operation is read get the errors EVALSHA gives.
#[test]
fn malformed_calls_answer_as_evalsha_does() {
    let server = start_server();
    let mut con = connect(&server);
    for kind in [&FAIR, &RW] {
        let sha = kind.load(&mut con);
        for (numkeys, args) in [("-1", 5), ("9", 3), ("x", 3)] {
            let extra: Vec<String> = (0..args).map(|i| format!("a{i}")).collect();
            let lua = run(&mut con, redis::cmd("EVALSHA").arg(&sha).arg(numkeys).arg(&extra));
            let module = run(&mut con, redis::cmd(kind.command).arg(numkeys).arg(&extra));
            assert!(lua.is_err(), "{lua:?}");
            assert_eq!(lua, module, "{} numkeys {numkeys}", kind.command);
        }
    }
}

/// With `now` empty each path reads the server's clock (the script TIME, the module the system clock),
/// a moment apart: the decisions agree exactly, the µs figures (tokens minted from the clock, µs left)
/// within the slack.
#[test]
fn server_clock_calls_agree() {
    let server = start_server();
    let mut con = connect(&server);
    let minute = "60000000";
    let fair = [
        vec!["acquire", "", "a", "0", minute, minute, "w:"],
        vec!["acquire", "", "b", "0", minute, minute, "w:"],
        vec!["try", "", "c", "0", minute, minute, "w:"],
        vec!["state", "", "", "0", "0", "0", "w:"],
        vec!["withdraw", "", "b", "0", "0", "0", "w:"],
        vec!["state", "", "", "0", "0", "0", "w:"],
    ];
    let rw = [
        vec!["acquire", "", "r1", "r", "0", minute, minute, "1", "1", "ch"],
        vec!["acquire", "", "w1", "w", "0", minute, minute, "1", "1", "ch"],
        vec!["acquire", "", "r2", "r", "0", minute, minute, "1", "1", "ch"],
        vec!["state", "", "", "r", "0", "0", "0", "0", "0", "ch"],
        vec!["withdraw", "", "w1", "w", "0", "0", "0", "0", "0", "ch"],
        vec!["acquire", "", "r2", "r", "0", minute, minute, "1", "1", "ch"],
        vec!["state", "", "", "r", "0", "0", "0", "0", "0", "ch"],
    ];
    for (kind, script) in [(&FAIR, &fair[..]), (&RW, &rw[..])] {
        let sha = kind.load(&mut con);
        for argv in script {
            let started = Instant::now();
            let lua = integers(&run(
                &mut con,
                redis::cmd("EVALSHA")
                    .arg(&sha)
                    .arg(4)
                    .arg(kind.keys("lua", "clock"))
                    .arg(argv),
            ));
            let module = integers(&run(
                &mut con,
                redis::cmd(kind.command)
                    .arg(4)
                    .arg(kind.keys("mod", "clock"))
                    .arg(argv),
            ));
            assert_eq!(lua.len(), module.len(), "{argv:?}: {lua:?} vs {module:?}");
            assert!(!lua.is_empty(), "{argv:?}");
            let slack_ms = common::slack_since(started);
            for (a, b) in lua.iter().zip(&module) {
                assert!(
                    (a - b).abs() <= slack_ms * 1000,
                    "{argv:?}: {lua:?} vs {module:?}"
                );
            }
        }
    }
}

/// The module's writes reach a replica (without the module) as plain effects with absolute expiry, and
/// its PUBLISH as a script's does: the replica ends with the same keys, values and TTLs, and its
/// subscribers hear the same wake-ups as the master's.
#[test]
fn writes_replicate_as_effects() {
    let master = start_server();
    let mut con = connect(&master);
    let (replica, mut replica_con) = start_replica(&master);
    let (mut master_sub_con, mut replica_sub_con) = (connect(&master), connect(&replica));
    let mut master_sub = master_sub_con.as_pubsub();
    let mut replica_sub = replica_sub_con.as_pubsub();
    master_sub.psubscribe("mod:*").unwrap();
    replica_sub.psubscribe("mod:*").unwrap();
    let mut keys = Vec::new();
    let mut rng = Rng(0xA11CE);
    let mut drift = 0;
    for sequence in 0..60 {
        for (kind, calls_for) in [
            (&FAIR, fair_calls as fn(&mut Rng) -> Box<dyn Calls>),
            (&RW, rw_calls),
        ] {
            let tag = format!("rep{sequence}");
            let module_keys = kind.keys("mod", &tag);
            let mut calls = calls_for(&mut rng);
            for _ in 0..STEPS {
                drift += 3_000 + rng.below(300_000);
                let mut argv = calls.next(&mut rng, &(wall_us() + drift).to_string());
                *argv.last_mut().unwrap() = kind.channel("mod", &tag);
                let reply = run(
                    &mut con,
                    redis::cmd(kind.command).arg(4).arg(&module_keys).arg(&argv),
                );
                calls.saw(&argv, &reply);
            }
            keys.extend(module_keys);
        }
    }
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1, "the replica did not acknowledge the writes");
    // The module runs the scripts' own relative PEXPIRE (an absolute time from an earlier clock read
    // could have passed by the time it ran); Redis (>= 7.0, which the module needs) propagates it as
    // PEXPIREAT, and the replica must have run only absolute expiries.
    assert_replica_ran_absolute_expiry(&mut replica_con);
    let read = Instant::now();
    let (on_master, on_replica) = (snapshots(&mut con, &keys), snapshots(&mut replica_con, &keys));
    let slack_ms = common::slack_since(read);
    let mut live = 0;
    for ((a, b), key) in on_master.iter().zip(&on_replica).zip(&keys) {
        assert!(
            agree(a, b, slack_ms),
            "{key} differs on the replica: {a:?} vs {b:?}"
        );
        live += usize::from(a.kind != "none");
    }
    assert!(live > 100, "only {live} keys to compare");
    // Every wake-up the master published reached the replica's subscribers too.
    let _: i64 = redis::cmd("PUBLISH")
        .arg("mod:end")
        .arg("end")
        .query(&mut con)
        .unwrap();
    let _: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    let heard = |sub: &mut PubSub| -> Messages {
        let mut messages = Vec::new();
        loop {
            let msg = sub.get_message().unwrap();
            let channel = msg.get_channel_name().to_string();
            if channel == "mod:end" {
                return messages;
            }
            messages.push((channel, msg.get_payload().unwrap()));
        }
    };
    let (master_heard, replica_heard) = (heard(&mut master_sub), heard(&mut replica_sub));
    assert!(master_heard.len() > 20, "{} wake-ups", master_heard.len());
    assert_eq!(master_heard, replica_heard);
}
