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
        // Two rules whose shares round to one rule (10 and 9 a minute, halved) count once, in the
        // first one's place: refused as the same rule twice, every call failed during the outage. The
        // one kept enforces if either does, and bans for the longer of their bans.
        let (mut shares, mut share_of) = (Vec::new(), Vec::with_capacity(request.rules.len()));
        for rule in request.rules.iter() {
            let mut share = rule.local_share(self.instances).unwrap_or_else(|_| rule.clone());
            // A shadow rule decides nothing: a share too small for the cost is checked whole, rather
            // than denying a call only it would deny (and leaving the enforcing rules unspent).
            if share.is_shadow() && check_cost(&share, request.cost).is_err() {
                share = rule.clone();
            }
            match shares
                .iter()
                .position(|kept: &crate::Rule| kept.id() == share.id())
            {
                Some(at) => {
                    share_of.push(at);
                    let kept: &crate::Rule = &shares[at];
                    let stronger = (kept.is_shadow() && !share.is_shadow())
                        || (kept.is_shadow() == share.is_shadow() && share.block() > kept.block());
                    if stronger {
                        shares[at] = share;
                    }
                }
                None => {
                    share_of.push(shares.len());
                    shares.push(share);
                }
            }
        }
        let shares = Rules::unchecked(shares);
        let fits = shares.iter().all(|rule| check_cost(rule, request.cost).is_ok());
        // A cost above this process's share is answered as a peek of one unit, then denied.
        let local = LimitRequest {
            rules: &shares,
            cost: if fits { request.cost } else { 1 },
            spend: request.spend && fits,
            ..*request
        };
        let mut decision = Decision::decided(self.store.check(&local)?, local.rules);
        // As the caller gave its rules: one outcome per rule, and the deciding share's first rule.
        decision.unmerged(&share_of);
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

#[cfg(test)]
mod tests {
    use super::*;

    const T: u64 = 1_763_800_000_000_000;

    /// A hit of `cost` on `key` under `rules`, at `now`.
    fn hit_of<'r>(key: &'r [u8], rules: &'r Rules, cost: u64, now: u64) -> LimitRequest<'r> {
        LimitRequest {
            prefix: "rl",
            key,
            rules,
            cost,
            spend: true,
            max_wait_us: None,
            now_us: Some(now),
        }
    }

    #[test]
    fn rules_whose_shares_round_to_one_rule_count_once_in_the_first_ones_place() {
        // Halved, 10 and 9 a minute are both 5 a minute: refused as the same rule twice, every call of
        // the outage failed.
        let fallback = LocalFallback::new(2, &Default::default());
        let rules: Rules = "9/minute using fixed_window; 10/minute using fixed_window"
            .parse()
            .unwrap();
        let hit = |now: u64| fallback.decide(&hit_of(b"k", &rules, 1, now));
        let allowed: Vec<bool> = (0..6).map(|at| hit(T + at).unwrap().allowed).collect();
        assert_eq!(
            allowed,
            [true, true, true, true, true, false],
            "5 a minute, counted once"
        );
        let denied = hit(T + 6).unwrap();
        assert!(denied.degraded);
        assert_eq!(denied.rule_index, 0, "the first rule, as given");
        assert_eq!(denied.rules().len(), 2, "an answer per rule given");
        // A shadow rule merged with an enforcing one enforces.
        let mixed: Rules = "9/minute using fixed_window shadow; 10/minute using fixed_window"
            .parse()
            .unwrap();
        let mixed_hit = |now: u64| fallback.decide(&hit_of(b"mixed", &mixed, 1, now));
        let allowed: Vec<bool> = (0..6).map(|at| mixed_hit(T + at).unwrap().allowed).collect();
        assert_eq!(
            allowed,
            [true, true, true, true, true, false],
            "the merged share enforces"
        );
    }

    #[test]
    fn a_cost_above_a_shadow_rules_share_denies_nothing() {
        // A quarter of 10 a minute is 3 (rounded up), below a cost of 5: every call of the outage was
        // a degraded denial, with the enforcing rule never spent, though only the shadow rule's share
        // could not take it.
        let fallback = LocalFallback::new(4, &Default::default());
        let rules: Rules = "10/minute using fixed_window shadow; 100/minute using fixed_window"
            .parse()
            .unwrap();
        let hit = fallback.decide(&hit_of(b"k", &rules, 5, T)).unwrap();
        assert!(hit.allowed && hit.degraded, "{hit:?}");
        assert_eq!(
            hit.rule(1).unwrap().remaining,
            20,
            "the enforcing rule's share (25) is spent"
        );
    }
}
