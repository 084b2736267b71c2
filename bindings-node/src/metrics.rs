//! Metrics for Node: the core's `Recording` hook handing each measurement of `ratelock::metrics` (the
//! names, units and attributes every language shares) to a JavaScript function, `record(name, value,
//! attributes)`, queued to the JavaScript thread: `lib/otel.js`'s `Metrics` passes it on to
//! `@opentelemetry/api`.
//! Nothing is attached, and nothing costs, unless a limiter or a lock is given `metrics`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use ratelock::hook::Hook;
use ratelock::metrics::{Instrument, Measurement, Recording};

/// One measurement as JavaScript receives it: the instrument's name, the value (a count, or seconds),
/// the attributes, and how many measurements were dropped since the last one handed over (see
/// [`MAX_QUEUED`]).
type Args = FnArgs<(&'static str, f64, HashMap<&'static str, String>, f64)>;

/// The most measurements that wait for the JavaScript thread; beyond, they are dropped and counted
/// (a loop of `hitSync` calls that never yields queues one or two per call, with nothing to take them).
pub const MAX_QUEUED: usize = MAX_QUEUED_MEASUREMENTS as usize;

/// [`MAX_QUEUED`] for JavaScript (the warning of dropped measurements quotes it).
#[napi]
pub const MAX_QUEUED_MEASUREMENTS: u32 = 100_000;

/// `record` as the addon holds it: called without waiting for JavaScript, weak (a limiter's metrics
/// never keep the process alive), with at most [`MAX_QUEUED`] calls waiting.
pub type Record = ThreadsafeFunction<Args, (), Args, napi::Status, false, true, MAX_QUEUED>;

/// The hook of a `metrics` option: every measurement is queued to `record` on the JavaScript thread (a
/// measurement made on that thread runs after the call that made it). An exception `record` throws is
/// the process's `uncaughtException`, never the call's. While the queue is full, measurements are
/// dropped; the next one handed over says how many (`lib/arguments.js` warns of them).
pub(crate) fn hook_of(record: Record) -> Arc<dyn Hook> {
    let dropped = AtomicU64::new(0);
    Arc::new(Recording::new(move |measurement: Measurement<'_>| {
        let attributes = measurement
            .attributes
            .iter()
            .map(|(name, value)| (*name, value.as_str().to_owned()))
            .collect();
        let before = dropped.swap(0, Ordering::Relaxed);
        let args = (
            measurement.instrument.name(),
            measurement.value,
            attributes,
            before as f64,
        );
        // Refused when the queue is full, or once it closes as the process exits (nothing waits for
        // the measurement then): counted, with the ones this call was to report.
        if record.call(FnArgs::from(args), ThreadsafeFunctionCallMode::NonBlocking) != napi::Status::Ok {
            dropped.fetch_add(before + 1, Ordering::Relaxed);
        }
    }))
}

/// One of ratelock's instruments, as `lib/otel.js` creates it.
#[napi(object)]
pub struct InstrumentInfo {
    pub name: String,
    /// `counter` or `histogram`.
    pub kind: String,
    /// `s` for a histogram; what a counter counts (`{decision}`, `{error}`, `{hold}`).
    pub unit: String,
    pub description: String,
    /// A histogram's bucket boundaries, in seconds (empty for a counter).
    pub boundaries: Vec<f64>,
}

/// Every instrument ratelock records (the same in every language).
#[napi]
pub fn instruments() -> Vec<InstrumentInfo> {
    Instrument::ALL
        .iter()
        .map(|instrument| InstrumentInfo {
            name: instrument.name().to_owned(),
            kind: if instrument.is_histogram() {
                "histogram"
            } else {
                "counter"
            }
            .to_owned(),
            unit: instrument.unit().to_owned(),
            description: instrument.description().to_owned(),
            boundaries: instrument.boundaries().to_vec(),
        })
        .collect()
}
