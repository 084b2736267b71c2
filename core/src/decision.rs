//! `Decision`: the answer to a hit or peek over all rules of a key, with the rule that decided it.

use std::time::Duration;

use crate::algorithm::standing::{Reason, Verdict};
use crate::algorithm::{combine, Outcome, Outcomes};

/// One rule's part of a [`Decision`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RuleDecision {
    /// Whether this rule admits the request.
    pub allowed: bool,
    /// The rule's limit.
    pub limit: u64,
    /// Units left after this request (nothing is spent when the request is denied).
    pub remaining: u64,
    /// Until the rule is fully replenished / its window ends.
    pub reset_after: Duration,
    /// Zero when allowed; else the exact wait until this rule would admit the same request.
    pub retry_after: Duration,
}

impl From<Outcome> for RuleDecision {
    fn from(o: Outcome) -> Self {
        RuleDecision {
            allowed: o.allowed,
            limit: o.limit,
            remaining: o.remaining,
            reset_after: Duration::from_micros(o.reset_after_us),
            retry_after: Duration::from_micros(o.retry_after_us),
        }
    }
}

/// The answer to `hit` or `peek`. Denied is a value, not an error.
///
/// `limit`, `remaining`, `reset_after` and `retry_after` come from the deciding rule (`rule_index`):
/// when denied, the denying rule with the longest wait; when allowed, the rule with the least remaining.
///
/// ```
/// # tokio_test_block_on(async {
/// let limiter = ratelock::Limiter::memory();
/// let rules = "1/minute".parse()?;
/// assert!(limiter.hit("k", &rules, 1).await?.allowed);
/// let denied = limiter.hit("k", &rules, 1).await?;
/// assert!(!denied.allowed);
/// assert!(denied.retry_after > std::time::Duration::from_secs(59));
/// # Ok::<(), ratelock::Error>(()) });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decision {
    /// True when every rule admitted the request (and it was spent, for `hit`).
    pub allowed: bool,
    /// The deciding rule's limit.
    pub limit: u64,
    /// The deciding rule's remaining units.
    pub remaining: u64,
    /// Until the deciding rule is fully replenished.
    pub reset_after: Duration,
    /// Zero when allowed; else the exact wait until this same request would be allowed. A reservation
    /// ([`Limiter::reserve`](crate::Limiter::reserve)) that booked a slot ahead is allowed with the wait
    /// before that slot here.
    pub retry_after: Duration,
    /// Index (into the rules passed) of the deciding rule.
    pub rule_index: usize,
    /// True when the store failed and the failure policy produced this answer.
    pub degraded: bool,
    /// What decided: the rules, a ban, the deny list or the allow list.
    pub reason: Reason,
    /// True when the request was let through only because what denied it is in shadow (a `shadow`
    /// rule, or a limiter with `LimiterOptions::with_shadow`): enforcement would have denied it, and
    /// `remaining`, `reset_after` and `retry_after` are what enforcement would have answered.
    pub would_deny: bool,
    /// True when this process's deny cache answered (no round trip): a denial the store gave before,
    /// its waits shortened by the time since (see `LimiterOptions::with_deny_cache`).
    pub cached: bool,
    outcomes: Outcomes,
}

impl Decision {
    /// Builds a decision from per-rule outcomes (at least one).
    #[inline]
    pub fn from_outcomes(outcomes: Outcomes) -> Self {
        let (allowed, index) = combine(&outcomes);
        let deciding = outcomes[index];
        Decision {
            allowed,
            limit: deciding.limit,
            remaining: deciding.remaining,
            reset_after: Duration::from_micros(deciding.reset_after_us),
            // An allowed rule waits 0, unless a reservation booked it ahead: then every rule carries
            // the wait before the slot.
            retry_after: Duration::from_micros(deciding.retry_after_us),
            rule_index: index,
            degraded: false,
            reason: Reason::Rule,
            would_deny: false,
            cached: false,
            outcomes,
        }
    }

    /// Builds a decision from a store's verdict: its per-rule outcomes and why.
    ///
    /// ```
    /// use ratelock::algorithm::standing::{Entry, Standing};
    /// let rules: ratelock::Rules = "5/second".parse()?;
    /// let ban = Entry { standing: Standing::Banned, until_us: 9_000_000 };
    /// let decision = ratelock::Decision::from_verdict(ban.answer(&rules, 1_000_000).unwrap());
    /// assert!(!decision.allowed);
    /// assert_eq!(decision.reason, ratelock::Reason::Ban);
    /// assert_eq!(decision.retry_after.as_secs(), 8);
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    #[inline]
    pub fn from_verdict(verdict: Verdict) -> Self {
        let mut decision = Self::from_outcomes(verdict.outcomes);
        decision.reason = verdict.reason;
        decision
    }

    /// The decision on `rules` from a store's verdict: [`from_verdict`](Self::from_verdict), let
    /// through as [`shadowed`](Self::shadowed) when every rule that denied it is a `shadow` rule.
    ///
    /// ```
    /// use ratelock::algorithm::{decide, standing::Verdict};
    /// let rules: ratelock::Rules = "1/minute shadow; 100/hour".parse()?;
    /// let spent = Some(ratelock::algorithm::State::Gcra { tat: 60_000_000 });
    /// let outcomes = [decide(&rules[0], spent.as_ref(), 0, 1)?.unspent, decide(&rules[1], None, 0, 1)?.unspent];
    /// let decision = ratelock::Decision::decided(Verdict::from(outcomes.into_iter().collect::<ratelock::algorithm::Outcomes>()), &rules);
    /// assert!(decision.allowed && decision.would_deny);
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    /// When enforcing rules deny too, the deciding rule is the enforcing one that waits longest: a
    /// shadow rule's longer wait is not the caller's to wait (a client told to wait an hour by a
    /// shadow `1/hour` beside an enforcing `1/minute`, and a deny cache holding that hour).
    #[inline]
    pub fn decided(verdict: Verdict, rules: &[crate::Rule]) -> Self {
        let mut decision = Self::from_verdict(verdict);
        if decision.allowed || decision.reason != Reason::Rule {
            return decision;
        }
        let mut enforcing: Option<usize> = None;
        for (at, (outcome, rule)) in decision.outcomes.iter().zip(rules).enumerate() {
            let longer =
                enforcing.is_none_or(|best| outcome.retry_after_us > decision.outcomes[best].retry_after_us);
            if !outcome.allowed && !rule.is_shadow() && longer {
                enforcing = Some(at);
            }
        }
        match enforcing {
            None => decision.shadow(),
            Some(at) if at != decision.rule_index => decision.decided_by(at),
            Some(_) => {}
        }
        decision
    }

    /// The figures of rule `at`'s outcome as the decision's own.
    fn decided_by(&mut self, at: usize) {
        let deciding = self.outcomes[at];
        self.limit = deciding.limit;
        self.remaining = deciding.remaining;
        self.reset_after = Duration::from_micros(deciding.reset_after_us);
        self.retry_after = Duration::from_micros(deciding.retry_after_us);
        self.rule_index = at;
    }

    /// The same decision let through if it denied: `allowed`, with `would_deny` set and enforcement's
    /// figures kept (what a limiter in shadow answers).
    pub fn shadowed(mut self) -> Self {
        self.shadow();
        self
    }

    /// [`shadowed`](Self::shadowed) in place.
    pub(crate) fn shadow(&mut self) {
        if !self.allowed {
            self.allowed = true;
            self.would_deny = true;
        }
    }

    /// The same decision, saying `reason` decided it.
    pub fn with_reason(mut self, reason: Reason) -> Self {
        self.reason = reason;
        self
    }

    /// A decision known only by its deciding rule's figures, as a binding that carries those figures
    /// (not every rule's) rebuilds it, e.g. to render its HTTP answer. [`Decision::rules`] is empty.
    ///
    /// ```
    /// use std::time::Duration;
    /// let d = ratelock::Decision::summary(false, 10, 0, Duration::from_secs(6), Duration::from_secs(1), 0, false);
    /// assert!(!d.allowed && d.rules().len() == 0);
    /// ```
    pub fn summary(
        allowed: bool,
        limit: u64,
        remaining: u64,
        reset_after: Duration,
        retry_after: Duration,
        rule_index: usize,
        degraded: bool,
    ) -> Self {
        Decision {
            allowed,
            limit,
            remaining,
            reset_after,
            retry_after: if allowed { Duration::ZERO } else { retry_after },
            rule_index,
            degraded,
            reason: Reason::Rule,
            would_deny: false,
            cached: false,
            outcomes: Outcomes::new(),
        }
    }

    /// A decision made without the store (failure policy `allow` or `deny`).
    pub(crate) fn degraded(allowed: bool, limit: u64, retry_after: Duration) -> Self {
        Decision {
            allowed,
            limit,
            remaining: 0,
            reset_after: retry_after,
            retry_after: if allowed { Duration::ZERO } else { retry_after },
            rule_index: 0,
            degraded: true,
            reason: Reason::Rule,
            would_deny: false,
            cached: false,
            outcomes: Outcomes::new(),
        }
    }

    /// Every rule's own answer, in the order of the rules (none for a degraded decision).
    pub fn rules(&self) -> impl ExactSizeIterator<Item = RuleDecision> + '_ {
        self.outcomes.iter().map(|&o| RuleDecision::from(o))
    }

    /// One rule's own answer, by its index in the rules passed.
    pub fn rule(&self, index: usize) -> Option<RuleDecision> {
        self.outcomes.get(index).map(|&o| RuleDecision::from(o))
    }

    /// A decision on merged rules told as on the rules given: given rule `i` was merged into
    /// `merged[i]`. Each takes its merged rule's outcome, and the deciding rule is the first given
    /// one of the deciding merged rule.
    pub(crate) fn unmerged(&mut self, merged: &[usize]) {
        self.outcomes = merged.iter().map(|&at| self.outcomes[at]).collect();
        self.rule_index = merged
            .iter()
            .position(|&at| at == self.rule_index)
            .unwrap_or(self.rule_index);
    }
}
