//! The local fallback of a limiter with the failure policy `local`: while the store is out, decisions
//! come from an embedded memory store on each process's share of every rule
//! ([`Rule::local_share`](crate::Rule::local_share)), marked `degraded`. When the store answers
//! again, the local state is dropped and the store decides.
//!
//! Worst case, documented in the README: at each switch (store to local, local to store) at most one
//! extra limit's worth per window can be admitted, since neither side knows what the other admitted,
//! plus the rounding of each process's share up to a whole unit (at most `instances - 1` units).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::algorithm::check_cost;
use crate::decision::Decision;
use crate::error::Result;
use crate::rule::Rules;
use crate::store::{LimitRequest, MemoryStore};

/// One limiter's local decisions during an outage.
#[derive(Debug)]
pub(crate) struct LocalFallback {
    store: MemoryStore,
    instances: u64,
    /// Whether any decision was made locally since the store last answered.
    used: AtomicBool,
}

impl LocalFallback {
    pub(crate) fn new(instances: u64, options: &crate::store::StoreOptions) -> Self {
        LocalFallback {
            store: MemoryStore::for_options(options),
            instances: instances.max(1),
            used: AtomicBool::new(false),
        }
    }

    /// The decision for `request` on this process's share of its rules, marked degraded. A cost
    /// that fits the whole rule but not this process's share is a degraded denial, not an error.
    pub(crate) fn decide(&self, request: &LimitRequest<'_>) -> Result<Decision> {
        self.used.store(true, Ordering::Relaxed);
        // A share that cannot be built (a rule near the largest burst × period) keeps the whole rule.
        let shares = Rules::new(
            request
                .rules
                .iter()
                .map(|rule| rule.local_share(self.instances).unwrap_or_else(|_| rule.clone()))
                .collect(),
        )?;
        let fits = shares.iter().all(|rule| check_cost(rule, request.cost).is_ok());
        // A cost above this process's share is answered as a peek of one unit, then denied.
        let local = LimitRequest {
            rules: &shares,
            cost: if fits { request.cost } else { 1 },
            spend: request.spend && fits,
            ..*request
        };
        let mut decision = Decision::decided(self.store.check(&local)?, local.rules);
        if !fits {
            decision.allowed = false;
            decision.retry_after = decision.reset_after.max(std::time::Duration::from_millis(1));
        }
        decision.degraded = true;
        Ok(decision)
    }

    /// The store answered: drop what was decided locally, once.
    pub(crate) fn store_answered(&self) {
        if self.used.load(Ordering::Relaxed) && self.used.swap(false, Ordering::Relaxed) {
            self.store.clear();
        }
    }
}
