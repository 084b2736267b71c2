//! One wire call's parts: what it asked ([`WireCall`]), what its reply means ([`WireAnswer`]), and
//! the `SCRIPT LOAD` that NOSCRIPT asks for. Below [`WireConnection`](super::wire::WireConnection),
//! which puts them together; `store::wire` hands them out.

use super::script::LIMIT;
use crate::decision::Decision;
use crate::rule::Rules;

/// `SCRIPT LOAD` of `limit.lua`: what to write (before the same call again) after
/// [`WireAnswer::NoScript`].
///
/// ```
/// let load = ratelock::store::wire::script_load_command();
/// assert!(load.starts_with(b"*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n"));
/// ```
pub fn script_load_command() -> Vec<u8> {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(&LIMIT.body)
        .get_packed_command()
}

/// What the reply to a limit call means.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireAnswer {
    /// The decision; under the failure policy `allow` or `deny`, a store failure's degraded decision.
    Decided(Decision),
    /// `NOSCRIPT`: the server does not have the script, so the call did not run. Write
    /// [`script_load_command`] and the call's command again (once: after the load,
    /// [`Limiter::wire_answer`](crate::Limiter::wire_answer) with `retried = true` treats NOSCRIPT
    /// as a failure).
    NoScript,
    /// The server refused a [`WireRoute::Module`](super::wire::WireRoute::Module) call without running it (an unknown command: the
    /// module is not loaded, or was unloaded; an ACL denial): send the call on another route, once.
    /// Never the answer to an `EVALSHA`. ([`WireConnection`](super::wire::WireConnection) walks a refused call along the routes
    /// itself.)
    Refused,
}

/// What one wire call asked: what its reply is read against, and what a failure policy (the local
/// fallback above all) needs to answer it.
///
/// ```
/// let rules: ratelock::Rules = "10/second".parse()?;
/// let call = ratelock::store::wire::WireCall { key: b"user:42", rules: &rules, cost: 1, spend: true };
/// assert_eq!(call.cost, 1);
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct WireCall<'a> {
    /// The user key.
    pub key: &'a [u8],
    /// The rules the call checked.
    pub rules: &'a Rules,
    /// The units it asked for.
    pub cost: u64,
    /// `hit` (true) or `peek` (false).
    pub spend: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_command_carries_the_script() {
        let load = script_load_command();
        assert!(load.windows(LIMIT.body.len()).any(|w| w == LIMIT.body.as_bytes()));
    }
}
