//! The metrics every binding records, named once: which instruments exist, and which measurements a
//! limiter answer or a lock event makes. The OpenTelemetry hook of each language (Rust's `otel`
//! feature, Python's `ratelock.otel`, Node's `ratelock/otel`) only hands these measurements to its
//! own API, so names, units and attributes are the same everywhere.
//!
//! | instrument | kind | attributes |
//! |---|---|---|
//! | `ratelock.decisions` | counter, `{decision}` | `outcome` (allowed, denied, would_deny, degraded, cached), `reason` (rule, ban, deny_list, allow_list), `rule` (the deciding rule's id, e.g. `g100/60000`), `store` (memory, redis), `operation` (hit, peek, reserve), `route` (module, fcall, evalsha; Redis only) |
//! | `ratelock.store.duration` | histogram, s | `operation`, `store`, `route` |
//! | `ratelock.store.errors` | counter, `{error}` | `kind` (the error's code, e.g. `timeout`), `store` |
//! | `ratelock.lock.wait.duration` | histogram, s | `kind` (lock, permit, fair lock, read hold, write hold), `outcome` (granted, timed_out, failed, cancelled) |
//! | `ratelock.lock.held.duration` | histogram, s | `kind`, `outcome` (released, lost) |
//! | `ratelock.lock.lost` | counter, `{hold}` | `kind` |
//!
//! Keys are never attributes (their number has no bound); rules are.

use std::sync::Arc;

use crate::error::Result;
#[cfg(feature = "runtime")]
use crate::hook::LockEvent;
use crate::hook::{Answered, Hook, LimitCall};
use crate::Decision;

/// One of ratelock's instruments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Instrument {
    /// `ratelock.decisions`: limiter decisions.
    Decisions,
    /// `ratelock.store.duration`: a limiter call's round trip to its store.
    StoreDuration,
    /// `ratelock.store.errors`: limiter calls that failed.
    StoreErrors,
    /// `ratelock.lock.wait.duration`: waits for a hold.
    LockWaitDuration,
    /// `ratelock.lock.held.duration`: how long holds were held.
    LockHeldDuration,
    /// `ratelock.lock.lost`: holds lost while held.
    LockLost,
}

impl Instrument {
    /// Every instrument, in the order of the table above.
    pub const ALL: [Instrument; 6] = [
        Instrument::Decisions,
        Instrument::StoreDuration,
        Instrument::StoreErrors,
        Instrument::LockWaitDuration,
        Instrument::LockHeldDuration,
        Instrument::LockLost,
    ];

    /// Its place in [`Instrument::ALL`].
    ///
    /// ```
    /// use ratelock::metrics::Instrument;
    /// for (at, instrument) in Instrument::ALL.iter().enumerate() {
    ///     assert_eq!(instrument.index(), at);
    /// }
    /// ```
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its name.
    ///
    /// ```
    /// assert_eq!(ratelock::metrics::Instrument::LockLost.name(), "ratelock.lock.lost");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Instrument::Decisions => "ratelock.decisions",
            Instrument::StoreDuration => "ratelock.store.duration",
            Instrument::StoreErrors => "ratelock.store.errors",
            Instrument::LockWaitDuration => "ratelock.lock.wait.duration",
            Instrument::LockHeldDuration => "ratelock.lock.held.duration",
            Instrument::LockLost => "ratelock.lock.lost",
        }
    }

    /// Whether it is a histogram (of seconds); the others are counters (of events).
    pub fn is_histogram(self) -> bool {
        matches!(
            self,
            Instrument::StoreDuration | Instrument::LockWaitDuration | Instrument::LockHeldDuration
        )
    }

    /// Its unit, as OpenTelemetry writes units: `s` for the histograms, and for each counter what it
    /// counts (`{decision}`, `{error}`, `{hold}`).
    ///
    /// ```
    /// use ratelock::metrics::Instrument;
    /// assert_eq!(Instrument::StoreDuration.unit(), "s");
    /// assert_eq!(Instrument::Decisions.unit(), "{decision}");
    /// ```
    pub fn unit(self) -> &'static str {
        match self {
            Instrument::Decisions => "{decision}",
            Instrument::StoreErrors => "{error}",
            Instrument::LockLost => "{hold}",
            Instrument::StoreDuration | Instrument::LockWaitDuration | Instrument::LockHeldDuration => "s",
        }
    }

    /// A histogram's bucket boundaries, in seconds (none for a counter), given to each language's
    /// OpenTelemetry API as its advice. The SDKs' default boundaries (0, 5, 10, 25 ... 10000) were made
    /// for milliseconds: in seconds, every round trip and most waits fell into one bucket. A store's round
    /// trip spans 50 µs (loopback) to seconds (a timeout); waits and holds, a millisecond to an hour.
    ///
    /// ```
    /// use ratelock::metrics::Instrument;
    /// let round_trips = Instrument::StoreDuration.boundaries();
    /// assert!(round_trips[0] < 0.001 && round_trips.windows(2).all(|pair| pair[0] < pair[1]));
    /// assert!(Instrument::Decisions.boundaries().is_empty());
    /// ```
    pub fn boundaries(self) -> &'static [f64] {
        const ROUND_TRIP: &[f64] = &[
            0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
            2.5, 5.0,
        ];
        const WAIT_OR_HOLD: &[f64] = &[
            0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
            3600.0,
        ];
        match self {
            Instrument::StoreDuration => ROUND_TRIP,
            Instrument::LockWaitDuration | Instrument::LockHeldDuration => WAIT_OR_HOLD,
            Instrument::Decisions | Instrument::StoreErrors | Instrument::LockLost => &[],
        }
    }

    /// What it measures, in a sentence.
    pub fn description(self) -> &'static str {
        match self {
            Instrument::Decisions => "Limiter decisions, by outcome, reason and deciding rule",
            Instrument::StoreDuration => "The store's round trip per limiter call",
            Instrument::StoreErrors => "Store failures, by kind",
            Instrument::LockWaitDuration => "How long waits for a lock, a permit or a hold took",
            Instrument::LockHeldDuration => "How long holds were held, to their release or loss",
            Instrument::LockLost => "Holds lost while held",
        }
    }
}

/// An attribute's value: a word of ratelock's own, a rule's id (shared, never copied), or a text
/// that lives only as long as the measurement.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    /// A fixed word (`allowed`, `redis`, `hit`...).
    Word(&'static str),
    /// A rule's id.
    Rule(&'a Arc<str>),
    /// Any other text (an error's code).
    Text(&'a str),
}

impl Value<'_> {
    /// The text of the value.
    pub fn as_str(&self) -> &str {
        match self {
            Value::Word(word) => word,
            Value::Rule(id) => id,
            Value::Text(text) => text,
        }
    }
}

/// One measurement: a counter's increment (`value` 1) or a histogram's sample (seconds).
#[derive(Debug, Clone, Copy)]
pub struct Measurement<'a> {
    /// Which instrument.
    pub instrument: Instrument,
    /// The increment or the sample.
    pub value: f64,
    /// Its attributes, by name.
    pub attributes: &'a [(&'static str, Value<'a>)],
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

/// The measurements one limiter answer makes, each handed to `record`: a decision or an error, and
/// the store's round trip where it was timed.
///
/// ```
/// use ratelock::hook::{Answered, Hook, LimitCall};
/// use ratelock::metrics::{of_answer, Instrument};
/// use std::sync::{Arc, Mutex};
///
/// #[derive(Default)]
/// struct Names(Mutex<Vec<String>>);
/// impl Hook for Names {
///     fn on_decision(&self, call: &LimitCall<'_>, answer: &mut ratelock::Result<ratelock::Decision>, how: Answered) {
///         of_answer(call, answer, how, &mut |m| self.0.lock().unwrap().push(format!("{} {}", m.instrument.name(), m.attributes[0].1.as_str())));
///     }
/// }
/// let names = Arc::new(Names::default());
/// let limiter = ratelock::Limiter::with_store(
///     ratelock::Store::new("memory://", &Default::default())?,
///     ratelock::LimiterOptions::default().with_hook(names.clone()),
/// )?;
/// let rules = limiter.rules("1/minute")?;
/// limiter.try_hit_blocking("k", &rules, 1, None).unwrap()?;
/// limiter.try_hit_blocking("k", &rules, 1, None).unwrap()?;
/// let seen = names.0.lock().unwrap();
/// assert_eq!(seen[0], "ratelock.decisions allowed");
/// assert!(seen.contains(&"ratelock.decisions denied".to_owned()));
/// # Ok::<(), ratelock::Error>(())
/// ```
pub fn of_answer(
    call: &LimitCall<'_>,
    answer: &Result<Decision>,
    how: Answered,
    record: &mut dyn FnMut(Measurement<'_>),
) {
    let store = ("store", Value::Word(call.store));
    let operation = ("operation", Value::Word(call.operation()));
    let (elapsed, route) = match how {
        Answered::ByStore { elapsed, route } => (elapsed, route),
        Answered::ByHook => (None, None),
        // An outage the failure policy answered: counted as the store error it is (as it would be
        // under `raise`), besides the degraded decision below; no round trip to time.
        Answered::ByPolicy { error } => {
            let kind = error.to_ascii_lowercase();
            record(Measurement {
                instrument: Instrument::StoreErrors,
                value: 1.0,
                attributes: &[("kind", Value::Text(&kind)), store],
            });
            (None, None)
        }
    };
    let route = route.map(|route| ("route", Value::Word(route)));
    match answer {
        Ok(decision) => {
            let rule = call.rules.get(decision.rule_index).map(|rule| rule.shared_id());
            let rule = rule.as_ref().map_or(Value::Word(""), Value::Rule);
            let attributes = [
                ("outcome", Value::Word(outcome(decision))),
                ("reason", Value::Word(decision.reason.name())),
                ("rule", rule),
                store,
                operation,
                route.unwrap_or(("route", Value::Word(""))),
            ];
            let count = attributes.len() - usize::from(route.is_none());
            record(Measurement {
                instrument: Instrument::Decisions,
                value: 1.0,
                attributes: &attributes[..count],
            });
        }
        // A caller's mistake (bad rules, a bad argument, a cost over the capacity) is no store error,
        // and no round trip to time: the memory store counted it as both, Redis (which checks it
        // before the call) as neither.
        Err(err) if is_callers(err) => return,
        Err(err) => {
            let kind = err.code().to_ascii_lowercase();
            record(Measurement {
                instrument: Instrument::StoreErrors,
                value: 1.0,
                attributes: &[("kind", Value::Text(&kind)), store],
            });
        }
    }
    if let Some(elapsed) = elapsed {
        let attributes = [operation, store, route.unwrap_or(("route", Value::Word("")))];
        let count = attributes.len() - usize::from(route.is_none());
        record(Measurement {
            instrument: Instrument::StoreDuration,
            value: elapsed.as_secs_f64(),
            attributes: &attributes[..count],
        });
    }
}

/// Whether `err` is the caller's mistake rather than the store's.
fn is_callers(err: &crate::Error) -> bool {
    err.is_invalid_rule() || err.is_invalid_argument() || err.is_cost_exceeds_capacity()
}

/// The measurements one lock event makes, each handed to `record`.
#[cfg(feature = "runtime")]
pub fn of_lock_event(event: &LockEvent<'_>, record: &mut dyn FnMut(Measurement<'_>)) {
    match event {
        LockEvent::Waited {
            what,
            waited,
            error,
            cancelled,
        } => {
            let outcome = match error {
                _ if *cancelled => "cancelled",
                None => "granted",
                Some(err) if err.is_wait_timeout() => "timed_out",
                Some(_) => "failed",
            };
            record(Measurement {
                instrument: Instrument::LockWaitDuration,
                value: waited.as_secs_f64(),
                attributes: &[("kind", Value::Word(what)), ("outcome", Value::Word(outcome))],
            });
        }
        LockEvent::Released { what, held } => record(Measurement {
            instrument: Instrument::LockHeldDuration,
            value: held.as_secs_f64(),
            attributes: &[("kind", Value::Word(what)), ("outcome", Value::Word("released"))],
        }),
        LockEvent::Lost { what, held, .. } => {
            record(Measurement {
                instrument: Instrument::LockLost,
                value: 1.0,
                attributes: &[("kind", Value::Word(what))],
            });
            record(Measurement {
                instrument: Instrument::LockHeldDuration,
                value: held.as_secs_f64(),
                attributes: &[("kind", Value::Word(what)), ("outcome", Value::Word("lost"))],
            });
        }
        LockEvent::Acquired { .. } => {}
    }
}

/// A hook that hands every measurement of every answer and lock event to `record`: what a binding
/// attaches to pass measurements to its language's metrics API.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use ratelock::metrics::Recording;
/// use ratelock::{Limiter, LimiterOptions, Store};
///
/// let decisions = Arc::new(AtomicU64::new(0));
/// let seen = decisions.clone();
/// let recording = Recording::new(move |m: ratelock::metrics::Measurement<'_>| {
///     if m.instrument == ratelock::metrics::Instrument::Decisions {
///         seen.fetch_add(1, Ordering::Relaxed);
///     }
/// });
/// let options = LimiterOptions::default().with_hook(Arc::new(recording));
/// let limiter = Limiter::with_store(Store::new("memory://", &Default::default())?, options)?;
/// let rules = limiter.rules("5/second")?;
/// limiter.try_hit_blocking("k", &rules, 1, None).unwrap()?;
/// assert_eq!(decisions.load(Ordering::Relaxed), 1);
/// # Ok::<(), ratelock::Error>(())
/// ```
pub struct Recording<F> {
    record: F,
}

impl<F> Recording<F>
where
    F: Fn(Measurement<'_>) + Send + Sync + 'static,
{
    /// The hook of `record`.
    pub fn new(record: F) -> Self {
        Recording { record }
    }
}

impl<F> Hook for Recording<F>
where
    F: Fn(Measurement<'_>) + Send + Sync + 'static,
{
    fn on_decision(&self, call: &LimitCall<'_>, answer: &mut Result<Decision>, how: Answered) {
        of_answer(call, answer, how, &mut |measurement| (self.record)(measurement));
    }

    #[cfg(feature = "runtime")]
    fn on_lock_event(&self, event: &LockEvent<'_>) {
        of_lock_event(event, &mut |measurement| (self.record)(measurement));
    }
}
