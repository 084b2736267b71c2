//! The `ratelock` binary against real redis-servers: two `lock run`s racing, a holder whose lock is
//! taken away, signals passed on, `limit` and `inspect` agreeing, `doctor` flagging an eviction
//! policy, completions, and bad input named.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ratelock::{AnyLockStore, DistributedLock, LockOptions, StoreOptions};
use ratelock_testkit::RedisServer;

fn ratelock(server: &RedisServer, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ratelock"));
    command.env("RATELOCK_URL", server.url()).args(args);
    command
}

fn run(server: &RedisServer, args: &[&str]) -> Output {
    ratelock(server, args).output().expect("running ratelock")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn two_lock_runs_race_one_fails_or_waits_as_asked() {
    let server = RedisServer::start();
    let mut holder = ratelock(
        &server,
        &["lock", "run", "nightly", "--ttl", "5s", "--", "sleep", "1"],
    )
    .stdout(Stdio::null())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let busy = run(&server, &["lock", "run", "nightly", "--", "true"]);
    assert_eq!(busy.status.code(), Some(75), "{}", stderr(&busy));
    assert!(stderr(&busy).contains("held"), "{}", stderr(&busy));
    let timed_out = run(
        &server,
        &["lock", "run", "nightly", "--wait", "100ms", "--", "true"],
    );
    assert_eq!(timed_out.status.code(), Some(76), "{}", stderr(&timed_out));
    let started = Instant::now();
    let waited = run(
        &server,
        &[
            "lock",
            "run",
            "nightly",
            "--wait",
            "5s",
            "--",
            "sh",
            "-c",
            "echo $RATELOCK_FENCING_TOKEN; exit 7",
        ],
    );
    assert_eq!(
        waited.status.code(),
        Some(7),
        "the command's own code: {}",
        stderr(&waited)
    );
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "it waited for the holder"
    );
    let token: u64 = stdout(&waited).trim().parse().expect("a fencing token");
    assert!(token > 0);
    assert_eq!(holder.wait().unwrap().code(), Some(0));
    // Released on exit: the lock is free at once.
    let again = run(
        &server,
        &[
            "lock",
            "run",
            "nightly",
            "--",
            "sh",
            "-c",
            "echo $RATELOCK_FENCING_TOKEN",
        ],
    );
    assert_eq!(again.status.code(), Some(0));
    assert!(
        stdout(&again).trim().parse::<u64>().unwrap() > token,
        "fencing tokens rise"
    );
}

#[test]
fn a_holder_whose_lock_is_taken_away_stops_its_command_and_says_lost() {
    let server = RedisServer::start();
    let started = Instant::now();
    let holder = ratelock(
        &server,
        &[
            "lock", "run", "deploy", "--ttl", "900ms", "--grace", "1s", "--", "sleep", "30",
        ],
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = AnyLockStore::connect(&server.url(), &StoreOptions::default())
            .await
            .unwrap();
        let lock = DistributedLock::new(store, "deploy", LockOptions::default()).unwrap();
        assert!(lock.force_release().await.unwrap(), "the CLI held it");
    });
    let output = holder.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(77), "{}", stderr(&output));
    assert!(stderr(&output).contains("lost"), "{}", stderr(&output));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "sleep 30 was stopped"
    );
}

#[test]
fn signals_reach_the_command_and_its_code_is_the_exit_code() {
    let server = RedisServer::start();
    let script = "trap 'exit 3' TERM; echo ready; sleep 20 & wait";
    let mut holder = ratelock(&server, &["lock", "run", "signals", "--", "sh", "-c", script])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert_eq!(ready.trim(), "ready");
    // SAFETY: a signal to the child this test spawned.
    unsafe {
        libc::kill(holder.id() as libc::pid_t, libc::SIGTERM);
    }
    assert_eq!(holder.wait().unwrap().code(), Some(3));
    let free = run(&server, &["lock", "run", "signals", "--", "true"]);
    assert_eq!(free.status.code(), Some(0), "released after the command ended");
}

#[test]
fn inspect_agrees_with_the_hit_that_follows() {
    let server = RedisServer::start();
    let rules = "5/minute; 100/hour using fixed_window";
    for _ in 0..2 {
        assert_eq!(
            run(&server, &["limit", "hit", "user:7", rules]).status.code(),
            Some(0)
        );
    }
    let inspected = run(&server, &["--json", "inspect", "user:7", rules]);
    assert_eq!(inspected.status.code(), Some(0), "{}", stderr(&inspected));
    let view: serde_json::Value = serde_json::from_str(&stdout(&inspected)).unwrap();
    let next = &view["next_hit"];
    let hit = run(&server, &["--json", "limit", "hit", "user:7", rules]);
    let hit: serde_json::Value = serde_json::from_str(&stdout(&hit)).unwrap();
    assert_eq!(next["allowed"], hit["allowed"]);
    assert_eq!(next["remaining"], hit["remaining"]);
    assert_eq!(next["rules"][1]["remaining"], hit["rules"][1]["remaining"]);
    assert_eq!(view["rules"][1]["fields"]["c"], "2", "{view}");
    let text = stdout(&run(&server, &["inspect", "user:7", rules]));
    assert!(text.contains("3 of 100 counted"), "{text}");
    // Denied: exit 1, and the text says why.
    run(&server, &["limit", "hit", "user:7", rules, "--cost", "2"]);
    let denied = run(&server, &["limit", "peek", "user:7", rules]);
    assert_eq!(denied.status.code(), Some(1));
    assert!(
        stdout(&denied).starts_with("denied by 5/minute"),
        "{}",
        stdout(&denied)
    );
}

#[test]
fn inspect_reads_a_rules_state_as_its_override_decides_it() {
    // A tenant's plan raises 5/minute to 50/minute (a fixed window) and a token bucket's 4/second to
    // 40/second, whose state is a bucket of its own. Inspect must count against the override's limit
    // and read the override's bucket, as the next hit does.
    let server = RedisServer::start();
    let rules = "5/minute using fixed_window; 4/second using token_bucket";
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let limiter = ratelock::Limiter::connect(&server.url()).await.unwrap();
        let plan = limiter
            .rules("50/minute using fixed_window; 40/second using token_bucket")
            .unwrap();
        limiter.set_override("tenant:9", &plan, None, None).await.unwrap();
    });
    for _ in 0..3 {
        assert_eq!(
            run(&server, &["limit", "hit", "tenant:9", rules]).status.code(),
            Some(0)
        );
    }
    let text = stdout(&run(&server, &["inspect", "tenant:9", rules]));
    assert!(text.contains("3 of 50 counted"), "{text}");
    assert!(text.contains("tokens of 40"), "{text}");
    assert!(text.contains("as 50/minute"), "{text}");
    let view: serde_json::Value =
        serde_json::from_str(&stdout(&run(&server, &["--json", "inspect", "tenant:9", rules]))).unwrap();
    // The hits ran as separate commands, so the bucket refilled a little between them.
    let bucket = view["rules"][1]["state"].as_str().unwrap();
    let tokens: f64 = bucket.split(' ').next().unwrap().parse().unwrap();
    assert!(
        bucket.contains(" tokens of 40 as of") && (37.0..40.0).contains(&tokens),
        "the override's bucket less the 3 spent, as of its last update: {view}"
    );
}

#[test]
fn doctor_flags_an_eviction_policy_that_can_evict_limit_keys() {
    let risky = RedisServer::start_with(&["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"]);
    let report = run(&risky, &["doctor"]);
    assert_eq!(report.status.code(), Some(1), "{}", stdout(&report));
    assert!(stdout(&report).contains("allkeys-lru"), "{}", stdout(&report));
    let safe = RedisServer::start();
    let report = run(&safe, &["--json", "doctor"]);
    assert_eq!(report.status.code(), Some(0), "{}", stdout(&report));
    let view: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    assert!(
        ["fcall", "evalsha"].contains(&view["path"].as_str().unwrap()),
        "{view}"
    );
    let checks: Vec<&str> = view["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["check"].as_str().unwrap())
        .collect();
    for check in [
        "server",
        "round trip",
        "clock",
        "topology",
        "path",
        "memory",
        "persistence",
        "permissions",
    ] {
        assert!(checks.contains(&check), "{check} missing: {view}");
    }
}

#[test]
fn doctor_checks_permissions_on_the_keys_and_channels_of_the_prefix() {
    // A user whose ACL allows other keys (or another prefix's channels) was told all was well, while
    // every limit call failed with NOPERM.
    let server = RedisServer::start();
    let mut admin = server.connection();
    let mut acl = |rules: &[&str]| {
        let mut command = redis::cmd("ACL");
        command
            .arg("SETUSER")
            .arg("doctor")
            .arg("reset")
            .arg("on")
            .arg(">pw");
        for rule in rules {
            command.arg(*rule);
        }
        let _: () = command.query(&mut admin).unwrap();
    };
    let as_doctor = |prefix: &str| {
        let url = format!("redis://doctor:pw@127.0.0.1:{}/", server.port());
        Command::new(env!("CARGO_BIN_EXE_ratelock"))
            .args(["--url", &url, "--prefix", prefix, "--json", "doctor"])
            .output()
            .unwrap()
    };
    let permissions = |report: &Output| -> Vec<String> {
        let view: serde_json::Value = serde_json::from_str(&stdout(report)).unwrap();
        view["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|finding| finding["check"] == "permissions")
            .map(|finding| format!("{} {}", finding["severity"], finding["message"]))
            .collect()
    };
    acl(&["+@all", "~other:*", "&rl:*"]);
    let other_keys = as_doctor("rl");
    assert_eq!(
        other_keys.status.code(),
        Some(1),
        "{:?}",
        permissions(&other_keys)
    );
    assert!(
        permissions(&other_keys).iter().any(|p| p.contains("EVALSHA")),
        "{:?}",
        permissions(&other_keys)
    );
    acl(&["+@all", "~*", "&rl:*"]);
    let other_channels = as_doctor("app");
    assert!(
        permissions(&other_channels).iter().any(|p| p.contains("PUBLISH")),
        "{:?}",
        permissions(&other_channels)
    );
    let fine = as_doctor("rl");
    assert_eq!(fine.status.code(), Some(0), "{:?}", permissions(&fine));
}

#[test]
fn bad_input_is_named_and_completions_print() {
    let server = RedisServer::start();
    let bad = run(&server, &["limit", "hit", "k", "10/fortnight"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("fortnight"), "{}", stderr(&bad));
    let bad_ttl = run(&server, &["lock", "run", "x", "--ttl", "soon", "--", "true"]);
    assert_eq!(bad_ttl.status.code(), Some(2));
    assert!(stderr(&bad_ttl).contains("soon"), "{}", stderr(&bad_ttl));
    let no_command = run(&server, &["lock", "run", "x"]);
    assert_eq!(no_command.status.code(), Some(2));
    let missing = run(&server, &["lock", "run", "x", "--", "/nonexistent/command"]);
    assert_eq!(missing.status.code(), Some(78));
    assert!(stderr(&missing).contains("cannot start"), "{}", stderr(&missing));
    // A command that could not start leaves the lock free: ten runs in a row each take it (a dropped
    // guard's background release was cut short by the exit, and the next run found it busy).
    for round in 0..10 {
        let again = run(
            &server,
            &["lock", "run", "x", "--ttl", "60s", "--", "/nonexistent/command"],
        );
        assert_eq!(again.status.code(), Some(78), "round {round}: {}", stderr(&again));
    }
    let completions = run(&server, &["completions", "bash"]);
    assert_eq!(completions.status.code(), Some(0));
    assert!(stdout(&completions).contains("ratelock"));
}
