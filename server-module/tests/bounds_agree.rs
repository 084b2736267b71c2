//! Numbers out of bounds get one behaviour on both server paths (limit.lua and RATELOCK.*): a stored
//! state no ratelock code writes (`nan`, `hello`, a number past 2^53, a negative or fractional one)
//! fails the call, rather than the module taking it for an empty key (and admitting) while the script
//! read it as a huge one (and denied); a given `now` past 2^52 is refused; a fencing counter at
//! 2^53 - 1 mints no token that would wrap or leave JavaScript's exact range; a key's ban or list
//! entry that no ratelock code writes fails the call alike.

mod common;

use common::{connect, run, script_or_module, start_server};

/// Each algorithm's key and how a corrupt value is planted in it.
const PLANTED: &[(&str, &str, &[&str])] = &[
    ("g", "rl:{c}:g5/1000", &["SET"]),
    ("tb", "rl:{c}:tb5/1000", &["HSET", "t"]),
    ("lb", "rl:{c}:lb5/1000", &["HSET", "v"]),
    ("fw", "rl:{c}:fw5/1000", &["HSET", "c"]),
    ("sw", "rl:{c}:sw5/1000", &["HSET", "p"]),
];

/// The entry key (ban or list entry) of the user key `{c}`, last of every limit call's keys.
const ENTRY: &str = "rl:{c}:standing";

fn limit_args(code: &str, now: &str) -> Vec<String> {
    vec![
        "hit".into(),
        now.into(),
        "1".into(),
        code.into(),
        "5".into(),
        "1000000".into(),
        "5".into(),
        "0".into(),
    ]
}

#[test]
fn corrupt_state_fails_the_call_on_both_paths() {
    let server = start_server();
    let mut con = connect(&server);
    for (code, key, plant) in PLANTED {
        for value in ["nan", "hello", "99999999999999999999", "-5", "1.5"] {
            let mut errors = Vec::new();
            for module in [false, true] {
                let _: () = redis::cmd("DEL").arg(*key).query(&mut con).unwrap();
                let mut cmd = redis::cmd(plant[0]);
                cmd.arg(*key);
                if plant.len() > 1 {
                    // A hash: the other fields plausible, this one corrupt.
                    cmd.arg("w")
                        .arg("1763800000")
                        .arg("l")
                        .arg("1763800000000000")
                        .arg("t")
                        .arg("1")
                        .arg("v")
                        .arg("1")
                        .arg("c")
                        .arg("1")
                        .arg("p")
                        .arg("1");
                    cmd.arg(plant[1]).arg(value);
                } else {
                    cmd.arg(value);
                }
                let _: () = cmd.query(&mut con).unwrap();
                let args = limit_args(code, "1763800000000000");
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let reply = run(&mut con, &script_or_module(module, "limit", &[key, ENTRY], &args));
                errors.push(reply.unwrap_err());
            }
            for error in &errors {
                assert!(
                    error.contains("ERR ratelock: unexpected state"),
                    "{code} {value}: {error}"
                );
            }
        }
    }
}

#[test]
fn a_corrupt_entry_fails_the_call_on_both_paths() {
    let server = start_server();
    let mut con = connect(&server);
    let now = "1763800000000000";
    for value in [
        "",
        "b",
        "x1763800000001000",
        "B1763800000001000",
        " b1763800000001000",
        "b-1",
        "b1.5",
        "bnan",
        "b1763800000001000 ",
        "b12345678901234567",
        "b9007199254740992",
        "d99999999999999999999",
    ] {
        for (code, key, _) in PLANTED {
            let mut errors = Vec::new();
            for module in [false, true] {
                let _: () = redis::cmd("DEL").arg(*key).arg(ENTRY).query(&mut con).unwrap();
                let _: () = redis::cmd("SET").arg(ENTRY).arg(value).query(&mut con).unwrap();
                let args = limit_args(code, now);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let reply = run(&mut con, &script_or_module(module, "limit", &[key, ENTRY], &args));
                errors.push(reply.unwrap_err());
            }
            assert!(
                errors[0].contains("ERR ratelock: unexpected state at rl:{c}:standing"),
                "{code} {value:?}: {}",
                errors[0]
            );
            // Redis adds where in the script an error was raised; the module's text is the rest.
            let script = errors[0].split(" script: ").next().unwrap();
            assert_eq!(script, errors[1], "{code} {value:?}: script, then module");
        }
    }
    // The largest entry every path keeps exact is read, and answers (a deny-list entry, far off).
    for module in [false, true] {
        let _: () = redis::cmd("SET")
            .arg(ENTRY)
            .arg("d9007199254740991")
            .query(&mut con)
            .unwrap();
        let args = limit_args("g", now);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply = run(
            &mut con,
            &script_or_module(module, "limit", &["rl:{c}:g5/1000", ENTRY], &args),
        )
        .unwrap();
        let wait = 9007199254740991 - 1763800000000000_i64;
        assert_eq!(
            reply,
            redis::Value::Array([2, 0, 5, 0, wait, wait].map(redis::Value::Int).to_vec()),
            "module {module}"
        );
    }
}

#[test]
fn a_given_now_past_two_to_the_52_is_refused_on_both_paths() {
    let server = start_server();
    let mut con = connect(&server);
    for (now, refused) in [
        ("4503599627370496", false),
        ("4503599627370497", true),
        ("9223372036854775807", true),
        ("-1", true),
        ("abc", true),
    ] {
        for module in [false, true] {
            let args = limit_args("g", now);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let reply = run(
                &mut con,
                &script_or_module(module, "limit", &["rl:{now}:g5/1000", "rl:{now}:standing"], &args),
            );
            if refused {
                let error = reply.unwrap_err();
                assert!(
                    error.contains("now must be empty or an integer"),
                    "now {now}, module {module}: {error}"
                );
            } else {
                assert!(reply.is_ok(), "now {now}, module {module}: {reply:?}");
            }
        }
    }
}

#[test]
fn a_fencing_counter_at_its_bound_mints_no_token_on_both_paths() {
    let server = start_server();
    let mut con = connect(&server);
    for module in [false, true] {
        let (lease, fence) = ("rl:{f}:lock", "rl:{f}:fence");
        let _: () = redis::cmd("DEL").arg(lease).arg(fence).query(&mut con).unwrap();
        let _: () = redis::cmd("SET")
            .arg(fence)
            .arg("9007199254740990")
            .query(&mut con)
            .unwrap();
        let args = ["owner-1", "10000000", "0", ""];
        let granted = run(
            &mut con,
            &script_or_module(module, "lock_acquire", &[lease, fence], &args),
        )
        .unwrap();
        assert_eq!(
            granted,
            redis::Value::Array(vec![
                redis::Value::Int(1),
                redis::Value::Int(9007199254740991),
                redis::Value::Int(1)
            ])
        );
        let _: () = redis::cmd("DEL").arg(lease).query(&mut con).unwrap();
        let exhausted = run(
            &mut con,
            &script_or_module(module, "lock_acquire", &[lease, fence], &args),
        )
        .unwrap_err();
        assert!(
            exhausted.contains("fencing counter") && exhausted.contains("exhausted"),
            "module {module}: {exhausted}"
        );
        let _: () = redis::cmd("SET")
            .arg(fence)
            .arg("9223372036854775807")
            .query(&mut con)
            .unwrap();
        let corrupt = run(
            &mut con,
            &script_or_module(module, "lock_acquire", &[lease, fence], &args),
        )
        .unwrap_err();
        assert!(corrupt.contains("ERR ratelock:"), "module {module}: {corrupt}");
    }
}

#[test]
fn a_calendar_offset_of_the_smallest_integer_is_a_bad_rule_on_both_paths() {
    // The module took its absolute value, which i64 has none of: a panic (debug) or, wrapped, UTC.
    let server = start_server();
    let mut con = connect(&server);
    let mut args = limit_args("cd", "1763800000000000");
    args[5] = i64::MIN.to_string();
    for module in [false, true] {
        let keys = ["rl:{c}:cd5", ENTRY];
        let refused = run(
            &mut con,
            &script_or_module(module, "limit", &keys, &str_args(&args)),
        )
        .unwrap_err();
        assert!(
            refused.contains("bad rule arguments for key 1"),
            "module {module}: {refused}"
        );
    }
}

#[test]
fn the_lock_state_answers_at_the_counters_last_token_on_both_paths() {
    // A grant may mint 2^53 - 1 (above); the module's state call then failed as "exhausted".
    let server = start_server();
    let mut con = connect(&server);
    let (lease, fence) = ("rl:{s}:lock", "rl:{s}:fence");
    let _: () = redis::cmd("SET")
        .arg(fence)
        .arg("9007199254740991")
        .query(&mut con)
        .unwrap();
    let mut answers = Vec::new();
    for module in [false, true] {
        answers.push(
            run(
                &mut con,
                &script_or_module(module, "lock_state", &[lease, fence], &[]),
            )
            .unwrap(),
        );
    }
    assert_eq!(answers[0], answers[1]);
}

#[test]
fn a_force_release_deletes_a_lease_ratelock_did_not_write_on_both_paths() {
    // The operator's way out refused a lease without its token (f), left one without its owner (o) in
    // place, and met WRONGTYPE on a plain string; the script deletes whatever is there.
    let server = start_server();
    let mut con = connect(&server);
    let lease = "rl:{x}:lock";
    let plant: [&[&str]; 3] = [
        &["HSET", lease, "o", "someone"],
        &["HSET", lease, "f", "7"],
        &["SET", lease, "junk"],
    ];
    for planted in plant {
        for module in [false, true] {
            let _: () = redis::cmd("DEL").arg(lease).query(&mut con).unwrap();
            let mut cmd = redis::cmd(planted[0]);
            cmd.arg(&planted[1..]);
            let _: redis::Value = cmd.query(&mut con).unwrap();
            let freed = run(
                &mut con,
                &script_or_module(module, "lock_force_release", &[lease], &["rl:{x}:released"]),
            )
            .unwrap();
            assert_eq!(freed, redis::Value::Int(1), "module {module}, {planted:?}");
            let left: i64 = redis::cmd("EXISTS").arg(lease).query(&mut con).unwrap();
            assert_eq!(left, 0, "module {module}, {planted:?}");
        }
    }
}

#[test]
fn a_lease_past_two_to_the_52_microseconds_is_refused_by_the_module() {
    // Added to the clock, it overflowed: a panic (debug) or, wrapped, a lease that ended 1 ms after its
    // grant; a semaphore's score then left JavaScript's exact range and every later call failed.
    let server = start_server();
    let mut con = connect(&server);
    let huge = u64::MAX.to_string();
    let refused = run(
        &mut con,
        &script_or_module(
            true,
            "lock_acquire",
            &["rl:{h}:lock", "rl:{h}:fence"],
            &["o", &huge, "0", ""],
        ),
    )
    .unwrap_err();
    assert!(refused.contains("2^52"), "{refused}");
    let permits = (1u64 << 60).to_string();
    let refused = run(
        &mut con,
        &script_or_module(
            true,
            "semaphore_acquire",
            &["rl:{h}:permits"],
            &["id", "2", &permits, ""],
        ),
    )
    .unwrap_err();
    assert!(refused.contains("2^52"), "{refused}");
    // Fair and read-write leases: below 2^53 (what they parse), past 2^52.
    let long = "9007199254740000";
    let fair = [
        "rl:{h}:fair",
        "rl:{h}:fair-queue",
        "rl:{h}:fair-places",
        "rl:{h}:fence",
    ];
    let refused = run(
        &mut con,
        &script_or_module(
            true,
            "fair_lock",
            &fair,
            &["acquire", "", "g1", "0", long, "1000000", "rl:{h}:wake:"],
        ),
    )
    .unwrap_err();
    assert!(refused.contains("2^52"), "{refused}");
    let rw = [
        "rl:{h}:rw-readers",
        "rl:{h}:rw-writer",
        "rl:{h}:rw-waiting",
        "rl:{h}:fence",
    ];
    let args = [
        "acquire",
        "",
        "g1",
        "w",
        "0",
        long,
        "1000000",
        "1",
        "1",
        "rl:{h}:released",
    ];
    let refused = run(&mut con, &script_or_module(true, "rw_lock", &rw, &args)).unwrap_err();
    assert!(refused.contains("2^52"), "{refused}");
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

fn str_args(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}
