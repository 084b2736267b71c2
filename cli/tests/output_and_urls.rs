//! What `ratelock` prints and where it connects, against a real redis-server: a reader gone from its
//! output, a password never printed, the in-process memory store refused, and `doctor` under a user
//! that may not run INFO.

use std::process::{Command, Output, Stdio};

use ratelock_testkit::RedisServer;

fn ratelock(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ratelock"))
        .env("RATELOCK_URL", url)
        .args(args)
        .output()
        .expect("running ratelock")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_reader_gone_from_the_output_changes_no_exit_code() {
    // `ratelock limit hit ... | head -0`: println! panicked on the broken pipe (exit 101) after the hit
    // was spent, so a script could not tell allowed from denied.
    let server = RedisServer::start();
    let mut hit = Command::new(env!("CARGO_BIN_EXE_ratelock"))
        .env("RATELOCK_URL", server.url())
        .args(["limit", "hit", "piped", "1/hour"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(hit.stdout.take());
    let output = hit.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        !text(&output.stderr).contains("panicked"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_password_in_the_url_is_never_printed() {
    let server = RedisServer::start();
    let mut admin = server.connection();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("app")
        .arg("on")
        .arg(">s3cret-pw")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .query(&mut admin)
        .unwrap();
    let url = format!("redis://app:s3cret-pw@127.0.0.1:{}/", server.port());
    for args in [&["doctor"][..], &["--json", "doctor"][..]] {
        let report = ratelock(&url, args);
        assert!(
            text(&report.stdout).contains("app:***@"),
            "{}",
            text(&report.stdout)
        );
        assert!(
            !text(&report.stdout).contains("s3cret"),
            "{}",
            text(&report.stdout)
        );
    }
    // A URL the core refuses is quoted in its error; a password holding '/' was shown whole.
    let refused = ratelock(
        "reds://app:s3cret-pw@127.0.0.1:1/",
        &["limit", "hit", "k", "1/second"],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        !text(&refused.stderr).contains("s3cret"),
        "{}",
        text(&refused.stderr)
    );
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("slash")
        .arg("on")
        .arg(">pa/ss-pw")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .query(&mut admin)
        .unwrap();
    let slashed = format!("redis://slash:pa%2Fss-pw@127.0.0.1:{}/", server.port());
    let raw = format!("redis://slash:pa/ss-pw@127.0.0.1:{}/", server.port());
    for url in [slashed, raw] {
        let report = ratelock(&url, &["doctor"]);
        assert!(
            !text(&report.stdout).contains("ss-pw"),
            "{}",
            text(&report.stdout)
        );
        assert!(
            !text(&report.stderr).contains("ss-pw"),
            "{}",
            text(&report.stderr)
        );
    }
    let wrong = format!("redis://app:wrong-pw@127.0.0.1:{}/", server.port());
    let refused = ratelock(&wrong, &["inspect", "k"]);
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        !text(&refused.stderr).contains("wrong-pw"),
        "{}",
        text(&refused.stderr)
    );
}

#[test]
fn the_memory_store_is_refused_where_it_would_be_this_process_alone() {
    // memory:// was accepted: two `lock run`s each held "the" lock, and every hit found a full bucket.
    // Every spelling the store takes for it: an empty URL (RATELOCK_URL= in a crontab) too.
    for url in ["memory://", "memory", " memory://", ""] {
        for args in [
            &["lock", "run", "m", "--", "true"][..],
            &["limit", "hit", "k", "1/hour"][..],
        ] {
            let output = ratelock(url, args);
            assert_eq!(
                output.status.code(),
                Some(2),
                "{url:?} {args:?}: {}",
                text(&output.stderr)
            );
            assert!(
                text(&output.stderr).contains("this process alone"),
                "{}",
                text(&output.stderr)
            );
        }
    }
}

#[test]
fn doctor_under_a_user_without_info_does_not_guess() {
    // A user that may not run INFO: doctor called the server a master (it may be a replica) and took
    // the unknown version for an old one, naming EVALSHA on a Redis 7 server.
    let server = RedisServer::start();
    let mut admin = server.connection();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("noinfo")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .arg("-info")
        .query(&mut admin)
        .unwrap();
    let version: String = redis::cmd("INFO")
        .arg("server")
        .query::<String>(&mut admin)
        .unwrap();
    let major: u32 = version
        .lines()
        .find_map(|line| line.strip_prefix("redis_version:"))
        .and_then(|v| v.trim().split('.').next()?.parse().ok())
        .unwrap();
    let url = format!("redis://noinfo:pw@127.0.0.1:{}/", server.port());
    let report = ratelock(&url, &["--json", "doctor"]);
    let view: serde_json::Value = serde_json::from_str(&text(&report.stdout)).unwrap();
    let finding = |check: &str| -> String {
        view["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == check)
            .map(|f| format!("{} {}", f["severity"], f["message"]))
            .collect::<Vec<_>>()
            .join("; ")
    };
    assert!(
        finding("topology").contains("master with an unknown number"),
        "{}",
        finding("topology")
    );
    if major >= 7 {
        assert_eq!(view["path"], "fcall", "{}", finding("path"));
    }
}

#[test]
fn a_store_failure_names_the_server_it_met() {
    // "store unavailable: connecting: Connection refused" did not say which server.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://app:s3cret-pw@127.0.0.1:{port}/");
    for args in [
        &["limit", "hit", "k", "1/hour"][..],
        &["lock", "run", "x", "--", "true"][..],
    ] {
        let output = ratelock(&url, args);
        assert_eq!(
            output.status.code(),
            Some(78),
            "{args:?}: {}",
            text(&output.stderr)
        );
        let said = text(&output.stderr);
        assert!(
            said.contains(&format!("app:***@127.0.0.1:{port}")),
            "{args:?}: {said}"
        );
        assert!(!said.contains("s3cret"), "{said}");
    }
}

#[test]
fn doctor_says_the_server_refused_its_credentials_and_guesses_nothing_else() {
    // Without a password it reported "the ratelock module is not loaded" and "FUNCTION is refused
    // here", then a bare "PING failed": every refusal read as an absence.
    let server = RedisServer::start();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("default")
        .arg("resetpass")
        .arg(">only-with-this")
        .query(&mut server.connection())
        .unwrap();
    let report = ratelock(&server.url(), &["doctor"]);
    assert_ne!(report.status.code(), Some(0));
    assert!(
        text(&report.stderr).contains("PING failed"),
        "{}",
        text(&report.stderr)
    );
    assert!(
        text(&report.stderr).contains("NOAUTH"),
        "{}",
        text(&report.stderr)
    );
    assert!(
        !text(&report.stdout).contains("not loaded"),
        "{}",
        text(&report.stdout)
    );
}
