//! The forms one wire-path call takes on each route: `EVALSHA` of `limit.lua`, the library's
//! `FCALL`, or the ratelock module's `RATELOCK.LIMIT`, all with the same arguments (call tag included)
//! and the same reply. Which route a connection's calls take, and what a refusal changes, is
//! [`WireConnection`](super::wire_connection::WireConnection)'s, by the Redis store's own rules
//! (`server_code.rs`, `route_walk.rs`).

use redis::Cmd;

use super::script::LIMIT;
use super::server_code::{call_for, Route};

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

/// `limit`, a tagged `EVALSHA` of `limit.lua`, as `route` sends it.
pub(crate) fn call_on(route: WireRoute, limit: &Cmd) -> Cmd {
    match route {
        WireRoute::Script => limit.clone(),
        WireRoute::Module => call_for(Route::Module, &LIMIT, limit),
        WireRoute::Function => call_for(Route::Function, &LIMIT, limit),
    }
}

/// Whether `command` (a wire call's bytes) is a call of the module's command, not `EVALSHA`.
pub(crate) fn is_module_call(command: &[u8]) -> bool {
    let name = LIMIT.module_command.expect("limit.lua has a module command");
    let Some(header_end) = command.windows(2).position(|pair| pair == b"\r\n") else {
        return false;
    };
    let first_argument = format!("${}\r\n{name}\r\n", name.len());
    command[header_end + 2..].starts_with(first_argument.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_modules_command_counts_as_a_module_call() {
        let mut limit = redis::cmd("EVALSHA");
        limit.arg(&LIMIT.sha).arg(1).arg("k").arg("hit");
        let packed = |route| call_on(route, &limit).get_packed_command();
        assert!(is_module_call(&packed(WireRoute::Module)));
        assert!(!is_module_call(&packed(WireRoute::Script)));
        assert!(!is_module_call(&packed(WireRoute::Function)));
        assert!(packed(WireRoute::Function).starts_with(b"*5\r\n$5\r\nFCALL\r\n"));
    }
}
