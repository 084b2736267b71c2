//! Semaphore permits as leases: each permit is (id, expiry µs); expired permits are reclaimed on every
//! operation, so a crashed holder frees its permit when its lease ends. Mirrored by
//! `lua/semaphore_acquire.lua`, `semaphore_release.lua` and `semaphore_extend.lua` (a sorted set
//! scored by expiry); the memory store runs these directly.

/// What a permit request found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermitAcquired {
    /// Granted: permits in use now, this one included.
    Granted {
        /// Permits in use after the grant.
        in_use: u64,
    },
    /// All permits are taken; the first one ends in this many µs unless renewed.
    Full {
        /// µs until the earliest lease ends.
        next_free_us: u64,
    },
}

/// Drops every permit whose lease has ended.
pub fn reclaim(permits: &mut Vec<(String, u64)>, now: u64) {
    permits.retain(|&(_, expires)| expires > now);
}

/// Takes one of `limit` permits for `id`, for `ttl_us`.
///
/// ```
/// use ratelock::algorithm::permits::{acquire, PermitAcquired};
/// let mut permits = Vec::new();
/// assert_eq!(acquire(&mut permits, 0, "a", 2, 100), PermitAcquired::Granted { in_use: 1 });
/// assert_eq!(acquire(&mut permits, 10, "b", 2, 100), PermitAcquired::Granted { in_use: 2 });
/// assert_eq!(acquire(&mut permits, 20, "c", 2, 100), PermitAcquired::Full { next_free_us: 80 });
/// assert_eq!(acquire(&mut permits, 100, "c", 2, 100), PermitAcquired::Granted { in_use: 2 });
/// ```
pub fn acquire(
    permits: &mut Vec<(String, u64)>,
    now: u64,
    id: &str,
    limit: u64,
    ttl_us: u64,
) -> PermitAcquired {
    reclaim(permits, now);
    if let Some(held) = permits.iter_mut().find(|(holder, _)| holder == id) {
        held.1 = now + ttl_us;
        return PermitAcquired::Granted {
            in_use: permits.len() as u64,
        };
    }
    if (permits.len() as u64) < limit {
        permits.push((id.to_owned(), now + ttl_us));
        return PermitAcquired::Granted {
            in_use: permits.len() as u64,
        };
    }
    let earliest = permits.iter().map(|&(_, expires)| expires).min().unwrap_or(now);
    PermitAcquired::Full {
        next_free_us: earliest - now,
    }
}

/// Gives back `id`'s permit; true if it was held (an expired or unknown permit changes nothing).
pub fn release(permits: &mut Vec<(String, u64)>, now: u64, id: &str) -> bool {
    reclaim(permits, now);
    let before = permits.len();
    permits.retain(|(holder, _)| holder != id);
    permits.len() < before
}

/// Moves the end of `id`'s lease to `ttl` from now; never re-takes an expired permit.
pub fn extend(permits: &mut Vec<(String, u64)>, now: u64, id: &str, ttl_us: u64) -> bool {
    reclaim(permits, now);
    match permits.iter_mut().find(|(holder, _)| holder == id) {
        Some(held) => {
            held.1 = now + ttl_us;
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_permits_are_reclaimed_and_never_extended() {
        let mut permits = Vec::new();
        acquire(&mut permits, 0, "a", 1, 50);
        assert!(
            !extend(&mut permits, 50, "a", 50),
            "an expired permit must not come back"
        );
        assert_eq!(
            acquire(&mut permits, 50, "b", 1, 50),
            PermitAcquired::Granted { in_use: 1 }
        );
        assert!(!release(&mut permits, 60, "a"));
        assert!(extend(&mut permits, 60, "b", 50));
        assert!(release(&mut permits, 60, "b"));
        assert!(permits.is_empty());
    }
}
