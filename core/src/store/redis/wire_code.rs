//! Which server code one wire-path connection runs its limiter calls on (sans-IO): the ratelock
//! module's `RATELOCK.LIMIT` where the server has it, else `limit.lua` by `EVALSHA`. The same rules as
//! the Redis store's (`server_code.rs`): a check per connection, the URL's `server_code` honoured, and a
//! module command refused without running sent again as `EVALSHA`. The wire path has no Functions
//! route: `EVALSHA` is its one Lua route.

use redis::{Cmd, Value};

use super::call_tag::excerpt;
use super::script::LIMIT;
use super::server_code::{call_for, Route, MODULE_CONTRACT_VERSION};
use super::wire_reader::Reply;
use crate::error::{Error, Result};
use crate::store::redis::reply::{classify, Failure};
use crate::store::ServerCode;

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
}

/// How many replies the check gets: `COMMAND INFO RATELOCK.LIMIT`, then `RATELOCK.VERSION`.
const CHECK_REPLIES: usize = 2;

/// One connection's choice of [`WireRoute`]: what to write after the preamble to learn whether the
/// server has the module, what those replies mean, and what a refusal changes. Make one per connection
/// (a new connection may reach another server).
///
/// ```
/// use ratelock::store::wire::{Endpoint, ReplyReader, WireCode, WireRoute};
/// let endpoint = Endpoint::from_url("redis://127.0.0.1:6379/")?.expect("served");
/// let mut code = WireCode::new(endpoint.server_code());
/// assert_eq!(code.route(), WireRoute::Script); // until the check's replies are read
/// assert_eq!(code.check_replies(), 2);
/// assert!(code.check_command().starts_with(b"*3\r\n$7\r\nCOMMAND\r\n$4\r\nINFO\r\n"));
/// let mut reader = ReplyReader::new();
/// reader.push(b"*1\r\n*0\r\n:1\r\n"); // the command is listed; contract version 1
/// code.read_check(reader.next_reply()?.expect("a whole reply"))?;
/// code.read_check(reader.next_reply()?.expect("a whole reply"))?;
/// assert_eq!(code.route(), WireRoute::Module);
/// code.refused()?; // a call was refused without running: EVALSHA from now on
/// assert_eq!(code.route(), WireRoute::Script);
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct WireCode {
    wanted: ServerCode,
    route: WireRoute,
    /// Check replies not read yet.
    awaiting: usize,
    /// `COMMAND INFO` listed `RATELOCK.LIMIT`.
    listed: bool,
    /// A module call was refused on this connection: the module is not used again on it.
    refused: bool,
}

impl WireCode {
    /// The choice for a new connection whose URL asked for `wanted` ([`Endpoint::server_code`]):
    /// `auto` checks and takes the module where the check finds it; `module` takes it from the first
    /// call without checking; `lua` and `scripts` never check and always send `EVALSHA`.
    ///
    /// [`Endpoint::server_code`]: crate::store::wire::Endpoint::server_code
    pub fn new(wanted: ServerCode) -> Self {
        let (route, awaiting) = match wanted {
            ServerCode::Auto => (WireRoute::Script, CHECK_REPLIES),
            ServerCode::Module => (WireRoute::Module, 0),
            ServerCode::Lua | ServerCode::Scripts => (WireRoute::Script, 0),
        };
        WireCode {
            wanted,
            route,
            awaiting,
            listed: false,
            refused: false,
        }
    }

    /// What to write right after the preamble: `COMMAND INFO RATELOCK.LIMIT` and `RATELOCK.VERSION`,
    /// pipelined (empty when this choice never checks). Calls written before their replies are read go
    /// as `EVALSHA`, which every server runs.
    pub fn check_command(&self) -> Vec<u8> {
        if self.check_replies() == 0 {
            return Vec::new();
        }
        let mut bytes = redis::cmd("COMMAND")
            .arg("INFO")
            .arg(module_command_name())
            .get_packed_command();
        bytes.extend(redis::cmd("RATELOCK.VERSION").get_packed_command());
        bytes
    }

    /// How many replies [`check_command`](Self::check_command) gets (0 when it is empty).
    pub fn check_replies(&self) -> usize {
        if self.wanted == ServerCode::Auto {
            CHECK_REPLIES
        } else {
            0
        }
    }

    /// Reads the next reply to the check, in order. The module is used once `RATELOCK.LIMIT` is listed
    /// and `RATELOCK.VERSION` answers this client's contract version; an error reply (an unknown
    /// command, an ACL denial, or any other) leaves the connection on `EVALSHA`, which is always right.
    /// A reply of a shape neither command gives is [`Error::Protocol`] (the stream is out of step).
    pub fn read_check(&mut self, reply: Reply) -> Result<()> {
        if self.awaiting == 0 {
            return Err(Error::Protocol(
                "a check reply arrived, but no check is waiting".into(),
            ));
        }
        let step = CHECK_REPLIES - self.awaiting;
        self.awaiting -= 1;
        let value = match classify(Ok(reply.0), std::time::Duration::ZERO) {
            Ok(value) => value,
            Err(Failure::NoScript) | Err(Failure::Other(_)) => return Ok(()),
        };
        match (step, value) {
            (0, Value::Array(items)) => {
                self.listed = items.first().is_some_and(|item| !matches!(item, Value::Nil));
            }
            (1, Value::Int(version)) => {
                let answers = self.listed && version == MODULE_CONTRACT_VERSION && !self.refused;
                if answers {
                    self.route = WireRoute::Module;
                }
            }
            (_, other) => {
                return Err(Error::Protocol(format!(
                    "unexpected reply while checking for the ratelock module: {}",
                    excerpt(&other)
                )))
            }
        }
        Ok(())
    }

    /// The route of the next call encoded on this connection.
    pub fn route(&self) -> WireRoute {
        self.route
    }

    /// A module call was refused without running ([`WireAnswer::Refused`]): the connection sends
    /// `EVALSHA` from now on (send that call again as one). Where the URL forced `server_code=module`,
    /// this is the configuration error instead.
    ///
    /// [`WireAnswer::Refused`]: crate::store::wire::WireAnswer::Refused
    pub fn refused(&mut self) -> Result<()> {
        if self.wanted == ServerCode::Module {
            return Err(Error::configuration(
                "server_code",
                "\"module\" was asked for, but the server refused the ratelock module's command \
                 (is the module loaded, and does the ACL allow RATELOCK.LIMIT?)",
            ));
        }
        self.refused = true;
        self.route = WireRoute::Script;
        Ok(())
    }
}

/// `RATELOCK.LIMIT`: the module's stand-in for `limit.lua`.
fn module_command_name() -> &'static str {
    LIMIT.module_command.expect("limit.lua has a module command")
}

/// `limit`, a tagged `EVALSHA` of `limit.lua`, as the module's call with the same arguments.
pub(crate) fn module_call(limit: &Cmd) -> Cmd {
    call_for(Route::Module, &LIMIT, limit)
}

/// Whether `command` (a wire call's bytes) is a call of the module's command, not `EVALSHA`.
pub(crate) fn is_module_call(command: &[u8]) -> bool {
    let name = module_command_name();
    let Some(header_end) = command.windows(2).position(|pair| pair == b"\r\n") else {
        return false;
    };
    let first_argument = format!("${}\r\n{name}\r\n", name.len());
    command[header_end + 2..].starts_with(first_argument.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::wire::ReplyReader;

    fn replies(bytes: &[u8]) -> Vec<Reply> {
        let mut reader = ReplyReader::new();
        reader.push(bytes);
        std::iter::from_fn(|| reader.next_reply().unwrap()).collect()
    }

    fn checked(bytes: &[u8]) -> WireCode {
        let mut code = WireCode::new(ServerCode::Auto);
        for reply in replies(bytes) {
            code.read_check(reply).unwrap();
        }
        code
    }

    #[test]
    fn the_module_is_used_only_when_listed_at_this_contract_version() {
        assert_eq!(checked(b"*1\r\n*0\r\n:1\r\n").route(), WireRoute::Module);
        let unknown = b"*1\r\n$-1\r\n-ERR unknown command 'RATELOCK.VERSION'\r\n";
        assert_eq!(checked(unknown).route(), WireRoute::Script);
        assert_eq!(
            checked(b"*1\r\n*0\r\n:2\r\n").route(),
            WireRoute::Script,
            "another contract"
        );
        let denied = b"-NOPERM no permission\r\n-NOPERM no permission\r\n";
        assert_eq!(checked(denied).route(), WireRoute::Script);
        assert_eq!(checked(b"*1\r\n*0\r\n-NOPERM no\r\n").route(), WireRoute::Script);
        assert_eq!(checked(b"-LOADING loading\r\n:1\r\n").route(), WireRoute::Script);
    }

    #[test]
    fn a_reply_out_of_step_is_a_protocol_error() {
        let mut code = WireCode::new(ServerCode::Auto);
        let mut out_of_step = replies(b"+OK\r\n:1\r\n:1\r\n:1\r\n").into_iter();
        assert!(code
            .read_check(out_of_step.next().unwrap())
            .unwrap_err()
            .is_protocol());
        code.read_check(out_of_step.next().unwrap()).unwrap();
        let extra = code.read_check(out_of_step.next().unwrap()).unwrap_err();
        assert!(extra.is_protocol(), "{extra}");
    }

    #[test]
    fn forced_choices_never_check() {
        for (wanted, route) in [
            (ServerCode::Module, WireRoute::Module),
            (ServerCode::Lua, WireRoute::Script),
            (ServerCode::Scripts, WireRoute::Script),
        ] {
            let code = WireCode::new(wanted);
            assert_eq!((code.route(), code.check_replies()), (route, 0), "{wanted:?}");
            assert!(code.check_command().is_empty());
        }
        let forced = WireCode::new(ServerCode::Module).refused().unwrap_err();
        assert!(forced.is_configuration(), "{forced}");
    }

    #[test]
    fn a_refusal_keeps_the_connection_on_evalsha() {
        let mut code = checked(b"*1\r\n*0\r\n:1\r\n");
        code.refused().unwrap();
        assert_eq!(code.route(), WireRoute::Script);
        let mut early = WireCode::new(ServerCode::Auto);
        early.refused().unwrap();
        for reply in replies(b"*1\r\n*0\r\n:1\r\n") {
            early.read_check(reply).unwrap();
        }
        assert_eq!(early.route(), WireRoute::Script, "a refusal outlasts the check");
    }

    #[test]
    fn module_calls_are_told_from_evalsha_by_their_first_argument() {
        assert!(is_module_call(
            b"*3\r\n$14\r\nRATELOCK.LIMIT\r\n$1\r\n1\r\n$1\r\nk\r\n"
        ));
        assert!(!is_module_call(b"*3\r\n$7\r\nEVALSHA\r\n$1\r\n1\r\n$1\r\nk\r\n"));
        assert!(!is_module_call(b"$2\r\n42\r\n"));
        assert!(!is_module_call(b""));
    }
}
