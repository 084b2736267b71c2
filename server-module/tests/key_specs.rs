//! Redis ≥ 7.0 learns each RATELOCK command's keys from its key spec (`COMMAND INFO`), as a cluster
//! client routing by key specs does; `COMMAND GETKEYS` names the keys; `COMMAND DOCS` shows the
//! summary, since and arguments.

mod common;

use common::command_info::{arity, docs, key_specs, limit_getkeys, WRITE_KEY_SPEC};
use common::{connect, run, start_server};
use redis::Value;

#[test]
fn limit_declares_its_keys_after_numkeys_as_read_write() {
    let server = start_server();
    let mut con = connect(&server);
    assert_eq!(key_specs(&mut con, "RATELOCK.LIMIT"), WRITE_KEY_SPEC);
    assert_eq!(arity(&mut con, "RATELOCK.LIMIT"), -2);
}

#[test]
fn version_declares_no_keys_and_no_arguments() {
    let server = start_server();
    let mut con = connect(&server);
    assert_eq!(key_specs(&mut con, "RATELOCK.VERSION"), "[]");
    assert_eq!(arity(&mut con, "RATELOCK.VERSION"), 1);
    let err = run(&mut con, redis::cmd("RATELOCK.VERSION").arg("extra")).unwrap_err();
    assert!(err.contains("wrong number of arguments"), "{err}");
}

#[test]
fn getkeys_names_the_keys_after_numkeys() {
    let server = start_server();
    let mut con = connect(&server);
    assert_eq!(limit_getkeys(&mut con), "[a b a-standing]");
    // A key count that is not a number, or past the arguments, names no keys (and harms nothing).
    for bad in [&["x", "a"][..], &["5", "a"]] {
        let err = run(
            &mut con,
            redis::cmd("COMMAND")
                .arg("GETKEYS")
                .arg("RATELOCK.LIMIT")
                .arg(bad),
        )
        .unwrap_err();
        assert!(err.contains("Invalid arguments"), "{bad:?}: {err}");
    }
    assert_eq!(
        run(&mut con, &redis::cmd("PING")).unwrap(),
        Value::SimpleString("PONG".into())
    );
}

#[test]
fn docs_show_summary_since_and_arguments() {
    let server = start_server();
    let mut con = connect(&server);
    // Valkey (as Redis >= 7.2) shows each argument's display_text, its name when none is given.
    let limit = ["numkeys", "key", "arg"]
        .iter()
        .fold(docs(&mut con, "RATELOCK.LIMIT"), |text, name| {
            text.replace(&format!(" display_text {name}"), "")
        });
    assert!(
        limit.contains("summary Checks, and for `hit` spends, rate limits"),
        "{limit}"
    );
    assert!(
        limit.contains("since 1.0.0 group module module ratelock"),
        "{limit}"
    );
    assert!(
        limit.contains(
            "arguments [[name numkeys type integer] [name key type key key_spec_index 0 flags [optional multiple]] \
             [name arg type string flags [optional multiple]]]"
        ),
        "{limit}"
    );
    let version = docs(&mut con, "RATELOCK.VERSION");
    assert!(
        version.contains("summary Returns the version of the RATELOCK.* contract"),
        "{version}"
    );
}
