//! `NativeWire`: one wire-path connection (the core's `ratelock::store::wire::WireConnection`) for
//! `lib/wire-socket.js`, which owns the socket on the JavaScript thread and only moves bytes and keeps
//! time. What to write, what each reply means, NOSCRIPT, the module route, timeouts, setup errors, a
//! broken stream and the circuit breaker are the core's. Settled calls cross as numbers: per call its
//! id, 1 (decided) or 0 (failed: its error from `takeFailure()`, in order), then its decision's
//! `DECISION_FIELDS` numbers.

use std::collections::VecDeque;
use std::sync::Arc;

use napi::bindgen_prelude::{Buffer, BufferSlice, Either, External, Float64ArraySlice};
use napi_derive::napi;
use ratelock::store::wire::{Settled, WireCall, WireConnection};

use crate::convert;
use crate::decision_numbers::{numbers, DECISION_FIELDS};
use crate::errors::{invalid_argument, to_js};
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

/// The TypeScript name of a retired connection's unwritten calls inside `ExternalObject` (opaque to
/// JavaScript; the declaration generator names an external by its Rust type).
#[napi(object, object_from_js = false)]
#[allow(
    dead_code,
    reason = "only its TypeScript declaration is used, as ExternalObject<Unsent>"
)]
pub struct Unsent {}

/// One connection: bytes out, bytes in, calls settled.
#[napi]
pub struct NativeWire {
    connection: WireConnection,
    /// Settled calls not yet handed over (more than one `out` holds).
    ready: VecDeque<Settled>,
    /// The errors of failed calls handed over, for `takeFailure`, in order.
    failures: VecDeque<String>,
}

/// A connection of `limiter` to `url`, or `null` when the URL is not one plain `redis://` server (TLS,
/// cluster, Sentinel, Redlock, memory): those stay on the runtime.
#[napi]
pub fn open_wire(limiter: &NativeLimiter, url: String) -> napi::Result<Option<NativeWire>> {
    let connection = WireConnection::open(limiter.core(), &url).map_err(to_js)?;
    Ok(connection.map(|connection| NativeWire {
        connection,
        ready: VecDeque::new(),
        failures: VecDeque::new(),
    }))
}

#[napi]
impl NativeWire {
    /// The host to connect to.
    #[napi(getter)]
    pub fn host(&self) -> String {
        self.connection.host().to_owned()
    }

    /// The TCP port.
    #[napi(getter)]
    pub fn port(&self) -> u32 {
        u32::from(self.connection.port())
    }

    /// Whether the store's circuit breaker lets a call through now (else answer it with
    /// `refusedInto`). Asked only before opening a connection: `submitInto` asks it itself.
    #[napi]
    pub fn admit(&self) -> bool {
        self.connection.admits()
    }

    /// The failure policy's answer to a call the breaker refused: throws under `onError: 'raise'`,
    /// else writes the degraded (or, under `local`, the locally decided) decision into `out`.
    #[napi]
    pub fn refused_into(
        &self,
        key: Either<String, Buffer>,
        rules: &External<Arc<ratelock::PreparedRules>>,
        cost: Option<f64>,
        spend: bool,
        mut out: Float64ArraySlice,
    ) -> napi::Result<()> {
        guarded_sync(|| {
            let (key, cost) = (convert::key(key), convert::cost(cost)?);
            self.answer_refused(&key, rules, cost, spend, &mut out)
        })
    }

    /// Submits call `id` (`hit` when `spend`, else `peek`), due by `deadlineMs` (`performance.now()`
    /// time): false when it was encoded for the output; true when it was answered at once, its
    /// decision in `out` (a hook answered it, or the circuit breaker refused it and the failure policy
    /// gave the degraded or locally decided decision). Throws for misuse before anything is sent, and
    /// for a refused call under `onError: 'raise'`.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn submit_into(
        &mut self,
        id: u32,
        key: Either<String, Buffer>,
        rules: &External<Arc<ratelock::PreparedRules>>,
        cost: Option<f64>,
        now_ms: Option<f64>,
        spend: bool,
        deadline_ms: f64,
        mut out: Float64ArraySlice,
    ) -> napi::Result<bool> {
        guarded_sync(|| {
            let (key, cost, now_us) = (convert::key(key), convert::cost(cost)?, convert::now_us(now_ms)?);
            if !self.connection.admits() {
                return self
                    .answer_refused(&key, rules, cost, spend, &mut out)
                    .map(|()| true);
            }
            let answered = self
                .connection
                .submit(id, &key, rules.rules(), cost, now_us, spend, deadline_ms)
                .map_err(to_js)?;
            match answered {
                Some(decision) => write_decision(&mut out, 0, &numbers(&decision)).map(|()| true),
                None => Ok(false),
            }
        })
    }

    /// The bytes to write now, or `null` when there are none.
    #[napi]
    pub fn take_output(&mut self) -> Option<Buffer> {
        let bytes = self.connection.take_output();
        (!bytes.is_empty()).then(|| Buffer::from(bytes))
    }

    /// The earliest deadline of a call waiting (`performance.now()` time), `null` when none waits.
    #[napi(getter)]
    pub fn next_deadline(&self) -> Option<f64> {
        self.connection.next_deadline()
    }

    /// Why the socket must be closed now (setup failed, the reply stream broke), else `null`.
    #[napi(getter)]
    pub fn close_reason(&self) -> Option<String> {
        self.connection.close_reason().map(str::to_owned)
    }

    /// Whether the reply stream broke: retire the connection before closing it.
    #[napi(getter)]
    pub fn broken(&self) -> bool {
        self.connection.is_broken()
    }

    /// Reads `chunk` from the socket at `nowMs`; writes the calls it settled into `out` and answers
    /// how many, with the connection's state after it in the high bits (see [`STATUS_COUNT`]): one
    /// crossing per read. When `out` is full, `drainInto` hands over the rest.
    #[napi]
    pub fn feed_into(
        &mut self,
        chunk: BufferSlice,
        now_ms: f64,
        mut out: Float64ArraySlice,
    ) -> napi::Result<u32> {
        guarded_sync(|| {
            let settled = self.connection.feed(&chunk, now_ms);
            self.ready.extend(settled);
            self.hand_over(&mut out)
        })
    }

    /// Answers every call past its deadline at `nowMs` by the failure policy, into `out`; answers as
    /// `feedInto`.
    #[napi]
    pub fn expire_into(&mut self, now_ms: f64, mut out: Float64ArraySlice) -> napi::Result<u32> {
        guarded_sync(|| {
            let settled = self.connection.expire(now_ms);
            self.ready.extend(settled);
            self.hand_over(&mut out)
        })
    }

    /// The socket closed (`connected`: it had opened), for `why`: every call still waiting is
    /// answered, into `out`; answers as `feedInto`.
    #[napi]
    pub fn closed_into(
        &mut self,
        connected: bool,
        why: String,
        mut out: Float64ArraySlice,
    ) -> napi::Result<u32> {
        guarded_sync(|| {
            let settled = self.connection.closed(connected, &why);
            self.ready.extend(settled);
            self.hand_over(&mut out)
        })
    }

    /// More settled calls, when the last `...Into` filled `out`; answers as `feedInto`.
    #[napi]
    pub fn drain_into(&mut self, mut out: Float64ArraySlice) -> napi::Result<u32> {
        guarded_sync(|| self.hand_over(&mut out))
    }

    /// The error of the next failed call handed over (`[ERR_RATELOCK_...] message`).
    #[napi]
    pub fn take_failure(&mut self) -> String {
        self.failures.pop_front().unwrap_or_default()
    }

    /// The server closed its side, or the stream broke: the calls not yet written, for a fresh
    /// connection to `adopt` (`null` when there are none). A call that cannot go out again is settled
    /// here: `drainInto` hands it over.
    #[napi]
    pub fn retire(&mut self) -> Option<External<ratelock::store::wire::Unsent>> {
        let (unsent, settled) = self.connection.retire();
        self.ready.extend(settled);
        (!unsent.is_empty()).then(|| External::new(unsent))
    }

    /// Takes over calls another connection never wrote (same bytes, same deadlines).
    #[napi]
    pub fn adopt(&mut self, unsent: &mut External<ratelock::store::wire::Unsent>) {
        self.connection.adopt(std::mem::take(&mut **unsent));
    }
}

impl NativeWire {
    /// The failure policy's answer to a call the breaker refused, into `out`.
    fn answer_refused(
        &self,
        key: &[u8],
        rules: &External<Arc<ratelock::PreparedRules>>,
        cost: u64,
        spend: bool,
        out: &mut Float64ArraySlice,
    ) -> napi::Result<()> {
        let call = WireCall {
            key,
            rules: rules.rules(),
            cost,
            spend,
        };
        let decision = self.connection.refused(&call).map_err(to_js)?;
        write_decision(out, 0, &numbers(&decision))
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
        status
    }

    /// Writes as many ready calls into `out` as it holds; answers how many, with the connection's
    /// state bits (see [`STATUS_COUNT`]).
    fn hand_over(&mut self, out: &mut Float64ArraySlice) -> napi::Result<u32> {
        // SAFETY: a synchronous call on the JavaScript thread: no JavaScript runs while we write.
        let room = (unsafe { out.as_mut() }.len() / SETTLED_FIELDS).min(STATUS_COUNT as usize);
        let mut count = 0;
        while count < room {
            let Some(settled) = self.ready.pop_front() else {
                break;
            };
            let at = count * SETTLED_FIELDS;
            let (id, decided, decision) = match settled {
                Settled::Decided(id, decision) => (id, 1.0, numbers(&decision)),
                Settled::Failed(id, error) => {
                    self.failures.push_back(to_js(error).reason);
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
            let slots = unsafe { out.as_mut() };
            slots[at] = f64::from(id);
            slots[at + 1] = decided;
            write_decision(out, at + 2, &decision)?;
            count += 1;
        }
        Ok(self.status(count as u32))
    }
}

fn write_decision(
    out: &mut Float64ArraySlice,
    at: usize,
    numbers: &[f64; DECISION_FIELDS],
) -> napi::Result<()> {
    // SAFETY: a synchronous call on the JavaScript thread: no JavaScript runs while we write.
    let out = unsafe { out.as_mut() };
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
