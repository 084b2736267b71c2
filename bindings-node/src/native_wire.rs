//! `NativeWire`: the core's wire path (`ratelock::store::wire`) for `lib/wire-socket.js`, which owns the
//! socket on the JavaScript thread. One per connection: it encodes calls into bytes (as the ratelock
//! module's command once the connection's check found the module, else as EVALSHA), reads reply bytes
//! and decodes each reply into the decision numbers of `completions.rs` (failure policy included).
//! It holds no protocol or limiter logic of its own.

use std::sync::Arc;

use napi::bindgen_prelude::{Buffer, BufferSlice, Either, External, Float64ArraySlice};
use napi_derive::napi;
use ratelock::store::wire::{self, Endpoint, ReplyReader, WireAnswer, WireCall, WireCode};
use ratelock::store::Gate;

use crate::completions::DECISION_FIELDS;
use crate::convert;
use crate::errors::{invalid_argument, to_js};
use crate::limiter::{numbers, NativeLimiter};
use crate::runtime::guarded_sync;

/// `takeDecision`: no whole reply has arrived yet.
const PENDING: u32 = 0;
/// `takeDecision`: the decision is in `out`.
const DECIDED: u32 = 1;
/// `takeDecision`: NOSCRIPT; write `scriptLoad()` and the call's bytes again (with `retried`).
const NO_SCRIPT: u32 = 2;
/// `takeDecision`: the module's command was refused without running; encode the call again (it goes
/// as EVALSHA now) and write it.
const REFUSED: u32 = 3;

/// One connection's codec: bytes out, replies in, for the limiter it was opened from.
#[napi]
pub struct NativeWire {
    limiter: ratelock::Limiter,
    endpoint: Endpoint,
    reader: ReplyReader,
    /// Whether this connection's calls go as the module's command or as EVALSHA.
    code: WireCode,
    /// The store's circuit breaker in this process, shared with every other path to it.
    gate: Option<Gate>,
}

/// A codec for a new connection of `limiter` to `url`, or `null` when the URL is not one plain
/// `redis://` server (TLS, cluster, Sentinel, Redlock, memory): those stay on the runtime.
#[napi]
pub fn open_wire(limiter: &NativeLimiter, url: String) -> napi::Result<Option<NativeWire>> {
    let endpoint = Endpoint::from_url(&url).map_err(to_js)?;
    let core = limiter.core().clone();
    let gate = match core.store() {
        ratelock::Store::Redis(store) => Some(store.gate().clone()),
        _ => None,
    };
    Ok(endpoint.map(|endpoint| NativeWire {
        limiter: core,
        code: WireCode::new(endpoint.server_code()),
        endpoint,
        reader: ReplyReader::new(),
        gate,
    }))
}

#[napi]
impl NativeWire {
    /// The host to connect to.
    #[napi(getter)]
    pub fn host(&self) -> String {
        self.endpoint.host().to_owned()
    }

    /// The TCP port.
    #[napi(getter)]
    pub fn port(&self) -> u32 {
        u32::from(self.endpoint.port())
    }

    /// What to write first on a new connection (AUTH, SELECT; empty when the URL needs neither).
    #[napi]
    pub fn preamble(&self) -> Buffer {
        Buffer::from(self.endpoint.preamble().to_vec())
    }

    /// How many replies `preamble()` gets.
    #[napi(getter)]
    pub fn preamble_replies(&self) -> u32 {
        self.endpoint.preamble_replies() as u32
    }

    /// What to write right after the preamble: the check for the ratelock module (empty when the URL's
    /// `server_code` needs none).
    #[napi]
    pub fn check_command(&self) -> Buffer {
        Buffer::from(self.code.check_command())
    }

    /// How many replies `checkCommand()` gets (each read with `takeCheck`).
    #[napi(getter)]
    pub fn check_replies(&self) -> u32 {
        self.code.check_replies() as u32
    }

    /// `SCRIPT LOAD` of the limit script (after NOSCRIPT).
    #[napi]
    pub fn script_load(&self) -> Buffer {
        Buffer::from(wire::script_load_command())
    }

    /// Writes the bytes of `hit` (spend) or `peek` into `out` from byte `at`, and returns where they
    /// end; when they do not fit, writes nothing and returns minus their length. The call goes as the
    /// module's command when this connection's check found the module, else as EVALSHA. Throws for misuse
    /// (`ERR_RATELOCK_COST_EXCEEDS_CAPACITY`, invalid arguments) before anything is sent.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn encode_into(
        &self,
        key: Either<String, Buffer>,
        rules: &External<Arc<ratelock::PreparedRules>>,
        cost: Option<f64>,
        now_ms: Option<f64>,
        spend: bool,
        mut out: BufferSlice,
        at: u32,
    ) -> napi::Result<f64> {
        guarded_sync(|| {
            let (key, cost, now_us) = (convert::key(key), convert::cost(cost)?, convert::now_us(now_ms)?);
            let bytes = self
                .limiter
                .wire_command_as(&key, rules.rules(), cost, now_us, spend, self.code.route())
                .map_err(to_js)?;
            let start = at as usize;
            match out.get_mut(start..start + bytes.len()) {
                Some(room) => {
                    room.copy_from_slice(&bytes);
                    Ok((start + bytes.len()) as f64)
                }
                None => Ok(-(bytes.len() as f64)),
            }
        })
    }

    /// Whether `takeDecision` needs each call's key: only under `onError: 'local'`, whose local
    /// fallback decides per key (otherwise pass `null` and save its conversion on every reply).
    #[napi(getter)]
    pub fn needs_key(&self) -> bool {
        self.limiter.options().on_error == ratelock::FailurePolicy::Local
    }

    /// Whether a call may go out now (the store's circuit breaker is closed, or this call's check
    /// started a due probe in the background: then false as well). When false, answer the call
    /// with `refusedInto`.
    #[napi]
    pub fn admit(&self) -> bool {
        self.gate.as_ref().is_none_or(|gate| gate.admit().is_ok())
    }

    /// A connect failed or a call timed out: opens the circuit breaker.
    #[napi]
    pub fn outage(&self) {
        if let Some(gate) = &self.gate {
            gate.outage();
        }
    }

    /// The failure policy's answer to a call that `admit` refused: throws under `onError: 'raise'`,
    /// else writes the degraded (or, under `local`, the locally decided) decision into `out`.
    #[napi]
    pub fn refused_into(
        &self,
        key: Either<String, Buffer>,
        rules: &External<Arc<ratelock::PreparedRules>>,
        cost: Option<f64>,
        spend: bool,
        out: Float64ArraySlice,
    ) -> napi::Result<()> {
        let why = "circuit breaker open: the server failed a moment ago; calls answer at once until a background probe reaches it";
        self.fail_into(key, rules, cost, spend, false, why.to_owned(), out)
    }

    /// Appends bytes read from the socket.
    #[napi]
    pub fn push(&mut self, chunk: BufferSlice) {
        self.reader.push(&chunk);
    }

    /// Whether the stream broke (a protocol error): the socket must be closed.
    #[napi(getter)]
    pub fn broken(&self) -> bool {
        self.reader.is_broken()
    }

    /// Reads the next reply as the answer to the call whose bytes are `command` (what `encodeInto`
    /// wrote: its call tag must come back) on `rules` with `cost`: 0 when no whole reply has arrived,
    /// 1 when its decision is in `out` (`DECISION_FIELDS` numbers), 2 on NOSCRIPT (not after a
    /// `retried` call), 3 when the module's command was refused without running (from then on this
    /// connection encodes EVALSHA: encode the call again; under `server_code=module` this throws
    /// `ERR_RATELOCK_CONFIGURATION` instead). An outage's error reply throws under
    /// `onError: 'raise'`, else writes the degraded decision; another call's reply or a broken
    /// stream always throws `ERR_RATELOCK_PROTOCOL`.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn take_decision(
        &mut self,
        command: BufferSlice,
        key: Option<Either<String, Buffer>>,
        rules: &External<Arc<ratelock::PreparedRules>>,
        cost: Option<f64>,
        spend: bool,
        retried: bool,
        mut out: Float64ArraySlice,
    ) -> napi::Result<u32> {
        guarded_sync(|| {
            let reply = match self.reader.next_reply() {
                Ok(None) => return Ok(PENDING),
                Ok(Some(reply)) => reply,
                Err(broken) => return Err(to_js(ratelock::Error::Protocol(broken.to_string()))),
            };
            if let Some(gate) = &self.gate {
                gate.success();
            }
            let answer = with_call(key, rules, cost, spend, |call| {
                self.limiter
                    .wire_answer(reply, &command, call, retried)
                    .map_err(to_js)
            })?;
            match answer {
                WireAnswer::Decided(decision) => {
                    write_out(&mut out, &numbers(&decision))?;
                    Ok(DECIDED)
                }
                WireAnswer::NoScript => Ok(NO_SCRIPT),
                WireAnswer::Refused => {
                    self.code.refused().map_err(to_js)?;
                    Ok(REFUSED)
                }
                other => Err(to_js(ratelock::Error::Protocol(format!(
                    "an answer this binding does not know: {other:?}"
                )))),
            }
        })
    }

    /// Reads the next reply to `checkCommand()`, in order: false when no whole reply has arrived. The
    /// replies decide whether later calls go as the module's command; throws `ERR_RATELOCK_PROTOCOL`
    /// for a reply out of step or a broken stream.
    #[napi]
    pub fn take_check(&mut self) -> napi::Result<bool> {
        match self.reader.next_reply().map_err(to_js)? {
            None => Ok(false),
            Some(reply) => {
                if let Some(gate) = &self.gate {
                    gate.success();
                }
                self.code.read_check(reply).map(|()| true).map_err(to_js)
            }
        }
    }

    /// Reads the next reply whose content does not matter (AUTH, SELECT, SCRIPT LOAD, a timed-out
    /// call's): false when no whole reply has arrived; throws `ERR_RATELOCK_STORE_UNAVAILABLE` for an
    /// error reply (consumed) or a broken stream.
    #[napi]
    pub fn take_reply(&mut self) -> napi::Result<bool> {
        match self.reader.next_reply().map_err(to_js)? {
            None => Ok(false),
            Some(reply) => {
                if let Some(gate) = &self.gate {
                    gate.success();
                }
                reply.into_result().map(|()| true).map_err(to_js)
            }
        }
    }

    /// The answer to a call whose reply did not come in time (`timedOut`) or whose connection failed
    /// (`why`): throws under `onError: 'raise'`, else writes the degraded decision into `out`.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn fail_into(
        &self,
        key: Either<String, Buffer>,
        rules: &External<Arc<ratelock::PreparedRules>>,
        cost: Option<f64>,
        spend: bool,
        timed_out: bool,
        why: String,
        mut out: Float64ArraySlice,
    ) -> napi::Result<()> {
        guarded_sync(|| {
            let decision = with_call(Some(key), rules, cost, spend, |call| {
                let answer = if timed_out {
                    self.limiter.wire_timeout(call)
                } else {
                    self.limiter.wire_unavailable(call, &why)
                };
                answer.map_err(to_js)
            })?;
            write_out(&mut out, &numbers(&decision))
        })
    }
}

/// Runs `answer` on the call that JavaScript describes (key, prepared rules, cost, hit or peek). The
/// key matters only to the local fallback: without it, the call is read with an empty key.
fn with_call<T>(
    key: Option<Either<String, Buffer>>,
    rules: &External<Arc<ratelock::PreparedRules>>,
    cost: Option<f64>,
    spend: bool,
    answer: impl FnOnce(&WireCall<'_>) -> napi::Result<T>,
) -> napi::Result<T> {
    let (key, cost) = (key.map(convert::key).unwrap_or_default(), convert::cost(cost)?);
    answer(&WireCall {
        key: &key,
        rules: rules.rules(),
        cost,
        spend,
    })
}

fn write_out(out: &mut Float64ArraySlice, numbers: &[f64; DECISION_FIELDS]) -> napi::Result<()> {
    // SAFETY: a synchronous call on the JavaScript thread: no JavaScript runs while we write.
    let out = unsafe { out.as_mut() };
    if out.len() < DECISION_FIELDS {
        return Err(invalid_argument("out", "expected a Float64Array of 7 numbers"));
    }
    out[..DECISION_FIELDS].copy_from_slice(numbers);
    Ok(())
}
