//! One wire-path connection (the core's `ratelock::store::wire::WireConnection`) for
//! `lib/wire-socket.js`, which owns the socket on the JavaScript thread and only moves bytes and keeps
//! time. What to write, what each reply means, NOSCRIPT, the module route, timeouts, setup errors, a
//! broken stream and the circuit breaker are the core's. Settled calls cross as numbers, into the
//! `Float64Array` the connection was opened with: per call its id, 1 (decided) or 0 (failed: its error
//! from `wireTakeFailure()`, in order), then its decision's `DECISION_FIELDS` numbers.
//!
//! The connection is a handle (`handle.rs`) passed to free functions (`wireSubmitInto(codec, …)`), not
//! a class instance: a method pays napi-rs's bookkeeping for its receiver on every call (unwrapping it,
//! checking its type tag, registering and releasing the borrow), about 4,000 instructions, and a call
//! makes three crossings (submit, output, reply).

use std::collections::VecDeque;
use std::sync::Arc;

use napi::bindgen_prelude::{Buffer, BufferSlice, Float64Array};
use napi::Env;
use napi_derive::napi;
use ratelock::store::wire::{Settled, WireCall, WireConnection};

use crate::convert;
use crate::decision_numbers::{numbers, DECISION_FIELDS};
use crate::errors::{from_napi, invalid_argument, to_js, Failure, Result};
use crate::handle::{Handed, Handle};
use crate::key_arg::KeyArg;
use crate::limiter::NativeLimiter;
use crate::runtime::guarded_sync;

/// Numbers per settled call in `out`: its id, decided or failed, its decision.
const SETTLED_FIELDS: usize = 2 + DECISION_FIELDS;

/// What `feedInto`, `expireInto`, `closedInto` and `drainInto` answer: the count of settled calls in
/// these low bits (at most `out`'s room), with the `STATUS_*` bits above them for the connection's
/// state after the call, so that reading a reply is one crossing.
#[napi]
pub const STATUS_COUNT: u32 = 0xffff;
/// No call waits for its answer.
#[napi]
pub const STATUS_IDLE: u32 = 1 << 16;
/// There are bytes to write (`takeOutput`): a retry after NOSCRIPT or a refused module command.
#[napi]
pub const STATUS_OUTPUT: u32 = 1 << 17;
/// The socket must be closed now: `closeReason` says why.
#[napi]
pub const STATUS_CLOSE: u32 = 1 << 18;
/// A call timed out on this connection, which is given up: retire it (`wireRetire`), so later calls
/// go to a fresh one, and close its socket once no call waits on it.
#[napi]
pub const STATUS_RETIRE: u32 = 1 << 19;

/// The TypeScript name of a retired connection's unwritten calls inside `ExternalObject` (opaque to
/// JavaScript; the declaration generator names an external by its Rust type).
#[napi(object, object_from_js = false)]
#[allow(
    dead_code,
    reason = "only its TypeScript declaration is used, as ExternalObject<Unsent>"
)]
pub struct Unsent {}

/// One connection: bytes out, bytes in, calls settled into `out`.
pub struct WireCodec {
    connection: WireConnection,
    /// Where settled calls (and a call answered at once) are written.
    out: Float64Array,
    /// Settled calls not yet handed over (more than one `out` holds).
    ready: VecDeque<Settled>,
    /// The errors of failed calls handed over, for `takeFailure`, in order.
    failures: VecDeque<Failure>,
}

/// The TypeScript name of [`WireCodec`] inside `ExternalObject` (opaque to JavaScript).
mod declaration {
    #[napi_derive::napi(object, object_from_js = false)]
    #[allow(
        dead_code,
        reason = "only its TypeScript declaration is used, as ExternalObject<WireCodec>"
    )]
    pub struct WireCodec {}
}

/// An opened connection: the codec, and where its socket goes.
#[napi(object, object_from_js = false)]
pub struct WireOpened {
    #[napi(ts_type = "ExternalObject<WireCodec>")]
    pub codec: Handed<WireCodec>,
    /// The host to connect to.
    pub host: String,
    /// The TCP port.
    pub port: u32,
    /// `rediss://`: the socket is TLS, verifying the server's certificate and name (`host`).
    pub tls: bool,
    /// With `tls`: the PEM certificate(s) to trust in place of the public roots (absent: those).
    pub tls_root_ca: Option<Buffer>,
    /// With `tls`: the client certificate (PEM chain) to present when the server asks for one.
    pub tls_client_cert: Option<Buffer>,
    /// With `tlsClientCert`: its private key (PEM).
    pub tls_client_key: Option<Buffer>,
}

/// A connection of `limiter` to `url`, writing settled calls into `out` (room for at least one), or
/// `null` when the URL is not one `redis://` or `rediss://` server (cluster, Sentinel, Redlock, Unix
/// socket, memory): those stay on the runtime.
#[napi]
pub fn open_wire(limiter: &NativeLimiter, url: String, out: Float64Array) -> Result<Option<WireOpened>> {
    if out.len() < SETTLED_FIELDS {
        return Err(invalid_argument(
            "out",
            format!("expected a Float64Array of at least {SETTLED_FIELDS} numbers"),
        ));
    }
    let connection = WireConnection::open(limiter.core(), &url).map_err(to_js)?;
    Ok(connection.map(|connection| WireOpened {
        host: connection.host().to_owned(),
        port: u32::from(connection.port()),
        tls: connection.tls(),
        tls_root_ca: connection.tls_root_ca().map(|pem| Buffer::from(pem.to_vec())),
        tls_client_cert: connection.tls_client_cert().map(|pem| Buffer::from(pem.to_vec())),
        tls_client_key: connection.tls_client_key().map(|pem| Buffer::from(pem.to_vec())),
        codec: Handed(WireCodec {
            connection,
            out,
            ready: VecDeque::new(),
            failures: VecDeque::new(),
        }),
    }))
}

/// Whether the store's circuit breaker lets a call through now (else answer it with
/// `wireRefusedInto`). Asked only before opening a connection: `wireSubmitInto` asks it itself, unless
/// told the call was admitted so (a second asking would refuse a half-open breaker's one trial).
#[napi]
pub fn wire_admit(#[napi(ts_arg_type = "ExternalObject<WireCodec>")] codec: Handle<WireCodec>) -> bool {
    codec.connection.admits()
}

/// The failure policy's answer to a call the breaker refused: throws under `onError: 'raise'`, else
/// writes the degraded (or, under `local`, the locally decided) decision into `out`.
#[napi(
    ts_args_type = "codec: ExternalObject<WireCodec>, key: string | Buffer, rules: ExternalObject<PreparedRules>, cost: number | undefined | null, spend: boolean"
)]
pub fn wire_refused_into(
    mut codec: Handle<WireCodec>,
    key: KeyArg,
    rules: Handle<Arc<ratelock::PreparedRules>>,
    cost: Option<f64>,
    spend: bool,
) -> Result<()> {
    guarded_sync(|| {
        let cost = convert::cost(cost)?;
        codec.answer_refused(key.bytes(), &rules, cost, spend)
    })
}

/// Submits call `id` (`hit` when `spend`, else `peek`), due by `deadlineMs` (`performance.now()`
/// time): false when it was encoded for the output; true when it was answered at once, its decision in
/// `out` (a hook answered it, or the circuit breaker refused it and the failure policy gave the
/// degraded or locally decided decision). Throws for misuse before anything is sent, and for a refused
/// call under `onError: 'raise'`.
#[napi(
    ts_args_type = "codec: ExternalObject<WireCodec>, id: number, key: string | Buffer, rules: ExternalObject<PreparedRules>, cost: number | undefined | null, nowMs: number | undefined | null, spend: boolean, deadlineMs: number, admitted: boolean"
)]
#[allow(clippy::too_many_arguments)]
pub fn wire_submit_into(
    mut codec: Handle<WireCodec>,
    id: u32,
    key: KeyArg,
    rules: Handle<Arc<ratelock::PreparedRules>>,
    cost: Option<f64>,
    now_ms: Option<f64>,
    spend: bool,
    deadline_ms: f64,
    admitted: bool,
) -> Result<bool> {
    guarded_sync(|| {
        let (key, cost, now_us) = (key.bytes(), convert::cost(cost)?, convert::now_us(now_ms)?);
        let codec = &mut *codec;
        if !admitted && !codec.connection.admits() {
            return codec.answer_refused(key, &rules, cost, spend).map(|()| true);
        }
        let answered = codec
            .connection
            .submit(id, key, rules.rules(), cost, now_us, spend, deadline_ms)
            .map_err(to_js)?;
        match answered {
            Some(decision) => codec.write_decision(0, &numbers(&decision)).map(|()| true),
            None => Ok(false),
        }
    })
}

/// The bytes to write now, or `null` when there are none. A copy into a Buffer of the engine's own:
/// handing over the Rust buffer itself (an external one, with a finalizer) cost more than the copy.
#[napi]
pub fn wire_take_output<'env>(
    env: &'env Env,
    #[napi(ts_arg_type = "ExternalObject<WireCodec>")] mut codec: Handle<WireCodec>,
) -> Result<Option<BufferSlice<'env>>> {
    let bytes = codec.connection.take_output();
    if bytes.is_empty() {
        return Ok(None);
    }
    BufferSlice::copy_from(env, bytes).map(Some).map_err(from_napi)
}

/// The earliest deadline of a call waiting (`performance.now()` time), `null` when none waits.
#[napi]
pub fn wire_next_deadline(
    #[napi(ts_arg_type = "ExternalObject<WireCodec>")] codec: Handle<WireCodec>,
) -> Option<f64> {
    codec.connection.next_deadline()
}

/// Why the socket must be closed now (setup failed, the reply stream broke), else `null`.
#[napi]
pub fn wire_close_reason(
    #[napi(ts_arg_type = "ExternalObject<WireCodec>")] codec: Handle<WireCodec>,
) -> Option<String> {
    codec.connection.close_reason().map(str::to_owned)
}

/// Whether `why`, the words a socket closed with, refuses every connection alike (a TLS alert refusing
/// the client, a server certificate not trusted): a configuration error, which a fresh connection
/// would meet again.
#[napi]
pub fn wire_refuses_every_connection(why: String) -> bool {
    ratelock::store::connection_core::connection_failure(&why).is_configuration()
}

/// Whether the reply stream broke: retire the connection before closing it.
#[napi]
pub fn wire_broken(#[napi(ts_arg_type = "ExternalObject<WireCodec>")] codec: Handle<WireCodec>) -> bool {
    codec.connection.is_broken()
}

/// Reads `chunk` from the socket at `nowMs`; writes the calls it settled into `out` and answers how
/// many, with the connection's state after it in the high bits (see [`STATUS_COUNT`]): one crossing
/// per read. When `out` is full, `wireDrainInto` hands over the rest.
#[napi]
pub fn wire_feed_into(
    #[napi(ts_arg_type = "ExternalObject<WireCodec>")] mut codec: Handle<WireCodec>,
    chunk: BufferSlice,
    now_ms: f64,
) -> Result<u32> {
    guarded_sync(|| {
        let settled = codec.connection.feed(&chunk, now_ms);
        codec.ready.extend(settled);
        codec.hand_over()
    })
}

/// Answers every call past its deadline at `nowMs` by the failure policy, into `out`; answers as
/// `wireFeedInto`.
#[napi]
pub fn wire_expire_into(
    #[napi(ts_arg_type = "ExternalObject<WireCodec>")] mut codec: Handle<WireCodec>,
    now_ms: f64,
) -> Result<u32> {
    guarded_sync(|| {
        let settled = codec.connection.expire(now_ms);
        codec.ready.extend(settled);
        codec.hand_over()
    })
}

/// The socket closed (`connected`: it had opened), for `why`: every call still waiting is answered,
/// into `out`; answers as `wireFeedInto`.
#[napi]
pub fn wire_closed_into(
    #[napi(ts_arg_type = "ExternalObject<WireCodec>")] mut codec: Handle<WireCodec>,
    connected: bool,
    why: String,
) -> Result<u32> {
    guarded_sync(|| {
        let settled = codec.connection.closed(connected, &why);
        codec.ready.extend(settled);
        codec.hand_over()
    })
}

/// More settled calls, when the last `...Into` filled `out`; answers as `wireFeedInto`.
#[napi]
pub fn wire_drain_into(
    #[napi(ts_arg_type = "ExternalObject<WireCodec>")] mut codec: Handle<WireCodec>,
) -> Result<u32> {
    guarded_sync(|| codec.hand_over())
}

/// The error of the next failed call handed over (`null` when there is none left).
#[napi]
pub fn wire_take_failure(
    #[napi(ts_arg_type = "ExternalObject<WireCodec>")] mut codec: Handle<WireCodec>,
) -> Option<Failure> {
    codec.failures.pop_front()
}

/// The server closed its side, or the stream broke: the calls not yet written, for a fresh connection
/// to `wireAdopt` (`null` when there are none). A call that cannot go out again is settled here:
/// `wireDrainInto` hands it over.
#[napi(ts_return_type = "ExternalObject<Unsent> | null")]
pub fn wire_retire(
    #[napi(ts_arg_type = "ExternalObject<WireCodec>")] mut codec: Handle<WireCodec>,
) -> Option<Handed<ratelock::store::wire::Unsent>> {
    let (unsent, settled) = codec.connection.retire();
    codec.ready.extend(settled);
    (!unsent.is_empty()).then_some(Handed(unsent))
}

/// Takes over calls another connection never wrote (same bytes, same deadlines).
#[napi]
pub fn wire_adopt(
    #[napi(ts_arg_type = "ExternalObject<WireCodec>")] mut codec: Handle<WireCodec>,
    #[napi(ts_arg_type = "ExternalObject<Unsent>")] mut unsent: Handle<ratelock::store::wire::Unsent>,
) {
    codec.connection.adopt(std::mem::take(&mut *unsent));
}

impl WireCodec {
    /// The failure policy's answer to a call the breaker refused, into `out`.
    fn answer_refused(
        &mut self,
        key: &[u8],
        rules: &ratelock::PreparedRules,
        cost: u64,
        spend: bool,
    ) -> Result<()> {
        let call = WireCall {
            key,
            rules: rules.rules(),
            cost,
            spend,
        };
        let decision = self.connection.refused(&call).map_err(to_js)?;
        self.write_decision(0, &numbers(&decision))
    }

    /// `count` settled calls with the connection's state after them: the `STATUS_*` bits.
    fn status(&self, count: u32) -> u32 {
        let mut status = count;
        if self.connection.in_flight() == 0 {
            status |= STATUS_IDLE;
        }
        if self.connection.has_output() {
            status |= STATUS_OUTPUT;
        }
        if self.connection.close_reason().is_some() {
            status |= STATUS_CLOSE;
        }
        if self.connection.given_up() {
            status |= STATUS_RETIRE;
        }
        status
    }

    /// Writes as many ready calls into `out` as it holds; answers how many, with the connection's
    /// state bits (see [`STATUS_COUNT`]).
    fn hand_over(&mut self) -> Result<u32> {
        // SAFETY: a synchronous call on the JavaScript thread: no JavaScript runs while we write.
        let room = (unsafe { self.out.as_mut() }.len() / SETTLED_FIELDS).min(STATUS_COUNT as usize);
        let mut count = 0;
        while count < room {
            let Some(settled) = self.ready.pop_front() else {
                break;
            };
            let at = count * SETTLED_FIELDS;
            let (id, decided, decision) = match settled {
                Settled::Decided(id, decision) => (id, 1.0, numbers(&decision)),
                Settled::Failed(id, error) => {
                    self.failures.push_back(to_js(error).into());
                    (id, 0.0, [0.0; DECISION_FIELDS])
                }
                other => {
                    let error = ratelock::Error::Protocol(format!(
                        "a settlement this binding does not know: {other:?}"
                    ));
                    return Err(to_js(error));
                }
            };
            // SAFETY: as above.
            let slots = unsafe { self.out.as_mut() };
            slots[at] = f64::from(id);
            slots[at + 1] = decided;
            self.write_decision(at + 2, &decision)?;
            count += 1;
        }
        Ok(self.status(count as u32))
    }

    /// Writes one decision's numbers into `out` from `at`.
    fn write_decision(&mut self, at: usize, numbers: &[f64; DECISION_FIELDS]) -> Result<()> {
        // SAFETY: a synchronous call on the JavaScript thread: no JavaScript runs while we write.
        let out = unsafe { self.out.as_mut() };
        match out.get_mut(at..at + DECISION_FIELDS) {
            Some(room) => {
                room.copy_from_slice(numbers);
                Ok(())
            }
            None => Err(invalid_argument(
                "out",
                "expected a Float64Array with room for a decision",
            )),
        }
    }
}
