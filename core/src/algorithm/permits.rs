//! Semaphore permits as leases: each permit is (id, expiry µs); expired permits are reclaimed on every
//! operation, so a crashed holder frees its permit when its lease ends. [`apply`] answers one
//! [`SemaphoreCall`]. Mirrored by `lua/semaphore_acquire.lua`, `semaphore_release.lua`,
//! `semaphore_extend.lua` and `semaphore_state.lua` (a sorted set scored by expiry); the memory store
//! runs these directly.

/// The permits of one semaphore: (permit id, lease end µs).
pub type Permits = Vec<(String, u64)>;

/// One operation on a semaphore, as every store answers it (see [`apply`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SemaphoreCall<'a> {
    /// Take one of `limit` permits for `id` (reclaiming expired ones first).
    Acquire {
        /// The permit's id.
        id: &'a str,
        /// How many permits the semaphore has.
        limit: u64,
        /// Lease length in µs.
        ttl_us: u64,
    },
    /// Give back `id`'s permit.
    Release {
        /// The permit's id.
        id: &'a str,
    },
    /// Move the end of `id`'s permit lease to `ttl_us` from now; never re-takes it.
    Extend {
        /// The permit's id.
        id: &'a str,
        /// New lease length in µs.
        ttl_us: u64,
    },
    /// Permits in use, and µs until the earliest of their leases ends.
    State,
}

/// The answer to a [`SemaphoreCall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SemaphoreReply {
    /// The answer to `Acquire`.
    Acquired(PermitAcquired),
    /// The answer to `Release` and `Extend`: whether the permit was still held.
    Done(bool),
    /// The answer to `State`.
    State {
        /// Permits in use.
        in_use: u64,
        /// µs until the earliest lease ends (0 when none is held).
        next_free_us: u64,
    },
}

/// Answers `call` on `permits` at `now` (µs); the `bool` says whether waiters should be woken.
///
/// ```
/// use ratelock::algorithm::permits::{apply, Permits, SemaphoreCall, SemaphoreReply};
/// let mut permits = Permits::new();
/// apply(&mut permits, 0, SemaphoreCall::Acquire { id: "a", limit: 1, ttl_us: 100 });
/// assert_eq!(apply(&mut permits, 10, SemaphoreCall::State).0, SemaphoreReply::State { in_use: 1, next_free_us: 90 });
/// assert_eq!(apply(&mut permits, 20, SemaphoreCall::Release { id: "a" }), (SemaphoreReply::Done(true), true));
/// ```
pub fn apply(permits: &mut Permits, now: u64, call: SemaphoreCall<'_>) -> (SemaphoreReply, bool) {
    match call {
        SemaphoreCall::Acquire { id, limit, ttl_us } => (
            SemaphoreReply::Acquired(acquire(permits, now, id, limit, ttl_us)),
            false,
        ),
        SemaphoreCall::Release { id } => {
            let released = release(permits, now, id);
            (SemaphoreReply::Done(released), released)
        }
        SemaphoreCall::Extend { id, ttl_us } => {
            (SemaphoreReply::Done(extend(permits, now, id, ttl_us)), false)
        }
        SemaphoreCall::State => {
            reclaim(permits, now);
            let earliest = permits.iter().map(|&(_, expires)| expires - now).min();
            let state = SemaphoreReply::State {
                in_use: permits.len() as u64,
                next_free_us: earliest.unwrap_or(0),
            };
            (state, false)
        }
    }
}

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
