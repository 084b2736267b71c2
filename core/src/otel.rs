//! OpenTelemetry metrics (the `otel` feature): a [`Hook`] that records every limiter decision and every
//! lock event through the `opentelemetry` API, with the names and attributes every ratelock binding
//! uses. Attach it to a limiter's or a lock's options; without the feature, nothing here is built, and
//! with it but no meter provider installed, the API's instruments do nothing.
//!
//! The instruments and their attributes are [`metrics`](crate::metrics)' table.
//!
//! Keys are never attributes (their number has no bound); rules are.

use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::{KeyValue, StringValue};

use crate::error::Result;
#[cfg(feature = "runtime")]
use crate::hook::LockEvent;
use crate::hook::{Answered, Hook, LimitCall};
use crate::metrics::{Instrument, Measurement, Value};
use crate::Decision;

/// The instruments, made once from a meter; a [`Hook`].
///
/// ```
/// use std::sync::Arc;
/// use ratelock::{Limiter, LimiterOptions, Store};
///
/// let metrics = Arc::new(ratelock::otel::Metrics::global());
/// let options = LimiterOptions::default().with_hook(metrics);
/// let limiter = Limiter::with_store(Store::new("memory://", &Default::default())?, options)?;
/// let rules = limiter.rules("10/second")?;
/// limiter.try_hit_blocking("k", &rules, 1, None).unwrap()?; // counted, if a provider is installed
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Metrics {
    counters: [Option<Counter<u64>>; Instrument::ALL.len()],
    histograms: [Option<Histogram<f64>>; Instrument::ALL.len()],
}

impl Metrics {
    /// The instruments of `meter`.
    pub fn new(meter: &Meter) -> Self {
        let counters = Instrument::ALL.map(|instrument| {
            (!instrument.is_histogram()).then(|| {
                meter
                    .u64_counter(instrument.name())
                    .with_unit(instrument.unit())
                    .with_description(instrument.description())
                    .build()
            })
        });
        let histograms = Instrument::ALL.map(|instrument| {
            instrument.is_histogram().then(|| {
                meter
                    .f64_histogram(instrument.name())
                    .with_unit(instrument.unit())
                    .with_description(instrument.description())
                    .with_boundaries(instrument.boundaries().to_vec())
                    .build()
            })
        });
        Metrics { counters, histograms }
    }

    /// The instruments of the global meter provider's `ratelock` meter.
    pub fn global() -> Self {
        Self::new(&opentelemetry::global::meter("ratelock"))
    }

    /// Hands one measurement to its instrument.
    fn record(&self, measurement: Measurement<'_>) {
        let index = measurement.instrument.index();
        const MOST: usize = 8;
        let attributes = measurement.attributes;
        debug_assert!(attributes.len() <= MOST);
        let pairs: [KeyValue; MOST] = std::array::from_fn(|at| match attributes.get(at) {
            Some((name, value)) => KeyValue::new(*name, string_of(value)),
            None => KeyValue::new("", ""),
        });
        let pairs = &pairs[..attributes.len().min(MOST)];
        if let Some(counter) = &self.counters[index] {
            counter.add(measurement.value as u64, pairs);
        } else if let Some(histogram) = &self.histograms[index] {
            histogram.record(measurement.value, pairs);
        }
    }
}

/// An attribute's value as the API takes it, without copying a word or a rule's id.
fn string_of(value: &Value<'_>) -> StringValue {
    match value {
        Value::Word(word) => (*word).into(),
        Value::Rule(id) => (*id).clone().into(),
        Value::Text(text) => text.to_string().into(),
    }
}

impl Hook for Metrics {
    fn on_decision(&self, call: &LimitCall<'_>, answer: &mut Result<Decision>, how: Answered) {
        crate::metrics::of_answer(call, answer, how, &mut |measurement| self.record(measurement));
    }

    #[cfg(feature = "runtime")]
    fn on_lock_event(&self, event: &LockEvent<'_>) {
        crate::metrics::of_lock_event(event, &mut |measurement| self.record(measurement));
    }
}
