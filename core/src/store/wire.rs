//! The Redis limiter for a foreign event loop (sans-IO): the bytes to write and the meaning of the
//! bytes read, for a binding that does its socket I/O on its own thread (Node's libuv). The command,
//! the reply decoding and the failure policy are the ones the Redis store and `Limiter` use; the
//! caller only moves bytes, matches replies to calls in order and keeps time.
//!
//! One call: [`Limiter::wire_command`] → write → read into a [`ReplyReader`] → [`Limiter::wire_answer`].
//! On [`WireAnswer::NoScript`] (the script did not run) write [`script_load_command`] and the same
//! command again, once. A timeout or a dropped connection: [`Limiter::wire_timeout`] or
//! [`Limiter::wire_unavailable`] (never send the command again: it may have run).

use std::time::Duration;

use redis::{ConnectionAddr, IntoConnectionInfo, ProtocolVersion};

use super::call_tag::CallTag;
use super::redis::{classify, limit_command, limit_outcomes, Failure};
use super::script::LIMIT;
use super::LimitRequest;
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::limiter::Limiter;
use crate::rule::Rules;

pub use super::wire_reader::{Reply, ReplyReader};

/// Where a plain single-server `redis://` URL points, and what to send first on a new connection.
///
/// ```
/// use ratelock::store::wire::Endpoint;
/// let endpoint = Endpoint::from_url("redis://app:s3cret@10.0.0.5:6380/2")?.expect("served");
/// assert_eq!((endpoint.host(), endpoint.port()), ("10.0.0.5", 6380));
/// assert_eq!(endpoint.preamble_replies(), 2); // AUTH app s3cret, SELECT 2
/// assert!(Endpoint::from_url("rediss://10.0.0.5/")?.is_none()); // TLS: not for the wire path
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Endpoint {
    host: String,
    port: u16,
    preamble: Vec<u8>,
    preamble_replies: usize,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the preamble: it holds the password.
        f.debug_struct("Endpoint")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("preamble_replies", &self.preamble_replies)
            .finish()
    }
}

impl Endpoint {
    /// The endpoint of `redis://[user:password@]host[:port][/db]`. `Ok(None)` for every URL the wire
    /// path does not serve, which keeps the store's own connection: `rediss://` (TLS),
    /// `redis+cluster://`, `redis+sentinel://`, `redis+unix://`, `?protocol=resp3`, `memory://`,
    /// `redlock://`. An unparsable `redis://` URL is an invalid argument.
    pub fn from_url(url: &str) -> Result<Option<Endpoint>> {
        let url = url.trim();
        if !url.starts_with("redis://") {
            return Ok(None);
        }
        let info = url
            .into_connection_info()
            .map_err(|err| Error::invalid_argument("url", err))?;
        let ConnectionAddr::Tcp(host, port) = info.addr() else {
            return Ok(None);
        };
        let settings = info.redis_settings();
        if settings.protocol() != ProtocolVersion::RESP2 {
            return Ok(None);
        }
        let mut preamble = Vec::new();
        let mut preamble_replies = 0;
        // As redis-rs connects: AUTH with the password (and the user, if any), then SELECT.
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            auth.arg(password);
            preamble.extend(auth.get_packed_command());
            preamble_replies += 1;
        }
        if settings.db() != 0 {
            preamble.extend(redis::cmd("SELECT").arg(settings.db()).get_packed_command());
            preamble_replies += 1;
        }
        Ok(Some(Endpoint {
            host: host.clone(),
            port: *port,
            preamble,
            preamble_replies,
        }))
    }

    /// The host to connect to (a name or an address).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The commands to write first on every new connection (`AUTH`, `SELECT`; empty when none).
    pub fn preamble(&self) -> &[u8] {
        &self.preamble
    }

    /// How many replies the preamble gets (each one `OK`, or an error that fails the connection).
    pub fn preamble_replies(&self) -> usize {
        self.preamble_replies
    }
}

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
    /// [`Limiter::wire_answer`] with `retried = true` treats NOSCRIPT as a failure).
    NoScript,
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
    /// // sha, 1 key, hit, time, cost, one rule (4), and the call tag its reply must echo
    /// assert!(bytes.starts_with(b"*12\r\n$7\r\nEVALSHA\r\n"));
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
        for rule in rules.iter() {
            crate::algorithm::check_cost(rule, cost)?;
        }
        let request = self.request(key, rules, cost, now_us, spend)?;
        let mut command = limit_command(&request);
        CallTag::attach(&mut command);
        Ok(command.get_packed_command())
    }

    /// The meaning of the reply to `command`, a call made with [`wire_command`](Self::wire_command)
    /// for `rules` and `cost`: its decision, the failure policy's answer to an error reply, or
    /// [`WireAnswer::NoScript`] (only while `retried` is false). The reply must carry the call tag
    /// that ends `command`: another call's reply is [`Error::Protocol`], which no policy covers.
    ///
    /// ```
    /// use ratelock::store::wire::{ReplyReader, WireAnswer, WireCall};
    /// let limiter = ratelock::Limiter::memory();
    /// let rules = limiter.rules("10/second")?;
    /// let command = limiter.wire_command(b"user:42", &rules, 1, None, true)?;
    /// let tag = std::str::from_utf8(&command)?.rsplit("\r\n").nth(1).unwrap().to_owned();
    /// let mut reader = ReplyReader::new();
    /// let decided = format!("*2\r\n${}\r\n{tag}\r\n*5\r\n:1\r\n:10\r\n:9\r\n:100000\r\n:0\r\n", tag.len());
    /// reader.push(decided.as_bytes());
    /// reader.push(b"-NOSCRIPT No matching script\r\n*2\r\n$1\r\n7\r\n*5\r\n:1\r\n:10\r\n:9\r\n:1\r\n:0\r\n");
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
        let reply = match classify(Ok(reply.0), self.options().store.timeout) {
            Err(Failure::NoScript) if !retried => return Ok(WireAnswer::NoScript),
            Err(Failure::NoScript) => Err(Error::Protocol("NOSCRIPT after SCRIPT LOAD".into())),
            Err(Failure::Other(err)) => Err(err),
            Ok(value) => tag.open(value),
        };
        let request = self.wire_request(call)?;
        let checked = limit_outcomes(reply, &request);
        self.settle(checked, &request).map(WireAnswer::Decided)
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
    /// let store = Store::Memory(ratelock::store::MemoryStore::new(10));
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
        self.settle(Err(Error::Timeout(timeout)), &self.wire_request(call)?)
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
        )
    }

    /// The answer to a call that the store's circuit breaker refused (it is open): the failure policy's
    /// answer, given at once. `None` when the breaker lets the call go to the server. A due probe
    /// starts in the background here.
    ///
    /// ```
    /// let limiter = ratelock::Limiter::memory(); // no breaker: every call goes out
    /// let rules = limiter.rules("5/second")?;
    /// let call = ratelock::store::wire::WireCall { key: b"k", rules: &rules, cost: 1, spend: true };
    /// assert!(limiter.wire_refused(&call).is_none());
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn wire_refused(&self, call: &WireCall<'_>) -> Option<Result<Decision>> {
        let crate::store::Store::Redis(store) = self.store() else {
            return None;
        };
        let refused = store.gate().admit().err()?;
        Some(
            self.wire_request(call)
                .and_then(|request| self.settle(Err(refused), &request)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FailurePolicy, LimiterOptions, Store};

    fn limiter(on_error: FailurePolicy) -> Limiter {
        let store = Store::Memory(crate::store::MemoryStore::new(10));
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

    #[test]
    fn the_command_is_the_stores_limit_command() {
        let limiter = Limiter::memory();
        let rules = limiter.rules("10/second; 100/hour").unwrap();
        let request = limiter.request(b"k", &rules, 2, Some(5), false).unwrap();
        let command = limiter.wire_command(b"k", &rules, 2, Some(5), false).unwrap();
        let mut expected = limit_command(&request);
        expected.arg(CallTag::of_command(&command).unwrap().value());
        assert_eq!(command, expected.get_packed_command());
    }

    #[test]
    fn urls_that_are_not_one_plain_server_keep_the_store_connection() {
        for url in [
            "rediss://h/",
            "redis+cluster://a:1,b:2",
            "redis+sentinel://a:1/m",
            "redis+unix:///tmp/r.sock",
            "memory://",
            "redis://h/?protocol=resp3",
        ] {
            assert_eq!(Endpoint::from_url(url).unwrap(), None, "{url}");
        }
        assert!(Endpoint::from_url("redis://h:notaport/").is_err());
    }

    #[test]
    fn the_preamble_authenticates_and_selects_like_redis_rs() {
        let plain = Endpoint::from_url("redis://127.0.0.1:7000/").unwrap().unwrap();
        assert_eq!((plain.preamble(), plain.preamble_replies()), (&b""[..], 0));
        let password = Endpoint::from_url("redis://:p%40ss@h/3").unwrap().unwrap();
        assert_eq!(
            password.preamble(),
            b"*2\r\n$4\r\nAUTH\r\n$4\r\np@ss\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n"
        );
        let user = Endpoint::from_url("redis://u:p@h").unwrap().unwrap();
        assert_eq!(user.preamble(), b"*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$1\r\np\r\n");
        assert_eq!((user.host(), user.port()), ("h", 6379));
        assert!(!format!("{user:?}").contains("AUTH"), "no password in Debug");
    }

    #[test]
    fn error_replies_follow_the_failure_policy() {
        let rules = Limiter::memory().rules("5/second").unwrap();
        let busy = b"-BUSY Redis is busy running a script\r\n";
        let raised =
            limiter(FailurePolicy::Raise).wire_answer(reply(busy), &COMMAND, &call(&rules, 1), false);
        assert!(raised.unwrap_err().is_store_failure());
        for (policy, allowed) in [(FailurePolicy::Allow, true), (FailurePolicy::Deny, false)] {
            let WireAnswer::Decided(decision) = limiter(policy)
                .wire_answer(reply(busy), &COMMAND, &call(&rules, 1), false)
                .unwrap()
            else {
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
            limiter
                .wire_answer(reply(noscript), &COMMAND, &call(&rules, 1), false)
                .unwrap(),
            WireAnswer::NoScript
        );
        let again = limiter
            .wire_answer(reply(noscript), &COMMAND, &call(&rules, 1), true)
            .unwrap_err();
        assert!(again.to_string().contains("NOSCRIPT after SCRIPT LOAD"));
    }

    #[test]
    fn the_scripts_capacity_error_and_bad_shapes_are_typed() {
        let limiter = Limiter::memory();
        let rules = limiter.rules("5/second").unwrap();
        let capacity = b"-ERR user_script:1: cost exceeds capacity of rule 1\r\n";
        let err = limiter
            .wire_answer(reply(capacity), &COMMAND, &call(&rules, 9), false)
            .unwrap_err();
        assert!(err.is_cost_exceeds_capacity(), "{err}");
        let short = limiter
            .wire_answer(
                reply(b"*2\r\n$2\r\n42\r\n*1\r\n:1\r\n"),
                &COMMAND,
                &call(&rules, 1),
                false,
            )
            .unwrap_err();
        assert!(short.is_protocol(), "{short}");
        let untagged = limiter
            .wire_answer(
                reply(b"*5\r\n:1\r\n:5\r\n:4\r\n:1\r\n:0\r\n"),
                &COMMAND,
                &call(&rules, 1),
                false,
            )
            .unwrap_err();
        assert!(untagged.is_protocol(), "{untagged}");
        let allowing = self::limiter(FailurePolicy::Allow);
        let crossed = allowing
            .wire_answer(
                reply(b"*2\r\n$2\r\n41\r\n*5\r\n:1\r\n:5\r\n:4\r\n:1\r\n:0\r\n"),
                &COMMAND,
                &call(&rules, 1),
                false,
            )
            .unwrap_err();
        assert!(
            crossed.is_protocol(),
            "a crossed reply is never admitted by the policy: {crossed}"
        );
    }

    #[test]
    fn the_load_command_carries_the_script() {
        let load = script_load_command();
        assert!(load.windows(LIMIT.body.len()).any(|w| w == LIMIT.body.as_bytes()));
        let timed_out = Limiter::memory()
            .wire_timeout(&call(&"1/s".parse().unwrap(), 1))
            .unwrap_err();
        assert!(timed_out.is_timeout());
    }
}
