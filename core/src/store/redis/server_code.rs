//! Which code runs the Redis store's calls on the server: the ratelock module's commands when the
//! server has them, else the scripts as Redis Functions (`FCALL`, Redis ≥ 7), else the scripts by
//! `EVALSHA`. Calls, replies and stored state are the same on every route (the module is a drop-in for
//! the scripts, and a function is the script's very text), so the choice only changes the cost.
//!
//! The store checks once per connection, and again whenever it may be talking to another server (a
//! new connection, a reconnect, a failover): `COMMAND INFO RATELOCK.LIMIT` (not `MODULE LIST`, which
//! managed services deny), `RATELOCK.VERSION` when the command exists, then `FUNCTION LIST` for the
//! library and `FUNCTION LOAD` when it is missing. A module of another contract version is left alone
//! (with one warning), and so is anything the ACL denies (NOPERM) or the server lacks. A call refused
//! without running (a module command the server no longer knows, a function flushed away) goes out
//! again at once on the next route, down to EVALSHA.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use redis::{Cmd, Value};

use super::script::LuaScript;
use crate::error::{Error, Result};
pub use crate::store::options::ServerCode;

/// The contract version of the RATELOCK.* commands this client speaks (the module's
/// `RATELOCK.VERSION`).
pub const MODULE_CONTRACT_VERSION: i64 = 5;

/// Which server code serves one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// The module's command (`RATELOCK.LIMIT ...`).
    Module,
    /// The library's function (`FCALL ratelock_limit_<hash> ...`).
    Function,
    /// The script (`EVALSHA <sha> ...`, loading it on NOSCRIPT).
    Script,
}

impl Route {
    /// The route's name where it is reported (a metric attribute): `module`, `fcall` or `evalsha`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Route::Module => "module",
            Route::Function => "fcall",
            Route::Script => "evalsha",
        }
    }
}

/// What one check of the server found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Found {
    /// The module answers this client's contract.
    pub(crate) module: bool,
    /// The `ratelock` function library is loaded (or was loaded by the check).
    pub(crate) functions: bool,
    /// Why a module that is there is not used, when that deserves to be told (a version mismatch).
    pub(crate) warning: Option<String>,
}

/// The steps of one check, sans-IO: the store sends [`Check::next_command`] and hands its reply to
/// [`Check::read`] until there is no next command.
#[derive(Debug)]
pub(crate) struct Check {
    step: Step,
    found: Found,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    CommandInfo,
    Version,
    ListLibrary,
    LoadLibrary,
    Done,
}

impl Check {
    /// The check a store that wants `wanted` runs (`None` when it never checks: a forced path).
    pub(crate) fn new(wanted: ServerCode) -> Option<Self> {
        let step = match wanted {
            ServerCode::Auto => Step::CommandInfo,
            ServerCode::Lua => Step::ListLibrary,
            ServerCode::Module | ServerCode::Scripts => return None,
        };
        Some(Check {
            step,
            found: Found::default(),
        })
    }

    /// The next command to send, or `None` when the check is complete.
    pub(crate) fn next_command(&self) -> Option<Cmd> {
        match self.step {
            Step::CommandInfo => {
                let mut cmd = redis::cmd("COMMAND");
                cmd.arg("INFO").arg("RATELOCK.LIMIT");
                Some(cmd)
            }
            Step::Version => Some(redis::cmd("RATELOCK.VERSION")),
            Step::ListLibrary => Some(super::functions::list_command()),
            Step::LoadLibrary => Some(super::functions::load_command()),
            Step::Done => None,
        }
    }

    /// Reads the reply to the last command. An outage or a protocol error ends the check with it (the
    /// call fails as it would have); a refusal (unknown command, NOPERM) only rules that path out.
    pub(crate) fn read(&mut self, reply: Result<Value>) -> Result<()> {
        self.step = match (self.step, reply) {
            (_, Err(err)) if is_refusal(&err) => match self.step {
                Step::CommandInfo | Step::Version => Step::ListLibrary,
                _ => Step::Done,
            },
            (Step::CommandInfo, Ok(Value::Array(items))) => {
                if items.first().is_some_and(|item| !matches!(item, Value::Nil)) {
                    Step::Version
                } else {
                    Step::ListLibrary
                }
            }
            (Step::Version, Ok(Value::Int(MODULE_CONTRACT_VERSION))) => {
                self.found.module = true;
                Step::ListLibrary
            }
            (Step::Version, Ok(other)) => {
                self.found.warning = Some(format!(
                    "the server's ratelock module answers contract version {}, this client speaks \
                     {MODULE_CONTRACT_VERSION}",
                    super::call_tag::excerpt(&other)
                ));
                Step::ListLibrary
            }
            (Step::ListLibrary, Ok(listed)) if super::functions::is_listed(&listed) => {
                self.found.functions = true;
                Step::Done
            }
            (Step::ListLibrary, Ok(Value::Array(_))) => Step::LoadLibrary,
            (Step::LoadLibrary, Ok(_)) => {
                self.found.functions = true;
                Step::Done
            }
            // Loaded by another client between our LIST and LOAD.
            (Step::LoadLibrary, reply @ Err(_)) if library_loaded(&reply) => {
                self.found.functions = true;
                Step::Done
            }
            // Another library holds one of our function names (a library that a ratelock build of
            // the same code loaded under another name, or someone else's): ours is not loaded, and a
            // call by FCALL would run that other function. The calls go by EVALSHA.
            (Step::LoadLibrary, Err(err)) if is_function_name_taken(&err) => {
                self.found.warning = Some(format!(
                    "this client's Functions library did not load, as another library holds one of its \
                     function names ({err})"
                ));
                Step::Done
            }
            (_, Err(err)) => return Err(err),
            (step, Ok(other)) => {
                return Err(Error::Protocol(format!(
                    "unexpected reply while checking the server's code ({step:?}): {}",
                    super::call_tag::excerpt(&other)
                )))
            }
        };
        Ok(())
    }

    /// What the check found (once `next_command` is `None`).
    pub(crate) fn found(self) -> Found {
        self.found
    }
}

const CHECKED: u8 = 1;
const MODULE: u8 = 2;
const FUNCTIONS: u8 = 4;

/// One process's choice for one store: what the last check found, and for which connection
/// generation (bumped by every new connection and every failure that may lead to another server).
#[derive(Debug)]
pub(crate) struct CodeChoice {
    wanted: ServerCode,
    found: AtomicU8,
    checked_at: AtomicU64,
    generation: Arc<AtomicU64>,
    warned: AtomicBool,
    /// When [`forget_at_most_every`](Self::forget_at_most_every) last forgot (µs since the Unix epoch).
    forgot_at_us: AtomicU64,
}

impl CodeChoice {
    /// A choice with nothing checked yet.
    pub(crate) fn new(wanted: ServerCode) -> Self {
        CodeChoice {
            wanted,
            found: AtomicU8::new(0),
            checked_at: AtomicU64::new(0),
            generation: Arc::new(AtomicU64::new(1)),
            warned: AtomicBool::new(false),
            forgot_at_us: AtomicU64::new(0),
        }
    }

    /// What the store wants.
    pub(crate) fn wanted(&self) -> ServerCode {
        self.wanted
    }

    /// The counter a connection bumps when it opens a new socket (shared with the connections).
    pub(crate) fn generation(&self) -> Arc<AtomicU64> {
        self.generation.clone()
    }

    /// Marks what was checked as stale: the next call checks again (a reconnect may follow).
    pub(crate) fn forget(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// [`forget`](Self::forget), unless it forgot less than `interval` ago: a cluster's, where one dead
    /// node's calls fail one after another and each check asks the nodes still answering, while a
    /// failover that brings a master with other code is still found within `interval`.
    pub(crate) fn forget_at_most_every(&self, interval: std::time::Duration) {
        let now = crate::clock::now_us();
        let last = self.forgot_at_us.load(Ordering::Relaxed);
        let due = now.saturating_sub(last) >= crate::clock::micros(interval);
        if due
            && self
                .forgot_at_us
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.forget();
        }
    }

    /// The route of a call whose script the module serves (`module_command`) or not, or `None` when a
    /// check is due.
    pub(crate) fn route(&self, module_command: bool) -> Option<Route> {
        match self.wanted {
            ServerCode::Module if module_command => return Some(Route::Module),
            ServerCode::Module | ServerCode::Scripts => return Some(Route::Script),
            ServerCode::Auto | ServerCode::Lua => {}
        }
        if self.checked_at.load(Ordering::Acquire) != self.generation.load(Ordering::Acquire) {
            return None;
        }
        let found = self.found.load(Ordering::Acquire);
        if found & CHECKED == 0 {
            return None;
        }
        Some(pick(found, module_command))
    }

    /// Records what a check started at `generation` found (and warns, once, about a reason), and
    /// answers the route of the call that ran the check (whose script the module serves or not).
    pub(crate) fn record(&self, generation: u64, found: Found, module_command: bool) -> Route {
        if let Some(warning) = &found.warning {
            if !self.warned.swap(true, Ordering::Relaxed) {
                eprintln!("ratelock: {warning}; using the Lua scripts");
            }
        }
        let bits =
            CHECKED | if found.module { MODULE } else { 0 } | if found.functions { FUNCTIONS } else { 0 };
        self.found.store(bits, Ordering::Release);
        self.checked_at.store(generation, Ordering::Release);
        pick(bits, module_command)
    }

    /// The generation a check starts at (read before its first command is sent).
    pub(crate) fn current(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// After `route` was refused without running (the module's command unknown or denied, a function
    /// missing or denied): the next route to take for this call, until the next check. The module
    /// forced on a server that refuses it is the configuration error.
    pub(crate) fn refused(&self, route: Route, why: &Error) -> Result<Route> {
        if self.wanted == ServerCode::Module {
            return Err(Error::configuration(
                "server_code",
                format!(
                    "\"module\" was asked for, but the server refused the ratelock module's command ({why})"
                ),
            ));
        }
        let drop = match route {
            Route::Module => MODULE,
            Route::Function => FUNCTIONS,
            Route::Script => return Ok(Route::Script),
        };
        let left = self.found.fetch_and(!drop, Ordering::AcqRel) & !drop;
        Ok(if route == Route::Module && left & FUNCTIONS != 0 {
            Route::Function
        } else {
            Route::Script
        })
    }
}

/// The route a check's findings (`bits`) give a call whose script the module serves or not.
fn pick(bits: u8, module_command: bool) -> Route {
    if module_command && bits & MODULE != 0 {
        Route::Module
    } else if bits & FUNCTIONS != 0 {
        Route::Function
    } else {
        Route::Script
    }
}

/// Whether `err`, met by a call on `route`, means the route refused it without running it.
pub(crate) fn refused_without_running(route: Route, err: &Error) -> bool {
    route != Route::Script && (is_refusal(err) || is_function_missing(err))
}

/// Whether an error is `FCALL`'s "Function not found" (a `FUNCTION FLUSH`, or a server that lost the
/// library): the function did not run.
pub(crate) fn is_function_missing(err: &Error) -> bool {
    err.to_string().contains("Function not found")
}

/// Whether `FUNCTION LOAD`'s reply leaves the library loaded: by this call, or already by another
/// client (`Library '<name>' already exists`, for this very name).
pub(crate) fn library_loaded(reply: &Result<Value>) -> bool {
    match reply {
        Ok(_) => true,
        Err(err) => err.to_string().contains(&format!(
            "Library '{}' already exists",
            super::functions::LIBRARY.name
        )),
    }
}

/// Whether `FUNCTION LOAD` failed because a function of the library is already registered by another
/// library (`Function <name> already exists`).
fn is_function_name_taken(err: &Error) -> bool {
    let text = err.to_string();
    text.contains("Function ") && text.contains(" already exists")
}

/// The query parameters a URL of each scheme may carry besides `server_code`: what redis-rs reads
/// from it. Cluster, Sentinel and Redlock URLs list several servers and take none of them.
fn accepted_parameters(url: &str) -> &'static [&'static str] {
    if url.starts_with("redis+unix://") || url.starts_with("unix://") {
        &["db", "user", "pass", "protocol"]
    } else if url.starts_with("redis://") || url.starts_with("rediss://") {
        &["protocol"]
    } else {
        &[]
    }
}

/// `url` without its `server_code=auto|module|lua|scripts` query parameter, and that parameter's
/// choice: the way to choose from a binding (Python, Node), whose store options are a URL and a
/// timeout. A parameter the URL's scheme does not take is an invalid argument (a misspelt one would
/// otherwise be ignored without a word).
pub(crate) fn take_from_url(url: &str) -> Result<(String, Option<ServerCode>)> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), None));
    };
    let accepted = accepted_parameters(base);
    let mut chosen = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        if let Some(value) = pair.strip_prefix("server_code=") {
            chosen = Some(value.parse()?);
            continue;
        }
        let name = pair.split_once('=').map_or(pair, |(name, _)| name);
        if !accepted.contains(&name) {
            let takes = match accepted {
                [] => "only `server_code`".to_owned(),
                names => format!("`server_code`, `{}`", names.join("`, `")),
            };
            let scheme = base.split_once("://").map_or("this", |(scheme, _)| scheme);
            return Err(Error::invalid_argument(
                "url",
                format!(
                    "unknown query parameter `{}`: a {scheme}:// URL takes {takes}",
                    crate::excerpt::of(name)
                ),
            ));
        }
        kept.push(pair);
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, chosen))
}

/// Whether an error means the server refused the command without running it: an unknown command or
/// an ACL denial (NOPERM).
pub(crate) fn is_refusal(err: &Error) -> bool {
    let text = err.to_string();
    text.contains("NOPERM") || text.contains("unknown command")
}

/// `cmd` (an `EVALSHA sha numkeys key... arg...` of `script`) as the call `route` takes: the module's
/// command `RATELOCK.X numkeys key... arg...`, `FCALL <function> numkeys key... arg...`, or `cmd`.
pub(crate) fn call_for(route: Route, script: &LuaScript, cmd: &Cmd) -> Cmd {
    // Sized once from the script call's own arguments (growing it argument by argument cost more than
    // the copy itself).
    let (args, bytes) = cmd
        .args_iter()
        .skip(2)
        .fold((2, 32), |(args, bytes), arg| match arg {
            redis::Arg::Simple(arg) => (args + 1, bytes + arg.len()),
            _ => (args, bytes),
        });
    let mut call = redis::Cmd::with_capacity(args, bytes + script.function().len());
    match (route, script.module_command) {
        (Route::Module, Some(name)) => call.arg(name),
        (Route::Function, _) => call.arg("FCALL").arg(script.function()),
        _ => return cmd.clone(),
    };
    for arg in cmd.args_iter().skip(2) {
        if let redis::Arg::Simple(bytes) = arg {
            call.arg(bytes);
        }
    }
    call
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redis::script::LIMIT;

    #[test]
    fn each_route_keeps_every_argument_after_the_script() {
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha.arg(&LIMIT.sha).arg(1).arg("k").arg("hit").arg("");
        let mut module = redis::cmd("RATELOCK.LIMIT");
        module.arg(1).arg("k").arg("hit").arg("");
        let mut fcall = redis::cmd("FCALL");
        fcall.arg(LIMIT.function()).arg(1).arg("k").arg("hit").arg("");
        let packed = |route| call_for(route, &LIMIT, &evalsha).get_packed_command();
        assert_eq!(packed(Route::Module), module.get_packed_command());
        assert_eq!(packed(Route::Function), fcall.get_packed_command());
        assert_eq!(packed(Route::Script), evalsha.get_packed_command());
    }

    #[test]
    fn a_check_is_due_after_every_new_connection() {
        let choice = CodeChoice::new(ServerCode::Auto);
        assert_eq!(choice.route(true), None);
        let both = Found {
            module: true,
            functions: true,
            warning: None,
        };
        choice.record(choice.current(), both, true);
        assert_eq!(choice.route(true), Some(Route::Module));
        assert_eq!(
            choice.route(false),
            Some(Route::Function),
            "a script the module does not serve"
        );
        choice.forget();
        assert_eq!(
            choice.route(true),
            None,
            "a new connection may reach another server"
        );
        choice.record(choice.current(), Found::default(), true);
        assert_eq!(choice.route(true), Some(Route::Script));
    }

    #[test]
    fn a_refused_route_falls_back_one_step_at_a_time() {
        let choice = CodeChoice::new(ServerCode::Auto);
        let both = Found {
            module: true,
            functions: true,
            warning: None,
        };
        choice.record(choice.current(), both, true);
        let why = Error::configuration("commands", "ERR unknown command");
        assert_eq!(choice.refused(Route::Module, &why).unwrap(), Route::Function);
        assert_eq!(choice.route(true), Some(Route::Function));
        assert_eq!(choice.refused(Route::Function, &why).unwrap(), Route::Script);
        assert_eq!(choice.route(true), Some(Route::Script));
    }

    #[test]
    fn the_check_reads_each_reply_as_the_contract_says() {
        let mut check = Check::new(ServerCode::Auto).unwrap();
        check.read(Ok(Value::Array(vec![Value::Array(vec![])]))).unwrap();
        // A module of another contract version (here the one before) is left alone, with a warning.
        check.read(Ok(Value::Int(MODULE_CONTRACT_VERSION - 1))).unwrap();
        check.read(Ok(Value::Array(vec![]))).unwrap();
        check.read(Ok(Value::BulkString(b"ratelock_x".to_vec()))).unwrap();
        assert!(check.next_command().is_none());
        let found = check.found();
        assert!(!found.module && found.functions && found.warning.is_some());

        let mut denied = Check::new(ServerCode::Auto).unwrap();
        let noperm = Error::configuration("acl", "NOPERM this user has no permissions");
        denied.read(Err(noperm.clone())).unwrap();
        denied.read(Err(noperm)).unwrap();
        assert!(denied.next_command().is_none());
        assert_eq!(denied.found(), Found::default());

        // Our library already there: loaded. One of its names held by another library: not loaded.
        let mut raced = Check::new(ServerCode::Lua).unwrap();
        raced.read(Ok(Value::Array(vec![]))).unwrap();
        let ours = format!(
            "ERR Library '{}' already exists",
            super::super::functions::LIBRARY.name
        );
        raced.read(Err(Error::Protocol(ours))).unwrap();
        assert!(raced.found().functions);
        let mut squatted = Check::new(ServerCode::Lua).unwrap();
        squatted.read(Ok(Value::Array(vec![]))).unwrap();
        let taken = format!("ERR Function {} already exists", LIMIT.function());
        squatted.read(Err(Error::Protocol(taken))).unwrap();
        assert!(squatted.next_command().is_none());
        let found = squatted.found();
        assert!(!found.functions && found.warning.is_some());
        let other = "ERR Library 'ratelock_0123456789ab' already exists".to_owned();
        let mut elsewhere = Check::new(ServerCode::Lua).unwrap();
        elsewhere.read(Ok(Value::Array(vec![]))).unwrap();
        assert!(elsewhere.read(Err(Error::Protocol(other))).is_err());

        let mut outage = Check::new(ServerCode::Lua).unwrap();
        assert!(outage
            .read(Err(Error::StoreUnavailable("refused".into())))
            .is_err());
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
        assert_eq!(
            take_from_url("redis+unix:///tmp/r.sock?db=2&server_code=lua").unwrap(),
            ("redis+unix:///tmp/r.sock?db=2".to_owned(), Some(ServerCode::Lua))
        );
        // A URL that still carries it (the Node wire path reads the URL as given) parses alike.
        let endpoint = super::super::endpoint::Endpoint::from_url("redis://h:1/?server_code=lua").unwrap();
        assert_eq!(endpoint.map(|e| e.port()), Some(1));
    }

    #[test]
    fn a_query_parameter_the_scheme_does_not_take_is_refused() {
        for (url, unknown) in [
            ("redis://h:1/?server-code=lua", "server-code"),
            ("redis://h:1/?protocol=resp2&timeout=5", "timeout"),
            ("rediss://h:1/?db=2", "db"),
            ("redis+cluster://a:1,b:2?protocol=resp3", "protocol"),
            ("redis+sentinel://a:1,b:2/main?sever_code=lua", "sever_code"),
        ] {
            let error = take_from_url(url).unwrap_err();
            assert!(error.is_invalid_argument(), "{url}: {error}");
            assert!(
                error.to_string().contains(&format!("`{unknown}`")),
                "{url}: {error}"
            );
        }
        assert!(take_from_url("redis+cluster://a:1,b:2?server_code=scripts").is_ok());
        assert!(take_from_url("redis://h:1/?").is_ok());
    }

    #[test]
    fn forced_choices_never_check() {
        assert!(Check::new(ServerCode::Scripts).is_none());
        assert!(Check::new(ServerCode::Module).is_none());
        let scripts = CodeChoice::new(ServerCode::Scripts);
        assert_eq!(scripts.route(true), Some(Route::Script));
        let module = CodeChoice::new(ServerCode::Module);
        assert_eq!(module.route(true), Some(Route::Module));
        let why = Error::configuration("commands", "ERR unknown command");
        assert!(module
            .refused(Route::Module, &why)
            .unwrap_err()
            .is_configuration());
    }
}
