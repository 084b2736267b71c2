//! OpenTelemetry metrics (the `otel` feature): a [`Hook`] that records every limiter decision and every
//! lock event through the `opentelemetry` API, with the names and attributes every ratelock binding
//! uses. Attach it to a limiter's or a lock's options; without the feature, nothing here is built, and
//! with it but no meter provider installed, the API's instruments do nothing.
//!
//! | instrument | kind | attributes |
//! |---|---|---|
//! | `ratelock.decisions` | counter | `outcome` (allowed, denied, would_deny, degraded, cached), `reason` (rule, ban, deny_list, allow_list), `rule` (the deciding rule's id, e.g. `g100/60000`), `store` (memory, redis), `operation` (hit, peek, reserve) |
//! | `ratelock.store.duration` | histogram, s | `operation`, `store` |
//! | `ratelock.store.errors` | counter | `kind` (the error's code, e.g. `timeout`), `store` |
//! | `ratelock.lock.wait.duration` | histogram, s | `kind` (lock, permit, fair lock, read hold, write hold), `outcome` (granted, timed_out, failed) |
//! | `ratelock.lock.held.duration` | histogram, s | `kind`, `outcome` (released, lost) |
//! | `ratelock.lock.lost` | counter | `kind` |
//!
//! Keys are never attributes (their number has no bound); rules are.

use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::KeyValue;

use crate::error::Result;
#[cfg(feature = "runtime")]
use crate::hook::LockEvent;
use crate::hook::{Answered, Hook, LimitCall};
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
    decisions: Counter<u64>,
    store_duration: Histogram<f64>,
    store_errors: Counter<u64>,
    lock_wait: Histogram<f64>,
    lock_held: Histogram<f64>,
    lock_lost: Counter<u64>,
}

impl Metrics {
    /// The instruments of `meter`.
    pub fn new(meter: &Meter) -> Self {
        Metrics {
            decisions: meter
                .u64_counter("ratelock.decisions")
                .with_description("Limiter decisions, by outcome, reason and deciding rule")
                .build(),
            store_duration: meter
                .f64_histogram("ratelock.store.duration")
                .with_unit("s")
                .with_description("The store's round trip per limiter call")
                .build(),
            store_errors: meter
                .u64_counter("ratelock.store.errors")
                .with_description("Store failures, by kind")
                .build(),
            lock_wait: meter
                .f64_histogram("ratelock.lock.wait.duration")
                .with_unit("s")
                .with_description("How long waits for a lock, a permit or a hold took")
                .build(),
            lock_held: meter
                .f64_histogram("ratelock.lock.held.duration")
                .with_unit("s")
                .with_description("How long holds were held, to their release or loss")
                .build(),
            lock_lost: meter
                .u64_counter("ratelock.lock.lost")
                .with_description("Holds lost while held")
                .build(),
        }
    }

    /// The instruments of the global meter provider's `ratelock` meter.
    pub fn global() -> Self {
        Self::new(&opentelemetry::global::meter("ratelock"))
    }
}

/// What a decision came to, as the `outcome` attribute says it.
fn outcome(decision: &Decision) -> &'static str {
    if decision.cached {
        "cached"
    } else if decision.degraded {
        "degraded"
    } else if decision.would_deny {
        "would_deny"
    } else if decision.allowed {
        "allowed"
    } else {
        "denied"
    }
}

impl Hook for Metrics {
    fn on_decision(&self, call: &LimitCall<'_>, answer: &mut Result<Decision>, how: Answered) {
        let store = KeyValue::new("store", call.store);
        let operation = KeyValue::new("operation", call.operation());
        match answer {
            Ok(decision) => {
                let rule: opentelemetry::StringValue = call
                    .rules
                    .get(decision.rule_index)
                    .map_or_else(|| "".into(), |rule| rule.shared_id().into());
                self.decisions.add(
                    1,
                    &[
                        KeyValue::new("outcome", outcome(decision)),
                        KeyValue::new("reason", decision.reason.name()),
                        KeyValue::new("rule", rule),
                        store.clone(),
                        operation.clone(),
                    ],
                );
            }
            Err(err) => self.store_errors.add(
                1,
                &[
                    KeyValue::new("kind", err.code().to_ascii_lowercase()),
                    store.clone(),
                ],
            ),
        }
        if let Answered::ByStore {
            elapsed: Some(elapsed),
        } = how
        {
            self.store_duration
                .record(elapsed.as_secs_f64(), &[operation, store]);
        }
    }

    #[cfg(feature = "runtime")]
    fn on_lock_event(&self, event: &LockEvent<'_>) {
        match event {
            LockEvent::Waited { what, waited, error } => {
                let outcome = match error {
                    None => "granted",
                    Some(err) if err.is_wait_timeout() => "timed_out",
                    Some(_) => "failed",
                };
                self.lock_wait.record(
                    waited.as_secs_f64(),
                    &[KeyValue::new("kind", *what), KeyValue::new("outcome", outcome)],
                );
            }
            LockEvent::Released { what, held } => self.lock_held.record(
                held.as_secs_f64(),
                &[KeyValue::new("kind", *what), KeyValue::new("outcome", "released")],
            ),
            LockEvent::Lost { what, held, .. } => {
                self.lock_lost.add(1, &[KeyValue::new("kind", *what)]);
                self.lock_held.record(
                    held.as_secs_f64(),
                    &[KeyValue::new("kind", *what), KeyValue::new("outcome", "lost")],
                );
            }
            _ => {}
        }
    }
}
