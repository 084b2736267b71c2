//! Limiter calls over a connection that the caller drives (see `store::wire`): the command's bytes, the
//! meaning of its reply, and the failure policy's answer when none comes.

use std::time::Duration;

use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::hook::Answered;
use crate::limiter::{Limiter, UNTIMED};
use crate::rule::Rules;
use crate::store::redis::call_tag::CallTag;
use crate::store::redis::commands::{limit_command, limit_outcomes, write_limit_call};
use crate::store::redis::reply::{classify, Failure};
use crate::store::redis::server_code::is_refusal;
use crate::store::redis::server_code::Route;
use crate::store::redis::wire_code::route_of_command;
use crate::store::wire::{Reply, WireAnswer, WireCall, WireRoute};
use crate::store::LimitRequest;

/// Limiter calls over a connection that the caller drives (see the module docs).
impl Limiter {
    /// The bytes of `hit` (`spend`) or `peek` for `key`: one `EVALSHA` of `limit.lua` over every rule,
    /// exactly what the Redis store sends, ending with a fresh call tag. A cost above a rule's capacity
    /// is an error here, before anything is sent. `now_us` replaces the clock as in [`hit_at`](Self::hit_at); without it the
    /// limiter's clock choice applies.
    ///
    /// ```
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = limiter.rules("10/second")?;
    /// let bytes = limiter.wire_command(b"user:42", &rules, 1, None, true)?;
    /// // sha, 3 keys (the rule's, the key's entry and its override), hit, time, cost, one rule (5), and
    /// // the call tag its reply must echo
    /// assert!(bytes.starts_with(b"*15\r\n$7\r\nEVALSHA\r\n"));
    /// assert!(limiter.wire_command(b"user:42", &rules, 11, None, true).unwrap_err().is_cost_exceeds_capacity());
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn wire_command(
        &self,
        key: &[u8],
        rules: &Rules,
        cost: u64,
        now_us: Option<u64>,
        spend: bool,
    ) -> Result<Vec<u8>> {
        self.wire_command_as(key, rules, cost, now_us, spend, WireRoute::Script)
    }

    /// [`wire_command`](Self::wire_command) on `route`: [`WireRoute::Script`] is its `EVALSHA`;
    /// [`WireRoute::Module`] is the ratelock module's `RATELOCK.LIMIT` and [`WireRoute::Function`] the
    /// library's `FCALL`, with the very same arguments (call tag included) and the same reply, for a
    /// connection whose server has them ([`WireConnection`] checks and chooses).
    ///
    /// [`WireConnection`]: crate::store::wire::WireConnection
    ///
    /// ```
    /// use ratelock::store::wire::WireRoute;
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = limiter.rules("10/second")?;
    /// let bytes = limiter.wire_command_as(b"user:42", &rules, 1, None, true, WireRoute::Module)?;
    /// // no sha: 3 keys, hit, time, cost, one rule (5), and the call tag
    /// assert!(bytes.starts_with(b"*14\r\n$14\r\nRATELOCK.LIMIT\r\n$1\r\n3\r\n"));
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn wire_command_as(
        &self,
        key: &[u8],
        rules: &Rules,
        cost: u64,
        now_us: Option<u64>,
        spend: bool,
        route: WireRoute,
    ) -> Result<Vec<u8>> {
        let route = match route {
            WireRoute::Script => Route::Script,
            WireRoute::Module => Route::Module,
            WireRoute::Function => Route::Function,
        };
        let mut bytes = Vec::new();
        self.write_wire_limit_call(key, rules, cost, now_us, spend, route, &mut bytes)?;
        Ok(bytes)
    }

    /// Writes one call (misuse refused first) on `route` into `out`, with a fresh tag, in one pass: the
    /// bytes [`wire_command_as`](Self::wire_command_as) gives. Answers the tag and the time it was sent
    /// with (given, or the limiter's own clock), for [`wire_limit_command_again`](Self::wire_limit_command_again).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_wire_limit_call(
        &self,
        key: &[u8],
        rules: &Rules,
        cost: u64,
        now_us: Option<u64>,
        spend: bool,
        route: Route,
        out: &mut Vec<u8>,
    ) -> Result<(CallTag, Option<u64>)> {
        for rule in rules.iter() {
            crate::algorithm::check_cost(rule, cost)?;
        }
        let request = self.request(key, rules, cost, now_us, spend)?;
        let tag = CallTag::next();
        write_limit_call(&request, route, tag, out);
        Ok((tag, request.now_us))
    }

    /// The tagged `EVALSHA` of a call [`write_wire_limit_call`](Self::write_wire_limit_call) wrote, with
    /// the time and tag it was sent with: the same call, for a retry or another route.
    pub(crate) fn wire_limit_command_again(
        &self,
        key: &[u8],
        rules: &Rules,
        cost: u64,
        now_us: Option<u64>,
        spend: bool,
        tag: CallTag,
    ) -> redis::Cmd {
        let mut command = limit_command(&self.checked_request(key, rules, cost, now_us, spend));
        tag.append(&mut command);
        command
    }

    /// The meaning of the reply to `command`, a call made with [`wire_command`](Self::wire_command)
    /// (or [`wire_command_as`](Self::wire_command_as)) for `rules` and `cost`: its decision, the failure
    /// policy's answer to an error reply, [`WireAnswer::NoScript`] (only while `retried` is false), or,
    /// for a module call alone, [`WireAnswer::Refused`] (the server refused the module's command
    /// without running it). The reply must carry the call tag that ends `command`: another call's reply
    /// is [`Error::Protocol`], which no policy covers.
    ///
    /// ```
    /// use ratelock::store::wire::{ReplyReader, WireAnswer, WireCall};
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = limiter.rules("10/second")?;
    /// let command = limiter.wire_command(b"user:42", &rules, 1, None, true)?;
    /// let tag = std::str::from_utf8(&command)?.rsplit("\r\n").nth(1).unwrap().to_owned();
    /// let mut reader = ReplyReader::new();
    /// let decided = format!("*2\r\n${}\r\n{tag}\r\n*6\r\n:0\r\n:1\r\n:10\r\n:9\r\n:100000\r\n:0\r\n", tag.len());
    /// reader.push(decided.as_bytes());
    /// reader.push(b"-NOSCRIPT No matching script\r\n*2\r\n$1\r\n7\r\n*6\r\n:0\r\n:1\r\n:10\r\n:9\r\n:1\r\n:0\r\n");
    /// let reply = reader.next_reply()?.expect("a whole reply");
    /// let call = WireCall { key: b"user:42", rules: &rules, cost: 1, spend: true };
    /// let WireAnswer::Decided(decision) = limiter.wire_answer(reply, &command, &call, false)? else { panic!() };
    /// assert!(decision.allowed && decision.remaining == 9);
    /// let noscript = reader.next_reply()?.expect("a whole reply");
    /// assert_eq!(limiter.wire_answer(noscript, &command, &call, false)?, WireAnswer::NoScript);
    /// let crossed = reader.next_reply()?.expect("another call's reply");
    /// assert!(limiter.wire_answer(crossed, &command, &call, false).unwrap_err().is_protocol());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wire_answer(
        &self,
        reply: Reply,
        command: &[u8],
        call: &WireCall<'_>,
        retried: bool,
    ) -> Result<WireAnswer> {
        let tag = CallTag::of_command(command)?;
        self.wire_answer_tagged(reply, tag, route_of_command(command), call, retried, None)
    }

    /// [`wire_answer`](Self::wire_answer) for a call known by its tag and the route it went on (what a
    /// connection keeps of a call instead of its bytes).
    pub(crate) fn wire_answer_tagged(
        &self,
        reply: Reply,
        tag: CallTag,
        route: Route,
        call: &WireCall<'_>,
        retried: bool,
        elapsed: Option<std::time::Duration>,
    ) -> Result<WireAnswer> {
        let reply = match classify(Ok(reply.0), self.options().store.timeout) {
            Err(Failure::Other(err)) if is_refusal(&err) && route == Route::Module => {
                return Ok(WireAnswer::Refused)
            }
            Err(Failure::NoScript) if !retried => return Ok(WireAnswer::NoScript),
            Err(Failure::NoScript) => Err(crate::store::connection_core::noscript_after_load()),
            Err(Failure::Other(err)) => Err(err),
            Ok(value) => tag.open(value),
        };
        let request = self.wire_request(call)?;
        let checked = limit_outcomes(reply, &request);
        let how = Answered::ByStore {
            elapsed,
            route: Some(route.name()),
        };
        self.settle(checked, &request, how).map(WireAnswer::Decided)
    }

    /// A hook's answer given before the call is encoded (`before_decision`: a local deny cache), which
    /// every hook then sees; `None` when no hook answers (or none is attached), and the call goes out.
    pub(crate) fn wire_answered_by_hook(
        &self,
        key: &[u8],
        rules: &Rules,
        cost: u64,
        now_us: Option<u64>,
        spend: bool,
    ) -> Option<Result<Decision>> {
        if self.options().hooks.is_empty() {
            return None;
        }
        match self.request(key, rules, cost, now_us, spend) {
            Ok(request) => self.answered_by_hook(&request),
            Err(err) => Some(Err(err)),
        }
    }

    fn wire_request<'r>(&'r self, call: &WireCall<'r>) -> Result<LimitRequest<'r>> {
        self.request(call.key, call.rules, call.cost, None, call.spend)
    }

    /// The failure policy's answer for a call whose reply did not come within the timeout:
    /// [`Error::Timeout`] under `raise`, else a degraded decision. The reply may still come: read it
    /// and drop it.
    ///
    /// ```
    /// use ratelock::{FailurePolicy, Limiter, LimiterOptions, Store};
    /// let store = Store::Memory(ratelock::store::MemoryStore::unbounded());
    /// let allowing = Limiter::with_store(store, LimiterOptions::default().with_on_error(FailurePolicy::Allow))?;
    /// let rules = allowing.rules("5/second")?;
    /// let call = ratelock::store::wire::WireCall { key: b"k", rules: &rules, cost: 1, spend: true };
    /// let decision = allowing.wire_timeout(&call)?;
    /// assert!(decision.allowed && decision.degraded);
    /// assert!(Limiter::memory().wire_timeout(&call).unwrap_err().is_timeout());
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn wire_timeout(&self, call: &WireCall<'_>) -> Result<Decision> {
        let timeout: Duration = self.options().store.timeout;
        self.settle(Err(Error::Timeout(timeout)), &self.wire_request(call)?, UNTIMED)
    }

    /// The failure policy's answer for a call whose connection failed (refused, dropped, or a
    /// protocol error; `why` says which): [`Error::StoreUnavailable`] under `raise`, else a degraded
    /// decision.
    ///
    /// ```
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = limiter.rules("5/second")?;
    /// let call = ratelock::store::wire::WireCall { key: b"k", rules: &rules, cost: 1, spend: true };
    /// let err = limiter.wire_unavailable(&call, "connection refused").unwrap_err();
    /// assert!(err.is_store_failure() && err.to_string().contains("connection refused"));
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn wire_unavailable(&self, call: &WireCall<'_>, why: &str) -> Result<Decision> {
        self.settle(
            Err(Error::StoreUnavailable(why.to_owned())),
            &self.wire_request(call)?,
            UNTIMED,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redis::wire_code::call_on;
    use crate::store::wire::ReplyReader;
    use crate::{FailurePolicy, LimiterOptions, Store};

    fn limiter(on_error: FailurePolicy) -> Limiter {
        let store = Store::Memory(crate::store::MemoryStore::unbounded());
        Limiter::with_store(store, LimiterOptions::default().with_on_error(on_error)).unwrap()
    }

    fn call(rules: &Rules, cost: u64) -> WireCall<'_> {
        WireCall {
            key: b"k",
            rules,
            cost,
            spend: true,
        }
    }

    /// A call's bytes ending with the tag 42.
    const COMMAND: [u8; 8] = *b"$2\r\n42\r\n";

    fn reply(bytes: &[u8]) -> Reply {
        let mut reader = ReplyReader::new();
        reader.push(bytes);
        reader.next_reply().unwrap().unwrap()
    }

    /// `limiter`'s answer to the reply `bytes` of a first call of `cost` units of `rules` (tag 42).
    fn answer(limiter: &Limiter, bytes: &[u8], rules: &Rules, cost: u64) -> Result<WireAnswer> {
        limiter.wire_answer(reply(bytes), &COMMAND, &call(rules, cost), false)
    }

    #[test]
    fn the_command_is_the_stores_limit_command() {
        let limiter = Limiter::memory();
        let rules = limiter.rules("10/second; 100/hour").unwrap();
        let request = limiter.request(b"k", &rules, 2, Some(5), false).unwrap();
        let command = limiter.wire_command(b"k", &rules, 2, Some(5), false).unwrap();
        let mut expected = limit_command(&request);
        expected.arg(CallTag::of_command(&command).unwrap().number());
        assert_eq!(command, expected.get_packed_command());
    }

    #[test]
    fn the_module_route_is_the_stores_module_command() {
        let limiter = Limiter::memory();
        let rules = limiter.rules("10/second; 100/hour").unwrap();
        let evalsha = limiter.wire_command(b"k", &rules, 2, Some(5), true).unwrap();
        let module = limiter
            .wire_command_as(b"k", &rules, 2, Some(5), true, WireRoute::Module)
            .unwrap();
        let request = limiter.request(b"k", &rules, 2, Some(5), true).unwrap();
        let mut expected = limit_command(&request);
        expected.arg(CallTag::of_command(&module).unwrap().number());
        assert_eq!(module, call_on(WireRoute::Module, &expected).get_packed_command());
        assert_ne!(
            CallTag::of_command(&evalsha).unwrap(),
            CallTag::of_command(&module).unwrap()
        );
    }

    #[test]
    fn only_a_module_call_is_refused_without_running() {
        let limiter = Limiter::memory();
        let rules = limiter.rules("5/second").unwrap();
        let module = limiter
            .wire_command_as(b"k", &rules, 1, None, true, WireRoute::Module)
            .unwrap();
        let evalsha = limiter.wire_command(b"k", &rules, 1, None, true).unwrap();
        for refusal in [
            &b"-ERR unknown command 'RATELOCK.LIMIT', with args beginning with: \r\n"[..],
            b"-NOPERM User app has no permissions to run the 'ratelock.limit' command\r\n",
        ] {
            let answer = limiter.wire_answer(reply(refusal), &module, &call(&rules, 1), false);
            assert_eq!(answer.unwrap(), WireAnswer::Refused);
            let not_refused = limiter.wire_answer(reply(refusal), &evalsha, &call(&rules, 1), false);
            assert!(
                not_refused.unwrap_err().is_configuration(),
                "EVALSHA refused is an error"
            );
        }
    }

    #[test]
    fn error_replies_follow_the_failure_policy() {
        let rules = Limiter::memory().rules("5/second").unwrap();
        let busy = b"-BUSY Redis is busy running a script\r\n";
        let raised = answer(&limiter(FailurePolicy::Raise), busy, &rules, 1);
        assert!(raised.unwrap_err().is_store_failure());
        for (policy, allowed) in [(FailurePolicy::Allow, true), (FailurePolicy::Deny, false)] {
            let WireAnswer::Decided(decision) = answer(&limiter(policy), busy, &rules, 1).unwrap() else {
                panic!("a decision")
            };
            assert_eq!((decision.allowed, decision.degraded), (allowed, true));
        }
    }

    #[test]
    fn noscript_asks_for_a_load_once() {
        let limiter = Limiter::memory();
        let rules = limiter.rules("5/second").unwrap();
        let noscript = b"-NOSCRIPT No matching script\r\n";
        assert_eq!(
            answer(&limiter, noscript, &rules, 1).unwrap(),
            WireAnswer::NoScript
        );
        let again = limiter
            .wire_answer(reply(noscript), &COMMAND, &call(&rules, 1), true)
            .unwrap_err();
        assert!(
            again.to_string().contains("NOSCRIPT right after SCRIPT LOAD"),
            "{again}"
        );
        assert!(
            again.is_configuration(),
            "a script that does not stay loaded is not an outage"
        );
    }

    #[test]
    fn the_scripts_capacity_error_and_bad_shapes_are_typed() {
        let limiter = Limiter::memory();
        let rules = limiter.rules("5/second").unwrap();
        let capacity = b"-ERR user_script:1: cost exceeds capacity of rule 1\r\n";
        let err = answer(&limiter, capacity, &rules, 9).unwrap_err();
        assert!(err.is_cost_exceeds_capacity(), "{err}");
        let short = answer(&limiter, b"*2\r\n$2\r\n42\r\n*1\r\n:1\r\n", &rules, 1).unwrap_err();
        assert!(short.is_protocol(), "{short}");
        let untagged =
            answer(&limiter, b"*6\r\n:0\r\n:1\r\n:5\r\n:4\r\n:1\r\n:0\r\n", &rules, 1).unwrap_err();
        assert!(untagged.is_protocol(), "{untagged}");
        let allowing = self::limiter(FailurePolicy::Allow);
        let crossed = answer(
            &allowing,
            b"*2\r\n$2\r\n41\r\n*6\r\n:0\r\n:1\r\n:5\r\n:4\r\n:1\r\n:0\r\n",
            &rules,
            1,
        )
        .unwrap_err();
        assert!(
            crossed.is_protocol(),
            "a crossed reply is never admitted by the policy: {crossed}"
        );
    }

    #[test]
    fn a_timeout_raises_under_raise() {
        let timed_out = Limiter::memory()
            .wire_timeout(&call(&"1/s".parse().unwrap(), 1))
            .unwrap_err();
        assert!(timed_out.is_timeout());
    }
}
