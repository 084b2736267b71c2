//! What a key's policies cost the server: one GCRA rule through limit.lua (by FCALL, the default
//! route on Redis >= 7 without the module, and by EVALSHA) and through the module, plain, with a `block` (the ban a denial would start), on keys that are on the deny list
//! and on the allow list, and on keys with an override (another limit for the rule), each saturated by `redis-benchmark` on one redis-server and timed by `INFO
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
/// Rounds of every case in turn; each row is the median of its rounds.
const ROUNDS: usize = 3;
/// The user keys redis-benchmark draws from (`-r`), each with its entry written first for the list rows.
const KEYSPACE: u64 = 10_000;

/// What each user key holds beside its rule's state before the run.
enum Held {
    Nothing,
    /// An entry of this kind (`d` deny list, `a` allow list).
    Entry(u8),
    /// An override of these rules.
    Override(&'static str),
}

/// One row: what the keys hold, and the rule text.
struct Case {
    label: &'static str,
    rule: &'static str,
    /// The user keys' prefix (`<user>:__rand_int__`) and what each holds first.
    user: &'static str,
    held: Held,
}

const CASES: [Case; 5] = [
    Case {
        label: "one GCRA rule",
        rule: "100/minute",
        user: "plain",
        held: Held::Nothing,
    },
    Case {
        label: "one GCRA rule with a ban (block 10 minutes)",
        rule: "100/minute block 10 minutes",
        user: "ban",
        held: Held::Nothing,
    },
    Case {
        label: "one GCRA rule, the key on the deny list",
        rule: "100/minute",
        user: "deny",
        held: Held::Entry(b'd'),
    },
    Case {
        label: "one GCRA rule, the key on the allow list",
        rule: "100/minute",
        user: "allow",
        held: Held::Entry(b'a'),
    },
    Case {
        label: "one GCRA rule, the key with an override (1000/minute)",
        rule: "100/minute",
        user: "override",
        held: Held::Override("1000/minute"),
    },
];

/// Writes what every `user` key redis-benchmark will draw holds (`__rand_int__` becomes a 12-digit
/// zero-padded number below the keyspace): an entry ending in a day, or an override.
fn write_held(connection: &mut redis::Connection, user: &str, held: &Held) {
    let until = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_micros() as u64
        + 86_400_000_000;
    let (suffix, text) = match held {
        Held::Nothing => return,
        Held::Entry(letter) => (
            ratelock::algorithm::standing::KEY_SUFFIX,
            format!("{}{until}", *letter as char),
        ),
        Held::Override(rules) => (
            ratelock::algorithm::overrides::KEY_SUFFIX,
            ratelock::algorithm::overrides::Overrides::new(rules.parse().expect("bench override")).to_text(),
        ),
    };
    let mut pipe = redis::pipe();
    for n in 0..KEYSPACE {
        let mut key = Vec::new();
        ratelock::key::write_base(&mut key, "rl", format!("{user}:{n:012}").as_bytes());
        key.extend_from_slice(suffix);
        pipe.cmd("SET")
            .arg(key)
            .arg(&text)
            .arg("PX")
            .arg(86_400_000)
            .ignore();
    }
    let _: () = pipe.query(connection).expect("writing what the keys hold");
}

pub fn rows(notes: &mut Vec<String>) -> Vec<Row> {
    let module = module_path();
    let server = match &module {
        Some(so) => RedisServer::start_with(&["--loadmodule", &so.display().to_string()]),
        None => RedisServer::start(),
    };
    let mut connection = server.connection();
    let sha = load_script(&mut connection, &LIMIT_SCRIPT);
    let library = ratelock::store::function_library();
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(library.code)
        .query(&mut connection)
        .expect("FUNCTION LOAD of ratelock's library");
    let run = BenchmarkRun {
        requests: 100_000,
        clients: 50,
        pipeline: 16,
        keyspace: Some(KEYSPACE),
    };
    for case in &CASES {
        write_held(&mut connection, case.user, &case.held);
    }
    let mut rows = Vec::new();
    for (path, stat) in [
        ("limit.lua (FCALL)", "fcall"),
        ("limit.lua (EVALSHA)", "evalsha"),
        ("the module", "ratelock.limit"),
    ] {
        if stat == "ratelock.limit" && module.is_none() {
            notes.push(
                "policy cost: the module was not built (RATELOCK_MODULE_SO unset): no module rows".into(),
            );
            continue;
        }
        let commands: Vec<Vec<String>> = CASES
            .iter()
            .map(|case| {
                let rules: Rules = case.rule.parse().expect("bench rule");
                let call = ScriptCall::hit_all("rl", &format!("{}:__rand_int__", case.user), rules.iter());
                match stat {
                    "evalsha" => [vec!["EVALSHA".to_owned()], call.evalsha_args(&sha)].concat(),
                    // FCALL <function> and EVALSHA's arguments after the SHA1.
                    "fcall" => [
                        vec!["FCALL".to_owned(), library.limit_function.to_owned()],
                        call.evalsha_args(&sha)[1..].to_vec(),
                    ]
                    .concat(),
                    _ => call.module_command(),
                }
            })
            .collect();
        // The cases take turns, round after round, so that a slow spell of the machine falls on all of
        // them alike; each row is the median of its rounds.
        let mut measured: Vec<Vec<f64>> = vec![Vec::new(); CASES.len()];
        for _ in 0..ROUNDS {
            for ((case, command), micros) in CASES.iter().zip(&commands).zip(&mut measured) {
                let _: () = redis::cmd("CONFIG")
                    .arg("RESETSTAT")
                    .query(&mut connection)
                    .expect("RESETSTAT");
                if let Err(problem) = requests_per_second(server.port(), command, &run) {
                    notes.push(format!("policy cost, {path}, {}: {problem}", case.label));
                }
                micros.extend(command_stat(&mut connection, stat, "usec_per_call"));
            }
        }
        let plain = median(&measured[0]);
        for (case, micros) in CASES.iter().zip(&measured) {
            rows.push(Row {
                name: format!("server µs per call, {path}: {}", case.label),
                unit: Unit::Micros,
                measured: median(micros),
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
        "policy cost: redis-benchmark {} -r {KEYSPACE} -n {} per row and round, the rows taking turns for \
         {ROUNDS} rounds, each the median of its rounds; each policy row against the plain \
         rule's µs on the same path in the same run (the plain rule reads the key's entry too: every \
         check does); the list rows' keys all hold an entry, written first",
        run.describe(),
        run.requests
    ));
    rows
}

/// The median of `values` (the bench's nearest-rank percentile), `None` when there is none.
fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    (!sorted.is_empty()).then(|| crate::lock_handoff::percentile(&sorted, 0.5))
}
