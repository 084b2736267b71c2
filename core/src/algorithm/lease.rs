//! Lock leases as pure functions: acquire (with re-entry and fencing), release and extend, each a
//! function of (state, now, owner), and [`apply`], which answers one [`LockCall`] on a [`LockRecord`].
//! Each also has a `_held` form ([`acquire_held`], [`release_held`], [`extend_held`], [`apply_held`])
//! for a store that drops a lease itself when it ends (Redis: the lease key's TTL): the lease it hands
//! over holds the lock, whatever its `expires_at` says.
//! Mirrored by `lua/lock_acquire.lua`, `lock_release.lua`, `lock_extend.lua`, `lock_state.lua` and
//! `lock_force_release.lua`; the memory store runs these directly.

/// A held lock: who holds it, how many times (re-entry), its fencing token and when the lease ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The holder's owner token.
    pub owner: String,
    /// Holds by that owner (1 unless re-entered).
    pub holds: u64,
    /// Fencing token of this grant.
    pub fence: u64,
    /// µs at which the lease ends.
    pub expires_at: u64,
}

/// What an acquire attempt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquired {
    /// Granted (or re-entered): the fencing token and the number of holds now.
    Granted {
        /// Fencing token of the grant (unchanged on re-entry).
        fence: u64,
        /// Holds after this acquire.
        holds: u64,
    },
    /// Held by someone else (or by this owner, without re-entry) for this many more µs.
    Busy {
        /// µs until the current lease ends, unless it is renewed.
        remaining_us: u64,
    },
}

/// What a release found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Released {
    /// The lock was released and waiters were told.
    Released,
    /// One re-entrant hold was given back; this many remain.
    StillHeld {
        /// Holds left.
        holds: u64,
    },
    /// Nobody holds the lock (released before, or the lease expired): nothing changed.
    NotHeld,
    /// Another owner holds it now: nothing changed.
    HeldByOther,
}

/// Why a hold was lost.
///
/// ```
/// use ratelock::LostReason;
/// assert_eq!(LostReason::Expired.to_string(), "the lease ran out without a renewal");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// The lease's end passed without a renewal answered in time: the store could not be reached (or
    /// answered too late), or auto-renew is off and nobody extended it.
    Expired,
    /// The store answered that the lease is gone or held by another (a renewal, an extension or a
    /// release).
    Taken,
    /// A renewal (or a dropped guard's release) failed in a way retrying cannot mend (a configuration
    /// or protocol error, an unexpected state at the lock's key): the hold is given up at once rather
    /// than left to run out.
    Failed(crate::Error),
}

impl std::fmt::Display for LostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LostReason::Expired => f.write_str("the lease ran out without a renewal"),
            LostReason::Taken => f.write_str("the store answered that the lease is gone or held by another"),
            LostReason::Failed(error) => write!(f, "the store refused it for good: {error}"),
        }
    }
}

impl LostReason {
    /// A short stable name: `"expired"`, `"taken"` or `"failed"` (what the bindings report).
    ///
    /// ```
    /// assert_eq!(ratelock::LostReason::Taken.kind(), "taken");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            LostReason::Expired => "expired",
            LostReason::Taken => "taken",
            LostReason::Failed(_) => "failed",
        }
    }
}

/// What an extension found. An extension never re-acquires a lock that is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Extended {
    /// The lease now ends `ttl` from now.
    Extended,
    /// The lease had expired (nobody holds the lock): nothing changed.
    Expired,
    /// Another owner holds the lock now: nothing changed.
    HeldByOther,
}

impl Released {
    /// A short stable name: `"released"`, `"still_held"`, `"not_held"` or `"held_by_other"` (what the
    /// bindings answer).
    ///
    /// ```
    /// assert_eq!(ratelock::Released::StillHeld { holds: 1 }.as_str(), "still_held");
    /// ```
    pub fn as_str(&self) -> &'static str {
        match self {
            Released::Released => "released",
            Released::StillHeld { .. } => "still_held",
            Released::NotHeld => "not_held",
            Released::HeldByOther => "held_by_other",
        }
    }

    /// The release as a result: `Ok` when the hold was given back (or one re-entrant hold of it),
    /// [`Error::LockLost`](crate::Error::LockLost) naming `what` (`"lock"`, `"permit"`...) and why
    /// otherwise. What the bindings raise as `LockLost` / `LockLostError`.
    ///
    /// ```
    /// use ratelock::Released;
    /// assert!(Released::Released.or_lost("lock").is_ok());
    /// let err = Released::HeldByOther.or_lost("lock").unwrap_err();
    /// assert!(err.is_lock_lost());
    /// assert_eq!(err.to_string(), "lock lost: the lock was lost before release (held by another owner)");
    /// ```
    pub fn or_lost(self, what: &str) -> crate::Result<Released> {
        let why = match self {
            Released::Released | Released::StillHeld { .. } => return Ok(self),
            Released::NotHeld => "expired or released",
            Released::HeldByOther => "held by another owner",
        };
        Err(crate::Error::LockLost(format!(
            "the {what} was lost before release ({why})"
        )))
    }
}

impl Extended {
    /// The extension as a result: `Ok` when the lease was moved, [`Error::LockLost`](crate::Error::LockLost)
    /// naming `what` and why otherwise.
    ///
    /// ```
    /// use ratelock::Extended;
    /// assert!(Extended::Extended.or_lost("permit").is_ok());
    /// assert_eq!(
    ///     Extended::Expired.or_lost("permit").unwrap_err().to_string(),
    ///     "lock lost: cannot extend: the permit expired"
    /// );
    /// ```
    pub fn or_lost(self, what: &str) -> crate::Result<()> {
        let why = match self {
            Extended::Extended => return Ok(()),
            Extended::Expired => "expired",
            Extended::HeldByOther => "is held by another owner",
        };
        Err(crate::Error::LockLost(format!("cannot extend: the {what} {why}")))
    }
}

/// The next fencing token: strictly above the last one, and at least the current time in µs, so that
/// tokens keep rising even when the counter is lost (a Redis restart without persistence).
///
/// ```
/// use ratelock::algorithm::lease::next_fence;
/// assert_eq!(next_fence(41, 10), 42);
/// assert_eq!(next_fence(0, 1_763_800_000_000_000), 1_763_800_000_000_000);
/// ```
pub fn next_fence(last: u64, now: u64) -> u64 {
    // Saturating: the stores refuse a counter read back at 2^53 - 1 before it gets here.
    last.saturating_add(1).max(now)
}

fn live(lease: Option<&Lease>, now: u64) -> Option<&Lease> {
    lease.filter(|l| l.expires_at > now)
}

/// Tries to take the lock. Returns the answer, the new lease (if it changed) and the new fence counter.
pub fn acquire(
    lease: Option<&Lease>,
    last_fence: u64,
    now: u64,
    owner: &str,
    ttl_us: u64,
    reentrant: bool,
) -> (Acquired, Option<Lease>, u64) {
    acquire_held(live(lease, now), last_fence, now, owner, ttl_us, reentrant)
}

/// [`acquire`] given the lease that holds the lock now (`None`: free), taken as live.
pub fn acquire_held(
    holder: Option<&Lease>,
    last_fence: u64,
    now: u64,
    owner: &str,
    ttl_us: u64,
    reentrant: bool,
) -> (Acquired, Option<Lease>, u64) {
    match holder {
        None => {
            let fence = next_fence(last_fence, now);
            let granted = Lease {
                owner: owner.to_owned(),
                holds: 1,
                fence,
                expires_at: now + ttl_us,
            };
            (Acquired::Granted { fence, holds: 1 }, Some(granted), fence)
        }
        Some(held) if held.owner == owner && reentrant => {
            let again = Lease {
                holds: held.holds + 1,
                expires_at: now + ttl_us,
                ..held.clone()
            };
            let answer = Acquired::Granted {
                fence: held.fence,
                holds: again.holds,
            };
            (answer, Some(again), last_fence)
        }
        Some(held) => (
            Acquired::Busy {
                remaining_us: held.expires_at.saturating_sub(now),
            },
            None,
            last_fence,
        ),
    }
}

/// Whether `held` is the grant identified by (`owner`, `fence`). The fence matters: a handle whose old
/// grant expired and that was granted the lock again must not act on the new grant through the old one.
fn is_grant(held: &Lease, owner: &str, fence: u64) -> bool {
    held.owner == owner && held.fence == fence
}

/// Gives back one hold of grant (`owner`, `fence`). `Some(None)` means "delete the lease",
/// `Some(Some(l))` "store l", `None` "unchanged".
pub fn release(
    lease: Option<&Lease>,
    now: u64,
    owner: &str,
    fence: u64,
) -> (Released, Option<Option<Lease>>) {
    release_held(live(lease, now), owner, fence)
}

/// [`release`] given the lease that holds the lock now (`None`: free), taken as live.
pub fn release_held(holder: Option<&Lease>, owner: &str, fence: u64) -> (Released, Option<Option<Lease>>) {
    match holder {
        None => (Released::NotHeld, None),
        Some(held) if !is_grant(held, owner, fence) => (Released::HeldByOther, None),
        Some(held) if held.holds > 1 => {
            let fewer = Lease {
                holds: held.holds - 1,
                ..held.clone()
            };
            (Released::StillHeld { holds: fewer.holds }, Some(Some(fewer)))
        }
        Some(_) => (Released::Released, Some(None)),
    }
}

/// Moves the end of grant (`owner`, `fence`)'s lease to `ttl` from now.
pub fn extend(
    lease: Option<&Lease>,
    now: u64,
    owner: &str,
    fence: u64,
    ttl_us: u64,
) -> (Extended, Option<Lease>) {
    extend_held(live(lease, now), now, owner, fence, ttl_us)
}

/// [`extend`] given the lease that holds the lock now (`None`: free), taken as live.
pub fn extend_held(
    holder: Option<&Lease>,
    now: u64,
    owner: &str,
    fence: u64,
    ttl_us: u64,
) -> (Extended, Option<Lease>) {
    match holder {
        None => (Extended::Expired, None),
        Some(held) if !is_grant(held, owner, fence) => (Extended::HeldByOther, None),
        Some(held) => {
            let longer = Lease {
                expires_at: now + ttl_us,
                ..held.clone()
            };
            (Extended::Extended, Some(longer))
        }
    }
}

/// One operation on a distributed lock, as every store answers it (see [`apply`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockCall<'a> {
    /// Take the lock (or re-enter it) for `owner`, minting a fencing token.
    Acquire {
        /// The handle's owner token.
        owner: &'a str,
        /// Lease length in µs.
        ttl_us: u64,
        /// Whether the owner may take it again while holding it.
        reentrant: bool,
    },
    /// Give back one hold of the grant (`owner`, `fence`).
    Release {
        /// The grant's owner token.
        owner: &'a str,
        /// The grant's fencing token.
        fence: u64,
    },
    /// Move the end of the grant's lease to `ttl_us` from now; never re-acquires.
    Extend {
        /// The grant's owner token.
        owner: &'a str,
        /// The grant's fencing token.
        fence: u64,
        /// New lease length in µs.
        ttl_us: u64,
    },
    /// Read the lock without changing it.
    State,
    /// Delete the lease whoever holds it (the fencing counter stays).
    ForceRelease,
}

/// The answer to a [`LockCall`], one variant per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockReply {
    /// The answer to `Acquire`.
    Acquired(Acquired),
    /// The answer to `Release`.
    Released(Released),
    /// The answer to `Extend`.
    Extended(Extended),
    /// The answer to `State`.
    State(LockState),
    /// The answer to `ForceRelease`: whether the lock was held.
    ForceReleased(bool),
}

/// A lock as it stands (the answer to [`LockCall::State`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockState {
    /// Someone holds the lock.
    pub held: bool,
    /// µs until the current lease ends (0 when free).
    pub remaining_us: u64,
    /// The holder's fencing token (0 when free).
    pub holder_fence: u64,
    /// The last fencing token minted for this lock (0 if none).
    pub last_fence: u64,
}

/// What a store keeps per lock: the lease (if any) and the fencing counter, which outlives leases.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockRecord {
    /// The current lease; one whose end has passed counts as none.
    pub lease: Option<Lease>,
    /// The last fencing token minted.
    pub last_fence: u64,
}

impl LockRecord {
    /// True while the record still matters at `now`: a live lease, or a counter the clock has not
    /// passed yet (once it has, a fresh record mints higher tokens from the clock anyway).
    pub fn in_use(&self, now: u64) -> bool {
        live(self.lease.as_ref(), now).is_some() || self.last_fence >= now
    }
}

/// Answers `call` on `record` at `now` (µs), changing the record as the call says; the `bool` says
/// whether waiters should be woken (the lock became free).
///
/// ```
/// use ratelock::algorithm::lease::{apply, Acquired, LockCall, LockRecord, LockReply};
/// let mut record = LockRecord::default();
/// let take = LockCall::Acquire { owner: "a", ttl_us: 100, reentrant: false };
/// assert_eq!(apply(&mut record, 10, take).0, LockReply::Acquired(Acquired::Granted { fence: 10, holds: 1 }));
/// let (reply, wake) = apply(&mut record, 20, LockCall::Release { owner: "a", fence: 10 });
/// assert!(wake && reply == LockReply::Released(ratelock::Released::Released));
/// ```
pub fn apply(record: &mut LockRecord, now: u64, call: LockCall<'_>) -> (LockReply, bool) {
    apply_to(record, now, call, live)
}

/// [`apply`] for a store that drops a lease itself when it ends (Redis: the lease key's TTL):
/// `record.lease` holds the lock whatever its `expires_at` says, which then only feeds the "µs until
/// the lease ends" answers (0 once it has passed).
///
/// ```
/// use ratelock::algorithm::lease::{apply_held, Lease, LockCall, LockRecord, LockReply};
/// let lease = Lease { owner: "a".into(), holds: 1, fence: 7, expires_at: 100 };
/// let mut record = LockRecord { lease: Some(lease), last_fence: 7 };
/// let (reply, wake) = apply_held(&mut record, 100, LockCall::ForceRelease);
/// assert!(wake && reply == LockReply::ForceReleased(true));
/// ```
pub fn apply_held(record: &mut LockRecord, now: u64, call: LockCall<'_>) -> (LockReply, bool) {
    apply_to(record, now, call, |lease, _| lease)
}

/// [`apply`] and [`apply_held`], with `holder` telling which stored lease holds the lock at `now`.
fn apply_to(
    record: &mut LockRecord,
    now: u64,
    call: LockCall<'_>,
    holder: for<'l> fn(Option<&'l Lease>, u64) -> Option<&'l Lease>,
) -> (LockReply, bool) {
    match call {
        LockCall::Acquire {
            owner,
            ttl_us,
            reentrant,
        } => {
            let (answer, lease, fence) = acquire_held(
                holder(record.lease.as_ref(), now),
                record.last_fence,
                now,
                owner,
                ttl_us,
                reentrant,
            );
            if lease.is_some() {
                record.lease = lease;
            }
            record.last_fence = fence;
            (LockReply::Acquired(answer), false)
        }
        LockCall::Release { owner, fence } => {
            let (answer, change) = release_held(holder(record.lease.as_ref(), now), owner, fence);
            if let Some(lease) = change {
                record.lease = lease;
            }
            (LockReply::Released(answer), answer == Released::Released)
        }
        LockCall::Extend { owner, fence, ttl_us } => {
            let (answer, lease) = extend_held(holder(record.lease.as_ref(), now), now, owner, fence, ttl_us);
            if lease.is_some() {
                record.lease = lease;
            }
            (LockReply::Extended(answer), false)
        }
        LockCall::State => {
            let state = match holder(record.lease.as_ref(), now) {
                Some(lease) => LockState {
                    held: true,
                    remaining_us: lease.expires_at.saturating_sub(now),
                    holder_fence: lease.fence,
                    last_fence: record.last_fence,
                },
                None => LockState {
                    last_fence: record.last_fence,
                    ..LockState::default()
                },
            };
            (LockReply::State(state), false)
        }
        LockCall::ForceRelease => {
            let was_held = holder(record.lease.as_ref(), now).is_some();
            record.lease = None;
            (LockReply::ForceReleased(was_held), true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_mint_rising_fences_and_reentry_keeps_the_fence() {
        let (a, lease, counter) = acquire(None, 7, 100, "a", 50, true);
        assert_eq!(a, Acquired::Granted { fence: 100, holds: 1 });
        let lease = lease.unwrap();
        let (again, lease2, counter2) = acquire(Some(&lease), counter, 110, "a", 50, true);
        assert_eq!(again, Acquired::Granted { fence: 100, holds: 2 });
        assert_eq!(counter2, counter);
        assert_eq!(lease2.unwrap().expires_at, 160);
        let (busy, _, _) = acquire(Some(&lease), counter, 120, "b", 50, true);
        assert_eq!(busy, Acquired::Busy { remaining_us: 30 });
        // After expiry another owner gets a strictly higher fence, even at an earlier clock.
        let (next, _, _) = acquire(Some(&lease), counter, 150, "b", 50, false);
        assert_eq!(next, Acquired::Granted { fence: 150, holds: 1 });
        let (after_restart, _, _) = acquire(None, 0, 90, "c", 50, false);
        assert_eq!(after_restart, Acquired::Granted { fence: 90, holds: 1 });
        assert_eq!(next_fence(150, 90), 151);
    }

    #[test]
    fn only_the_owner_releases_or_extends_and_expiry_is_never_undone() {
        let (_, lease, _) = acquire(None, 0, 100, "a", 50, false);
        let lease = lease.unwrap();
        assert_eq!(release(Some(&lease), 110, "b", 100).0, Released::HeldByOther);
        assert_eq!(extend(Some(&lease), 110, "b", 100, 50).0, Extended::HeldByOther);
        assert_eq!(extend(Some(&lease), 151, "a", 100, 50).0, Extended::Expired);
        assert_eq!(release(Some(&lease), 151, "a", 100).0, Released::NotHeld);
        assert_eq!(
            release(Some(&lease), 120, "a", 100),
            (Released::Released, Some(None))
        );
        assert_eq!(release(None, 120, "a", 100).0, Released::NotHeld);
        // The same owner's older grant (another fence) acts on nothing.
        assert_eq!(release(Some(&lease), 120, "a", 99).0, Released::HeldByOther);
        assert_eq!(extend(Some(&lease), 120, "a", 99, 50).0, Extended::HeldByOther);
    }

    #[test]
    fn a_held_lease_counts_as_held_even_at_its_end() {
        // A store that drops ended leases itself hands over a lease whose end may equal `now`.
        let ending = Lease {
            owner: "a".into(),
            holds: 2,
            fence: 5,
            expires_at: 100,
        };
        assert_eq!(
            acquire_held(Some(&ending), 5, 100, "b", 50, false).0,
            Acquired::Busy { remaining_us: 0 }
        );
        assert_eq!(
            acquire(Some(&ending), 5, 100, "b", 50, false).0,
            Acquired::Granted { fence: 100, holds: 1 }
        );
        assert_eq!(
            release_held(Some(&ending), "a", 5).0,
            Released::StillHeld { holds: 1 }
        );
        assert_eq!(
            extend_held(Some(&ending), 100, "a", 5, 10).1.unwrap().expires_at,
            110
        );
        let mut record = LockRecord {
            lease: Some(ending),
            last_fence: 5,
        };
        let (state, _) = apply_held(&mut record.clone(), 100, LockCall::State);
        assert_eq!(
            state,
            LockReply::State(LockState {
                held: true,
                remaining_us: 0,
                holder_fence: 5,
                last_fence: 5
            })
        );
        assert_eq!(
            apply(&mut record.clone(), 100, LockCall::State).0,
            LockReply::State(LockState {
                last_fence: 5,
                ..LockState::default()
            })
        );
        assert_eq!(
            apply(&mut record, 100, LockCall::ForceRelease),
            (LockReply::ForceReleased(false), true)
        );
        assert_eq!(record.lease, None);
    }
}
