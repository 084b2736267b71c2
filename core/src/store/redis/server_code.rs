//! Which code runs the Redis store's calls on the server: the ratelock module's commands when the
//! server has them, else the Lua scripts (EVALSHA). The calls, replies and stored state are the same
//! either way (the module is a drop-in for the scripts), so the choice only changes the server's cost.
//!
//! The store asks the server once per connection, and again whenever it may be talking to another
//! server (a new connection, a reconnect, a failover): `COMMAND INFO RATELOCK.LIMIT` (not `MODULE
//! LIST`, which managed services deny), then `RATELOCK.VERSION` when the command exists. A module that
//! answers another contract version is left alone (Lua, with one warning), and so is one the ACL
//! denies (NOPERM). A module command that the server no longer knows (the module unloaded, a failover
//! to a server without it) certainly did not run: the call goes out again as EVALSHA at once.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use redis::{Cmd, Value};

use crate::error::{Error, Result};
pub use crate::store::options::ServerCode;

/// The contract version of the RATELOCK.* commands this client speaks (the module's
/// `RATELOCK.VERSION`).
pub const MODULE_CONTRACT_VERSION: i64 = 1;

/// What one check of the server found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// The module, answering this client's contract.
    Module,
    /// No usable module; the reason, when it deserves to be told (a version mismatch).
    Lua(Option<String>),
}

const UNKNOWN: u8 = 0;
const MODULE: u8 = 1;
const LUA: u8 = 2;

/// One process's choice for one store: what the last check found, and for which connection
/// generation (bumped by every new connection and every failure that may lead to another server).
pub(crate) struct CodeChoice {
    wanted: ServerCode,
    found: AtomicU8,
    checked_at: AtomicU64,
    generation: Arc<AtomicU64>,
    warned: AtomicBool,
}

impl CodeChoice {
    /// A choice with nothing checked yet.
    pub(crate) fn new(wanted: ServerCode) -> Self {
        CodeChoice {
            wanted,
            found: AtomicU8::new(UNKNOWN),
            checked_at: AtomicU64::new(0),
            generation: Arc::new(AtomicU64::new(1)),
            warned: AtomicBool::new(false),
        }
    }

    /// The counter a connection bumps when it opens a new socket (shared with the connections).
    pub(crate) fn generation(&self) -> Arc<AtomicU64> {
        self.generation.clone()
    }

    /// Marks what was checked as stale: the next call checks again (a reconnect may follow).
    pub(crate) fn forget(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether calls go to the module (`Some(true)`), to Lua (`Some(false)`), or a check is due
    /// (`None`).
    pub(crate) fn use_module(&self) -> Option<bool> {
        match self.wanted {
            ServerCode::Module => return Some(true),
            ServerCode::Lua => return Some(false),
            ServerCode::Auto => {}
        }
        if self.checked_at.load(Ordering::Acquire) != self.generation.load(Ordering::Acquire) {
            return None;
        }
        match self.found.load(Ordering::Acquire) {
            MODULE => Some(true),
            LUA => Some(false),
            _ => None,
        }
    }

    /// Records what a check started at `generation` found (and warns, once, about a reason).
    pub(crate) fn record(&self, generation: u64, found: Found) {
        let code = match &found {
            Found::Module => MODULE,
            Found::Lua(_) => LUA,
        };
        if let Found::Lua(Some(reason)) = found {
            if !self.warned.swap(true, Ordering::Relaxed) {
                eprintln!("ratelock: {reason}; using the Lua scripts");
            }
        }
        self.found.store(code, Ordering::Release);
        self.checked_at.store(generation, Ordering::Release);
    }

    /// The generation a check starts at (read before its first command is sent).
    pub(crate) fn current(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// After a module command the server did not know or may not run: Lua until the next check, or
    /// the configuration error when the module was required.
    pub(crate) fn module_refused(&self, why: &str) -> Result<()> {
        if self.wanted == ServerCode::Module {
            return Err(Error::configuration(
                "server_code",
                format!(
                    "\"module\" was asked for, but the server refused the ratelock module's command ({why})"
                ),
            ));
        }
        self.found.store(LUA, Ordering::Release);
        Ok(())
    }
}

/// `url` without its `server_code=auto|module|lua` query parameter, and that parameter's choice: the
/// way to choose from a binding (Python, Node), whose store options are a URL and a timeout.
pub(crate) fn take_from_url(url: &str) -> Result<(String, Option<ServerCode>)> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), None));
    };
    let mut chosen = None;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.strip_prefix("server_code=") {
            Some(value) => chosen = Some(value.parse()?),
            None => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, chosen))
}

/// The first command of a check: does the server know `RATELOCK.LIMIT`?
pub(crate) fn probe_command() -> Cmd {
    let mut cmd = redis::cmd("COMMAND");
    cmd.arg("INFO").arg("RATELOCK.LIMIT");
    cmd
}

/// The second, sent only when the first found the command: the module's contract version.
pub(crate) fn version_command() -> Cmd {
    redis::cmd("RATELOCK.VERSION")
}

/// What `COMMAND INFO RATELOCK.LIMIT`'s reply says: `Some(true)` the command exists, `Some(false)` it
/// does not (or the ACL denies the probe: NOPERM), `None` for a failure the call should report (an
/// outage, a protocol error).
pub(crate) fn command_exists(reply: &Result<Value>) -> Result<bool> {
    match reply {
        Ok(Value::Array(items)) => Ok(items.first().is_some_and(|item| !matches!(item, Value::Nil))),
        Ok(other) => Err(Error::Protocol(format!(
            "unexpected reply to COMMAND INFO: {}",
            super::call_tag::excerpt(other)
        ))),
        Err(err) if is_refusal(err) => Ok(false),
        Err(err) => Err(err.clone()),
    }
}

/// What `RATELOCK.VERSION`'s reply says.
pub(crate) fn version_found(reply: &Result<Value>) -> Result<Found> {
    match reply {
        Ok(Value::Int(MODULE_CONTRACT_VERSION)) => Ok(Found::Module),
        Ok(Value::Int(other)) => Ok(Found::Lua(Some(format!(
            "the server's ratelock module answers contract version {other}, this client speaks \
             {MODULE_CONTRACT_VERSION}"
        )))),
        Ok(other) => Ok(Found::Lua(Some(format!(
            "the server's RATELOCK.VERSION answered {}",
            super::call_tag::excerpt(other)
        )))),
        Err(err) if is_refusal(err) => Ok(Found::Lua(None)),
        Err(err) => Err(err.clone()),
    }
}

/// Whether an error means the server refused the command without running it: an unknown command or
/// an ACL denial (NOPERM).
pub(crate) fn is_refusal(err: &Error) -> bool {
    let text = err.to_string();
    text.contains("NOPERM") || text.contains("unknown command")
}

/// `cmd` (an `EVALSHA sha numkeys key... arg...`) as the module command `name numkeys key... arg...`.
pub(crate) fn as_module_call(cmd: &Cmd, name: &str) -> Cmd {
    let mut module = redis::cmd(name);
    for arg in cmd.args_iter().skip(2) {
        if let redis::Arg::Simple(bytes) = arg {
            module.arg(bytes);
        }
    }
    module
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_call_keeps_every_argument_after_the_script() {
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha.arg("abc").arg(1).arg("k").arg("hit").arg("");
        let module = as_module_call(&evalsha, "RATELOCK.LIMIT");
        let mut expected = redis::cmd("RATELOCK.LIMIT");
        expected.arg(1).arg("k").arg("hit").arg("");
        assert_eq!(module.get_packed_command(), expected.get_packed_command());
    }

    #[test]
    fn a_check_is_due_after_every_new_connection() {
        let choice = CodeChoice::new(ServerCode::Auto);
        assert_eq!(choice.use_module(), None);
        choice.record(choice.current(), Found::Module);
        assert_eq!(choice.use_module(), Some(true));
        choice.forget();
        assert_eq!(
            choice.use_module(),
            None,
            "a new connection may reach another server"
        );
        choice.record(choice.current(), Found::Lua(None));
        assert_eq!(choice.use_module(), Some(false));
    }

    #[test]
    fn probe_replies_read_as_the_contract_says() {
        let absent = Ok(Value::Array(vec![Value::Nil]));
        assert!(!command_exists(&absent).unwrap());
        let present = Ok(Value::Array(vec![Value::Array(vec![])]));
        assert!(command_exists(&present).unwrap());
        let denied = Err(Error::StoreUnavailable(
            "NOPERM this user has no permissions".into(),
        ));
        assert!(!command_exists(&denied).unwrap());
        assert_eq!(version_found(&Ok(Value::Int(1))).unwrap(), Found::Module);
        assert!(matches!(
            version_found(&Ok(Value::Int(2))).unwrap(),
            Found::Lua(Some(_))
        ));
    }

    #[test]
    fn the_url_may_choose_the_server_code() {
        let (url, code) = take_from_url("redis://h:1/0?server_code=lua&protocol=resp2").unwrap();
        assert_eq!(
            (url.as_str(), code),
            ("redis://h:1/0?protocol=resp2", Some(ServerCode::Lua))
        );
        let (url, code) = take_from_url("redis://h:1/?server_code=module").unwrap();
        assert_eq!((url.as_str(), code), ("redis://h:1/", Some(ServerCode::Module)));
        assert_eq!(take_from_url("redis://h:1/").unwrap().1, None);
        assert!(take_from_url("redis://h:1/?server_code=fast").is_err());
        // A URL that still carries it (the Node wire path reads the URL as given) parses alike.
        let endpoint = super::super::endpoint::Endpoint::from_url("redis://h:1/?server_code=lua").unwrap();
        assert_eq!(endpoint.map(|e| e.port()), Some(1));
    }

    #[test]
    fn forced_choices_never_check() {
        assert_eq!(CodeChoice::new(ServerCode::Lua).use_module(), Some(false));
        assert_eq!(CodeChoice::new(ServerCode::Module).use_module(), Some(true));
        assert!(CodeChoice::new(ServerCode::Module).module_refused("x").is_err());
    }
}
