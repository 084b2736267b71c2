//! The ratelock Redis module for tests: where its built cdylib is, a server that loads it, and how many
//! times a server ran a command (to show which code, module or Lua, served the calls).

use std::path::PathBuf;

use crate::RedisServer;

/// The module's cdylib: `RATELOCK_MODULE_SO`, else what `make module-build` leaves in
/// `<target>/server-module/debug/`. Panics, saying how to build it, when it is missing.
pub fn module_path() -> PathBuf {
    let path = std::env::var_os("RATELOCK_MODULE_SO").map_or_else(
        || {
            let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
                || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
                PathBuf::from,
            );
            target.join("server-module/debug/libratelock_module.so")
        },
        PathBuf::from,
    );
    assert!(
        path.exists(),
        "the ratelock module is not built at {}: run `make module-build` (or set RATELOCK_MODULE_SO)",
        path.display()
    );
    path
}

/// A redis-server that loads the module, with `extra_args` after it.
pub fn server_with_module(extra_args: &[&str]) -> RedisServer {
    let module = module_path().display().to_string();
    let mut args = vec!["--loadmodule", module.as_str()];
    args.extend_from_slice(extra_args);
    RedisServer::start_with(&args)
}

/// How many times `server` ran `command` to completion (e.g. "evalsha", "ratelock.limit", any case;
/// calls that failed, such as a NOSCRIPT, not counted), from `INFO commandstats`.
pub fn command_calls(server: &RedisServer, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut server.connection())
        .expect("INFO commandstats");
    let prefix = format!("cmdstat_{}:", command.to_ascii_lowercase());
    let Some(fields) = info
        .lines()
        .find_map(|line| line.to_ascii_lowercase().strip_prefix(&prefix).map(str::to_owned))
    else {
        return 0;
    };
    let field = |name: &str| -> u64 {
        fields
            .split(',')
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    field("calls") - field("failed_calls")
}
