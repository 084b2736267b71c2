//! Metrics for Node: the core's `Recording` hook handing each measurement of `ratelock::metrics` (the
//! names, units and attributes every language shares) to a JavaScript function, `record(name, value,
//! attributes)`, queued to the JavaScript thread: `lib/otel.js`'s `Metrics` passes it on to
//! `@opentelemetry/api`.
//! Nothing is attached, and nothing costs, unless a limiter or a lock is given `metrics`.

use std::collections::HashMap;
use std::sync::Arc;

use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use ratelock::hook::Hook;
use ratelock::metrics::{Instrument, Measurement, Recording};

/// One measurement as JavaScript receives it: the instrument's name, the value (a count, or seconds)
/// and the attributes.
type Args = FnArgs<(&'static str, f64, HashMap<&'static str, String>)>;

/// `record` as the addon holds it: called without waiting for JavaScript, and weak (a limiter's
/// metrics never keep the process alive).
pub type Record = ThreadsafeFunction<Args, (), Args, napi::Status, false, true>;

/// The hook of a `metrics` option: every measurement is queued to `record` on the JavaScript thread (a
/// measurement made on that thread runs after the call that made it). An exception `record` throws is
/// the process's `uncaughtException`, never the call's.
pub(crate) fn hook_of(record: Record) -> Arc<dyn Hook> {
    Arc::new(Recording::new(move |measurement: Measurement<'_>| {
        let attributes = measurement
            .attributes
            .iter()
            .map(|(name, value)| (*name, value.as_str().to_owned()))
            .collect();
        let args = (measurement.instrument.name(), measurement.value, attributes);
        // The queue has no bound, so a call is refused only once the queue closes as the process
        // exits: nothing waits for that measurement any more.
        let _closing = record.call(FnArgs::from(args), ThreadsafeFunctionCallMode::NonBlocking);
    }))
}

/// One of ratelock's instruments, as `lib/otel.js` creates it.
#[napi(object)]
pub struct InstrumentInfo {
    pub name: String,
    /// `counter` or `histogram`.
    pub kind: String,
    /// `s` for a histogram, empty for a counter.
    pub unit: String,
    pub description: String,
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
            unit: instrument.unit().unwrap_or("").to_owned(),
            description: instrument.description().to_owned(),
        })
        .collect()
}
