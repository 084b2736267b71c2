//! One script call's walk along the server's code (sans-IO), the one both Redis connections take (the
//! async store's and the blocking lane's): the call goes on the route the last check gave (the module's
//! command, the library's function); a route that refuses it without running it gives way to the next
//! (a flushed library is loaded again first, once per call), down to `EVALSHA`, which each connection
//! runs itself (it loads the script on NOSCRIPT in its own way). The connection sends each
//! [`Step::Send`] and hands the reply to [`RouteWalk::next`].

use redis::{Cmd, Value};

use super::functions;
use super::packing;
use super::script::LuaScript;
use super::server_code::{
    call_for, is_function_missing, library_loaded, refused_without_running, CodeChoice, Route,
};
use crate::error::{Error, Result};

/// What the connection does next.
#[derive(Debug)]
pub(crate) enum Step {
    /// Send this command and hand its reply to [`RouteWalk::next`].
    Send(Cmd),
    /// The call's reply (or why it cannot run).
    Reply(Result<Value>),
    /// Run the call as `EVALSHA` (the last route).
    Script,
}

/// Where one call is on its way along the routes.
pub(crate) struct RouteWalk<'s> {
    script: &'s LuaScript,
    route: Route,
    /// The library was loaded again for this call (a second "not found" is a refusal).
    reloaded: bool,
    /// The refusal a `FUNCTION LOAD` in flight answers (its reply comes next).
    loading: Option<Error>,
}

impl std::fmt::Debug for RouteWalk<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteWalk")
            .field("route", &self.route)
            .field("reloaded", &self.reloaded)
            .field("loading", &self.loading.is_some())
            .finish()
    }
}

impl<'s> RouteWalk<'s> {
    /// A call of `script` starting on `route`.
    pub(crate) fn new(script: &'s LuaScript, route: Route) -> Self {
        RouteWalk {
            script,
            route,
            reloaded: false,
            loading: None,
        }
    }

    /// The route the call is on.
    pub(crate) fn route(&self) -> Route {
        self.route
    }

    /// Whether the next reply is a `FUNCTION LOAD`'s (hand it to [`next`](Self::next)).
    pub(crate) fn is_loading(&self) -> bool {
        self.loading.is_some()
    }

    /// The first step of `cmd` (an `EVALSHA` of the script, with its call tag).
    pub(crate) fn start(&self, cmd: &Cmd) -> Step {
        match self.route {
            Route::Script => Step::Script,
            route => Step::Send(call_for(route, self.script, cmd)),
        }
    }

    /// Writes the call on the route it is on (`cmd` itself on the script's) into `out`, for a
    /// connection that sends it anew (a first time, or on a fresh connection; a library load that
    /// never went out is dropped).
    pub(crate) fn resend(&mut self, cmd: &Cmd, out: &mut Vec<u8>) {
        self.loading = None;
        packing::write_call_on(self.route, self.script, cmd, out);
    }

    /// Whether `reply`, the answer to the call sent on the walk's route, is the call's reply: true
    /// unless the route refused the call without running it (then [`next`](Self::next) says where it
    /// goes). A connection that wrote the call's bytes without a command asks this first, and builds
    /// the command only when it is false.
    pub(crate) fn settles(&self, reply: &Result<Value>) -> bool {
        self.loading.is_none() && !matches!(reply, Err(err) if refused_without_running(self.route, err))
    }

    /// The step after `reply`, the answer to the last [`Step::Send`].
    pub(crate) fn next(&mut self, code: &CodeChoice, cmd: &Cmd, reply: Result<Value>) -> Step {
        if let Some(why) = self.loading.take() {
            // The reply to FUNCTION LOAD: the call once more on the same route, or the next route.
            return if library_loaded(&reply) {
                self.start(cmd)
            } else {
                self.refused(code, cmd, why)
            };
        }
        let err = match reply {
            Err(err) if refused_without_running(self.route, &err) => err,
            reply => return Step::Reply(reply),
        };
        if self.route == Route::Function && is_function_missing(&err) && !self.reloaded {
            // A flushed library (FUNCTION FLUSH): loaded again, and the call sent once more.
            self.reloaded = true;
            self.loading = Some(err);
            return Step::Send(functions::load_command());
        }
        self.refused(code, cmd, err)
    }

    /// Not run on this route (the module is gone, an ACL denial, no library): the next route.
    fn refused(&mut self, code: &CodeChoice, cmd: &Cmd, why: Error) -> Step {
        match code.refused(self.route, &why) {
            Ok(route) => {
                self.route = route;
                self.start(cmd)
            }
            Err(err) => Step::Reply(Err(err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redis::script::LIMIT;
    use crate::store::redis::server_code::Found;
    use crate::store::ServerCode;

    fn evalsha() -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&LIMIT.sha).arg(1).arg("k").arg("hit").arg("");
        cmd
    }

    fn both() -> CodeChoice {
        let code = CodeChoice::new(ServerCode::Auto);
        let found = Found {
            module: true,
            functions: true,
            warning: None,
        };
        code.record(code.current(), found, true);
        code
    }

    fn name(step: &Step) -> String {
        match step {
            Step::Send(cmd) => String::from_utf8_lossy(&cmd.get_packed_command()[..40]).into_owned(),
            Step::Reply(reply) => format!("{reply:?}"),
            Step::Script => "EVALSHA".into(),
        }
    }

    #[test]
    fn a_refused_module_gives_way_to_the_function_then_the_script() {
        let (code, cmd) = (both(), evalsha());
        let mut walk = RouteWalk::new(&LIMIT, Route::Module);
        assert!(name(&walk.start(&cmd)).contains("RATELOCK.LIMIT"));
        let unknown = Err(Error::StoreUnavailable(
            "ERR unknown command 'RATELOCK.LIMIT'".into(),
        ));
        assert!(name(&walk.next(&code, &cmd, unknown)).contains("FCALL"));
        let denied = Err(Error::StoreUnavailable(
            "NOPERM this user has no permissions".into(),
        ));
        assert!(matches!(walk.next(&code, &cmd, denied), Step::Script));
    }

    #[test]
    fn a_flushed_library_is_loaded_again_once_then_the_call_goes_again() {
        let (code, cmd) = (both(), evalsha());
        let mut walk = RouteWalk::new(&LIMIT, Route::Function);
        let missing = || Err(Error::StoreUnavailable("ERR Function not found".into()));
        assert!(name(&walk.next(&code, &cmd, missing())).contains("FUNCTION"));
        assert!(
            name(&walk.next(&code, &cmd, Ok(Value::Okay))).contains("FCALL"),
            "the call again"
        );
        // Not found again right after the load: a refusal, on to the script.
        assert!(matches!(walk.next(&code, &cmd, missing()), Step::Script));
    }

    #[test]
    fn a_reply_or_an_error_that_ran_is_the_answer() {
        let (code, cmd) = (both(), evalsha());
        let mut walk = RouteWalk::new(&LIMIT, Route::Module);
        assert!(matches!(
            walk.next(&code, &cmd, Ok(Value::Int(1))),
            Step::Reply(Ok(Value::Int(1)))
        ));
        let outage = Err(Error::Timeout(std::time::Duration::from_secs(1)));
        assert!(matches!(walk.next(&code, &cmd, outage), Step::Reply(Err(err)) if err.is_timeout()));
    }

    #[test]
    fn the_module_forced_by_the_url_is_a_configuration_error_when_refused() {
        let code = CodeChoice::new(ServerCode::Module);
        let cmd = evalsha();
        let mut walk = RouteWalk::new(&LIMIT, Route::Module);
        let unknown = Err(Error::StoreUnavailable(
            "ERR unknown command 'RATELOCK.LIMIT'".into(),
        ));
        assert!(matches!(walk.next(&code, &cmd, unknown), Step::Reply(Err(err)) if err.is_configuration()));
    }
}
