//! The forms one wire-path call takes on each route: `EVALSHA` of `limit.lua`, the library's
//! `FCALL`, or the ratelock module's `RATELOCK.LIMIT`, all with the same arguments (call tag included)
//! and the same reply. Which route a connection's calls take, and what a refusal changes, is
//! [`WireConnection`](super::wire_connection::WireConnection)'s, by the Redis store's own rules
//! (`server_code.rs`, `route_walk.rs`).

#[cfg(test)]
use redis::Cmd;

use super::script::LIMIT;
#[cfg(test)]
use super::server_code::call_for;
use super::server_code::Route;

/// How one limiter call goes to the server: see [`Limiter::wire_command_as`].
///
/// [`Limiter::wire_command_as`]: crate::Limiter::wire_command_as
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WireRoute {
    /// `EVALSHA` of `limit.lua` (loaded on NOSCRIPT): every server runs it.
    #[default]
    Script,
    /// The ratelock module's `RATELOCK.LIMIT`, same arguments and reply: only where the server has it.
    Module,
    /// The ratelock function library's `FCALL`, same arguments and reply: where it is loaded.
    Function,
}

/// `limit`, a tagged `EVALSHA` of `limit.lua`, as `route` sends it: the command form the wire path's
/// one-pass bytes are checked against.
#[cfg(test)]
pub(crate) fn call_on(route: WireRoute, limit: &Cmd) -> Cmd {
    match route {
        WireRoute::Script => limit.clone(),
        WireRoute::Module => call_for(Route::Module, &LIMIT, limit),
        WireRoute::Function => call_for(Route::Function, &LIMIT, limit),
    }
}

/// The route `command` (a wire call's bytes) goes on: the module's command, `FCALL`, or `EVALSHA`.
pub(crate) fn route_of_command(command: &[u8]) -> Route {
    let module = LIMIT.module_command.expect("limit.lua has a module command");
    let Some(header_end) = command.windows(2).position(|pair| pair == b"\r\n") else {
        return Route::Script;
    };
    let starts_with = |name: &str| {
        let first_argument = format!("${}\r\n{name}\r\n", name.len());
        command[header_end + 2..]
            .get(..first_argument.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(first_argument.as_bytes()))
    };
    if starts_with(module) {
        Route::Module
    } else if starts_with("FCALL") {
        Route::Function
    } else {
        Route::Script
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_is_read_back_from_its_bytes() {
        let mut limit = redis::cmd("EVALSHA");
        limit.arg(&LIMIT.sha).arg(1).arg("k").arg("hit");
        let packed = |route| call_on(route, &limit).get_packed_command();
        assert_eq!(route_of_command(&packed(WireRoute::Module)), Route::Module);
        assert_eq!(route_of_command(&packed(WireRoute::Script)), Route::Script);
        assert_eq!(route_of_command(&packed(WireRoute::Function)), Route::Function);
        assert_eq!(route_of_command(b"not a command"), Route::Script);
        assert!(packed(WireRoute::Function).starts_with(b"*5\r\n$5\r\nFCALL\r\n"));
    }
}
