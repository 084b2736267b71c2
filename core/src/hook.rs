//! The one place every limiter decision and every lock event passes: [`Hook`]s attached to a
//! limiter's or a lock's options. Metrics, shadow mode and a local deny cache plug in here, once, for
//! every binding and every store. With no hook attached a call pays one branch on an empty list.

use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "runtime")]
use crate::algorithm::lease::LostReason;
#[cfg(feature = "runtime")]
use crate::error::Error;
use crate::error::Result;
use crate::rule::Rules;
use crate::Decision;

/// What a limiter call asked, as a hook sees it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LimitCall<'a> {
    /// The limiter's key prefix.
    pub prefix: &'a str,
    /// The user key (never a metric attribute: unbounded).
    pub key: &'a [u8],
    /// The rules checked, all or nothing (a `shadow` rule that denies stops nothing).
    pub rules: &'a Rules,
    /// Units asked for.
    pub cost: u64,
    /// `hit` (true) or `peek` (false).
    pub spend: bool,
    /// The call's explicit time in µs since the epoch (`hit_at`, a local clock), `None` for the store's.
    pub now_us: Option<u64>,
    /// A reservation's longest wait in µs ([`Limiter::reserve`](crate::Limiter::reserve)); `None` for a
    /// hit or a peek.
    pub max_wait_us: Option<u64>,
    /// The store's kind: `memory` or `redis`.
    pub store: &'static str,
}

impl LimitCall<'_> {
    /// What the call does: `hit`, `peek` or `reserve`.
    pub fn operation(&self) -> &'static str {
        match (self.spend, self.max_wait_us) {
            (true, Some(_)) => "reserve",
            (true, None) => "hit",
            (false, _) => "peek",
        }
    }
}

/// How a limiter answer came about, beside the answer itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answered {
    /// The store answered (a decision or an error; an outage the failure policy answered is
    /// [`ByPolicy`](Self::ByPolicy)).
    ByStore {
        /// From the call's start to its answer, where it was measured (on a caller-driven wire
        /// connection, on the caller's clock).
        elapsed: Option<Duration>,
        /// Which server code a Redis store's calls take when the answer comes: `module`, `fcall`
        /// or `evalsha` (`None` for the memory store, or while the server's code is being checked).
        route: Option<&'static str>,
    },
    /// A hook's [`Hook::before_decision`] answered; the store was not asked.
    ByHook,
    /// The store failed with an outage and the failure policy (`allow`, `deny` or `local`) answered: the
    /// answer is a degraded decision, and `error` the outage's code (`STORE_UNAVAILABLE` or `TIMEOUT`,
    /// as [`Error::code`](crate::Error::code) says), which an error under the `raise` policy would be.
    ByPolicy {
        /// The outage's error code.
        error: &'static str,
    },
}

/// Something that happened to a hold of a lock kind.
#[cfg(feature = "runtime")]
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum LockEvent<'a> {
    /// A wait for a hold ended: granted, or not (`error`: a wait timeout, an outage...), or given up by
    /// its caller (`cancelled`: the future dropped, an `AbortSignal`, an asyncio cancellation).
    Waited {
        /// `"lock"`, `"permit"`, `"fair lock"`, `"read hold"` or `"write hold"`.
        what: &'static str,
        /// How long the wait took.
        waited: Duration,
        /// `None` when granted or cancelled.
        error: Option<&'a Error>,
        /// Whether the caller gave the wait up before it ended.
        cancelled: bool,
    },
    /// A hold was taken.
    Acquired {
        /// As in [`LockEvent::Waited`].
        what: &'static str,
        /// Its fencing token (`None` for a semaphore permit).
        fencing_token: Option<u64>,
    },
    /// A hold was given back (by `release`, or by its guard's drop once the store answered); a hold
    /// lost before, or found gone by the release, was not (its [`LockEvent::Lost`] ended it).
    Released {
        /// As in [`LockEvent::Waited`].
        what: &'static str,
        /// How long it was held.
        held: Duration,
    },
    /// A hold was lost.
    Lost {
        /// As in [`LockEvent::Waited`].
        what: &'static str,
        /// How long it was held until then.
        held: Duration,
        /// Why.
        reason: &'a LostReason,
    },
}

/// A hook on every decision of a limiter and every event of a lock. Every method has a default that
/// does nothing, so a hook implements only what it needs. Hooks run on the calling thread, inside the
/// call: keep them short and never block.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use ratelock::hook::{Answered, Hook, LimitCall};
/// use ratelock::{Decision, Limiter, LimiterOptions, Store};
///
/// #[derive(Default)]
/// struct Denials(AtomicU64);
///
/// impl Hook for Denials {
///     fn on_decision(&self, _call: &LimitCall<'_>, answer: &mut ratelock::Result<Decision>, _how: Answered) {
///         if matches!(answer, Ok(decision) if !decision.allowed) {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// let denials = Arc::new(Denials::default());
/// let options = LimiterOptions::default().with_hook(denials.clone());
/// let limiter = Limiter::with_store(Store::new("memory://", &Default::default())?, options)?;
/// let rules = limiter.rules("1/minute")?;
/// for _ in 0..3 {
///     limiter.try_hit_blocking("k", &rules, 1, None).unwrap()?;
/// }
/// assert_eq!(denials.0.load(Ordering::Relaxed), 2);
/// # Ok::<(), ratelock::Error>(())
/// ```
pub trait Hook: Send + Sync + 'static {
    /// Before a limiter call goes to the store: a decision returned here is the call's answer and
    /// the store is not asked (a local deny cache). The first hook that answers wins.
    fn before_decision(&self, call: &LimitCall<'_>) -> Option<Decision> {
        let _ = call;
        None
    }

    /// Every limiter answer (a decision, a degraded decision, or an error), hook after hook in the
    /// order they were attached; a hook may change it (shadow mode lets a denial through). A call
    /// refused before it is made (a key too long, `now` out of range) has no answer to see.
    fn on_decision(&self, call: &LimitCall<'_>, answer: &mut Result<Decision>, how: Answered) {
        let _ = (call, answer, how);
    }

    /// Every event of a hold of a lock kind.
    #[cfg(feature = "runtime")]
    fn on_lock_event(&self, event: &LockEvent<'_>) {
        let _ = event;
    }
}

/// A closure is a hook that sees (and may change) every limiter answer, and nothing else.
///
/// ```
/// use std::sync::Arc;
/// use ratelock::hook::{Answered, LimitCall};
/// use ratelock::{Decision, Limiter, LimiterOptions, Store};
///
/// // Shadow mode in one line: every denial is let through (and still counted by the store).
/// let shadow = |_: &LimitCall<'_>, answer: &mut ratelock::Result<Decision>, _: Answered| {
///     if let Ok(decision) = answer {
///         decision.allowed = true;
///     }
/// };
/// let options = LimiterOptions::default().with_hook(Arc::new(shadow));
/// let limiter = Limiter::with_store(Store::new("memory://", &Default::default())?, options)?;
/// let rules = limiter.rules("1/minute")?;
/// for _ in 0..3 {
///     assert!(limiter.try_hit_blocking("k", &rules, 1, None).unwrap()?.allowed);
/// }
/// # Ok::<(), ratelock::Error>(())
/// ```
impl<F> Hook for F
where
    F: Fn(&LimitCall<'_>, &mut Result<Decision>, Answered) + Send + Sync + 'static,
{
    fn on_decision(&self, call: &LimitCall<'_>, answer: &mut Result<Decision>, how: Answered) {
        self(call, answer, how)
    }
}

/// The hooks attached to a limiter's or a lock's options, in order. Empty by default; cloning is one
/// reference count.
#[derive(Clone, Default)]
pub struct Hooks {
    attached: Option<Arc<[Arc<dyn Hook>]>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Hooks({})",
            self.attached.as_ref().map_or(0, |hooks| hooks.len())
        )
    }
}

impl Hooks {
    /// These hooks and `hook` after them.
    pub fn with(&self, hook: Arc<dyn Hook>) -> Hooks {
        let mut all: Vec<Arc<dyn Hook>> = self.iter().cloned().collect();
        all.push(hook);
        Hooks {
            attached: Some(all.into()),
        }
    }

    /// Whether no hook is attached (then nothing is measured or called).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.attached.is_none()
    }

    fn iter(&self) -> impl Iterator<Item = &Arc<dyn Hook>> {
        self.attached.iter().flat_map(|hooks| hooks.iter())
    }

    /// The first answer a hook gives before the store is asked.
    pub(crate) fn before_decision(&self, call: &LimitCall<'_>) -> Option<Decision> {
        self.iter().find_map(|hook| hook.before_decision(call))
    }

    /// Passes `answer` through every hook.
    pub(crate) fn on_decision(&self, call: &LimitCall<'_>, answer: &mut Result<Decision>, how: Answered) {
        for hook in self.iter() {
            hook.on_decision(call, answer, how);
        }
    }

    /// Tells every hook of `event`.
    #[cfg(feature = "runtime")]
    pub(crate) fn on_lock_event(&self, event: &LockEvent<'_>) {
        for hook in self.iter() {
            hook.on_lock_event(event);
        }
    }
}
