//! What a key's policies cost the server: one GCRA rule through limit.lua (EVALSHA) and through the
//! module, plain, with a `block` (the ban a denial would start), and on keys that are on the deny list
//! and on the allow list, each saturated by `redis-benchmark` on one redis-server and timed by `INFO
//! commandstats`, against the same rule without (target: at most 1.3×). Run alone: `cargo run
//! --release -p ratelock-bench -- policy-cost`.

use ratelock::Rules;
use ratelock_testkit::RedisServer;

use crate::redis_benchmark::{command_stat, load_script, requests_per_second, BenchmarkRun};
use crate::report::{Row, Target, Unit};
use crate::script_call::{ScriptCall, LIMIT_SCRIPT};
use crate::server_cost::module_path;

/// How far above the plain rule a rule with a policy may cost (server µs per call).
const POLICY_TARGET_RATIO: f64 = 1.3;
/// The user keys redis-benchmark draws from (`-r`), each with its entry written first for the list rows.
const KEYSPACE: u64 = 10_000;

/// One row: what the keys hold, and the rule text.
struct Case {
    label: &'static str,
    rule: &'static str,
    /// The user keys' prefix (`<user>:__rand_int__`) and the entry each gets first, if any.
    user: &'static str,
    entry: Option<u8>,
}

const CASES: [Case; 4] = [
    Case {
        label: "one GCRA rule",
        rule: "100/minute",
        user: "plain",
        entry: None,
    },
    Case {
        label: "one GCRA rule with a ban (block 10 minutes)",
        rule: "100/minute block 10 minutes",
        user: "ban",
        entry: None,
    },
    Case {
        label: "one GCRA rule, the key on the deny list",
        rule: "100/minute",
        user: "deny",
        entry: Some(b'd'),
    },
    Case {
        label: "one GCRA rule, the key on the allow list",
        rule: "100/minute",
        user: "allow",
        entry: Some(b'a'),
    },
];

/// Writes every key's entry (of kind `letter`, ending in a day) for the `user` keys redis-benchmark
/// will draw: `__rand_int__` becomes a 12-digit zero-padded number below the keyspace.
fn write_entries(connection: &mut redis::Connection, user: &str, letter: u8) {
    let until = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_micros() as u64
        + 86_400_000_000;
    let mut pipe = redis::pipe();
    for n in 0..KEYSPACE {
        let mut key = Vec::new();
        ratelock::key::write_base(&mut key, "rl", format!("{user}:{n:012}").as_bytes());
        key.extend_from_slice(ratelock::algorithm::standing::KEY_SUFFIX);
        pipe.cmd("SET")
            .arg(key)
            .arg(format!("{}{until}", letter as char))
            .arg("PX")
            .arg(86_400_000)
            .ignore();
    }
    let _: () = pipe.query(connection).expect("writing the entries");
}

pub fn rows(notes: &mut Vec<String>) -> Vec<Row> {
    let module = module_path();
    let server = match &module {
        Some(so) => RedisServer::start_with(&["--loadmodule", &so.display().to_string()]),
        None => RedisServer::start(),
    };
    let mut connection = server.connection();
    let sha = load_script(&mut connection, &LIMIT_SCRIPT);
    let run = BenchmarkRun {
        requests: 200_000,
        clients: 50,
        pipeline: 16,
        keyspace: Some(KEYSPACE),
    };
    let mut rows = Vec::new();
    for (path, stat) in [
        ("limit.lua (EVALSHA)", "evalsha"),
        ("the module", "ratelock.limit"),
    ] {
        if stat == "ratelock.limit" && module.is_none() {
            notes.push(
                "policy cost: the module was not built (RATELOCK_MODULE_SO unset): no module rows".into(),
            );
            continue;
        }
        let mut plain = None;
        for case in &CASES {
            if let Some(letter) = case.entry {
                write_entries(&mut connection, case.user, letter);
            }
            let rules: Rules = case.rule.parse().expect("bench rule");
            let call = ScriptCall::hit_all("rl", &format!("{}:__rand_int__", case.user), rules.iter());
            let command = if stat == "evalsha" {
                let mut command = vec!["EVALSHA".to_owned()];
                command.extend(call.evalsha_args(&sha));
                command
            } else {
                call.module_command()
            };
            let _: () = redis::cmd("CONFIG")
                .arg("RESETSTAT")
                .query(&mut connection)
                .expect("RESETSTAT");
            if let Err(problem) = requests_per_second(server.port(), &command, &run) {
                notes.push(format!("policy cost, {path}, {}: {problem}", case.label));
            }
            let micros = command_stat(&mut connection, stat, "usec_per_call");
            if case.entry.is_none() && case.rule == "100/minute" {
                plain = micros;
            }
            rows.push(Row {
                name: format!("server µs per call, {path}: {}", case.label),
                unit: Unit::Micros,
                measured: micros,
                baseline: plain,
                target: if plain.is_some() && case.user != "plain" {
                    Target::RatioAtMost(POLICY_TARGET_RATIO)
                } else {
                    Target::None
                },
            });
        }
    }
    notes.push(format!(
        "policy cost: redis-benchmark {} -r {KEYSPACE} -n {} per row; each policy row against the plain \
         rule's µs on the same path in the same run (the plain rule reads the key's entry too: every \
         check does); the list rows' keys all hold an entry, written first",
        run.describe(),
        run.requests
    ));
    rows
}
