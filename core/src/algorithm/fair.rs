//! The fair lock as pure functions: one lease plus a FIFO queue of waiters. Each waiter's place is
//! itself a short lease (`waiter_ttl`) that the waiter renews by asking again, so a waiter that dies
//! loses its place and the queue moves on. A free lock goes only to the head of the queue, and a
//! release names the one waiter to wake. Mirrored by `lua/fair_lock.lua`; the memory store runs these
//! directly.

use super::lease::next_fence;

/// One fair lock: the holder (if any), the queue in arrival order, and the last fencing token minted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FairState {
    /// The holder: (grant id, fencing token, µs at which the lease ends).
    pub holder: Option<(String, u64, u64)>,
    /// Waiters in arrival order: (grant id, µs at which the place is given up unless renewed).
    pub queue: Vec<(String, u64)>,
    /// The last fencing token minted.
    pub last_fence: u64,
}

/// One operation on a fair lock. Ids name one acquire each (not one handle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FairCall<'a> {
    /// Take the lock if it is free and nobody waits ahead of `id`. With `queue`, a refused `id` takes
    /// (or renews) a place at the back of the queue until `waiter_ttl_us` from now.
    Acquire {
        /// The grant id.
        id: &'a str,
        /// Lease length.
        ttl_us: u64,
        /// How long a place in the queue lasts unless renewed.
        waiter_ttl_us: u64,
        /// Join the queue when refused (a waiting acquire) or not (a try).
        queue: bool,
    },
    /// Give back grant (`id`, `fence`); the new head of the queue is woken.
    Release {
        /// The grant id.
        id: &'a str,
        /// Its fencing token.
        fence: u64,
    },
    /// Move the end of grant (`id`, `fence`)'s lease to `ttl_us` from now; never re-takes it.
    Extend {
        /// The grant id.
        id: &'a str,
        /// Its fencing token.
        fence: u64,
        /// New lease length from now.
        ttl_us: u64,
    },
    /// Leave the queue (a waiter that gave up); wakes the new head when the lock is free.
    Withdraw {
        /// The grant id.
        id: &'a str,
    },
    /// Read the lock.
    State,
}

/// The answer to a [`FairCall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FairReply {
    /// Granted with this fencing token.
    Granted {
        /// The fencing token of the grant.
        fence: u64,
    },
    /// Not granted: try again within `retry_us` (the holder's lease end, the head's place end, or half
    /// a place's length, so a queued waiter renews its place in time). `position` is the waiter's place
    /// in the queue, from 1; 0 when it did not queue.
    Busy {
        /// µs until it is worth asking again.
        retry_us: u64,
        /// Place in the queue, from 1 (0: not queued).
        position: u64,
    },
    /// Release, extend, withdraw: whether it changed anything.
    Done(bool),
    /// The lock as it stands.
    State {
        /// µs until the holder's lease ends (0 when free).
        remaining_us: u64,
        /// The holder's fencing token (0 when free).
        holder_fence: u64,
        /// The last token minted.
        last_fence: u64,
        /// Waiters in the queue.
        waiting: u64,
    },
}

/// Applies `call` at `now` (µs). Returns the reply and the id of the one waiter to wake, if any.
///
/// ```
/// use ratelock::algorithm::fair::{apply, FairCall, FairReply, FairState};
/// let mut lock = FairState::default();
/// let take = |id| FairCall::Acquire { id, ttl_us: 100, waiter_ttl_us: 50, queue: true };
/// assert_eq!(apply(&mut lock, 10, take("a")).0, FairReply::Granted { fence: 10 });
/// assert_eq!(apply(&mut lock, 11, take("b")).0, FairReply::Busy { retry_us: 25, position: 1 });
/// assert_eq!(apply(&mut lock, 12, take("c")).0, FairReply::Busy { retry_us: 25, position: 2 });
/// // Released: only "b", the head, is woken, and "c" cannot cut in.
/// let (done, wake) = apply(&mut lock, 20, FairCall::Release { id: "a", fence: 10 });
/// assert_eq!((done, wake.as_deref()), (FairReply::Done(true), Some("b")));
/// assert!(matches!(apply(&mut lock, 21, take("c")).0, FairReply::Busy { position: 2, .. }));
/// assert_eq!(apply(&mut lock, 22, take("b")).0, FairReply::Granted { fence: 22 });
/// ```
pub fn apply(state: &mut FairState, now: u64, call: FairCall<'_>) -> (FairReply, Option<String>) {
    state.queue.retain(|&(_, ends)| ends > now);
    if state.holder.as_ref().is_some_and(|&(_, _, ends)| ends <= now) {
        state.holder = None;
    }
    match call {
        FairCall::Acquire {
            id,
            ttl_us,
            waiter_ttl_us,
            queue,
        } => (acquire(state, now, id, ttl_us, waiter_ttl_us, queue), None),
        FairCall::Release { id, fence } => {
            if !holds(state, id, fence) {
                return (FairReply::Done(false), None);
            }
            state.holder = None;
            (FairReply::Done(true), head(state))
        }
        FairCall::Extend { id, fence, ttl_us } => match state.holder.as_mut() {
            Some((holder, held_fence, ends)) if holder == id && *held_fence == fence => {
                *ends = now + ttl_us;
                (FairReply::Done(true), None)
            }
            _ => (FairReply::Done(false), None),
        },
        FairCall::Withdraw { id } => {
            let before = state.queue.len();
            state.queue.retain(|(waiter, _)| waiter != id);
            let left = state.queue.len() < before;
            let wake = if left && state.holder.is_none() {
                head(state)
            } else {
                None
            };
            (FairReply::Done(left), wake)
        }
        FairCall::State => {
            let (remaining_us, holder_fence) = match &state.holder {
                Some((_, fence, ends)) => (ends - now, *fence),
                None => (0, 0),
            };
            let reply = FairReply::State {
                remaining_us,
                holder_fence,
                last_fence: state.last_fence,
                waiting: state.queue.len() as u64,
            };
            (reply, None)
        }
    }
}

fn acquire(
    state: &mut FairState,
    now: u64,
    id: &str,
    ttl_us: u64,
    waiter_ttl_us: u64,
    queue: bool,
) -> FairReply {
    let first = state.queue.first().map(|(waiter, _)| waiter.as_str());
    if state.holder.is_none() && first.is_none_or(|waiter| waiter == id) {
        state.queue.retain(|(waiter, _)| waiter != id);
        let fence = next_fence(state.last_fence, now);
        state.last_fence = fence;
        state.holder = Some((id.to_owned(), fence, now + ttl_us));
        return FairReply::Granted { fence };
    }
    // Refused: wait for the holder's lease to end, or for the head's place to lapse.
    let mut retry_us = match (&state.holder, state.queue.first()) {
        (Some((_, _, ends)), _) => ends - now,
        (None, Some((_, ends))) => ends - now,
        (None, None) => 0,
    };
    let mut position = 0;
    if queue {
        match state.queue.iter().position(|(waiter, _)| waiter == id) {
            Some(at) => {
                state.queue[at].1 = now + waiter_ttl_us;
                position = at + 1;
            }
            None => {
                state.queue.push((id.to_owned(), now + waiter_ttl_us));
                position = state.queue.len();
            }
        }
        retry_us = retry_us.min(waiter_ttl_us / 2);
    }
    FairReply::Busy {
        retry_us,
        position: position as u64,
    }
}

fn holds(state: &FairState, id: &str, fence: u64) -> bool {
    matches!(&state.holder, Some((holder, held_fence, _)) if holder == id && *held_fence == fence)
}

fn head(state: &FairState) -> Option<String> {
    state.queue.first().map(|(waiter, _)| waiter.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(id: &str) -> FairCall<'_> {
        FairCall::Acquire {
            id,
            ttl_us: 100,
            waiter_ttl_us: 40,
            queue: true,
        }
    }

    #[test]
    fn a_try_never_queues_and_never_cuts_in() {
        let mut lock = FairState::default();
        apply(&mut lock, 0, take("a"));
        apply(&mut lock, 1, take("b"));
        let try_c = FairCall::Acquire {
            id: "c",
            ttl_us: 100,
            waiter_ttl_us: 40,
            queue: false,
        };
        assert_eq!(
            apply(&mut lock, 2, try_c).0,
            FairReply::Busy {
                retry_us: 98,
                position: 0
            }
        );
        apply(&mut lock, 3, FairCall::Release { id: "a", fence: 1 });
        // Free, but "b" is ahead.
        assert_eq!(
            apply(&mut lock, 4, try_c).0,
            FairReply::Busy {
                retry_us: 37,
                position: 0
            }
        );
        assert_eq!(lock.queue.len(), 1);
    }

    #[test]
    fn a_dead_waiter_loses_its_place() {
        let mut lock = FairState::default();
        apply(&mut lock, 0, take("a"));
        apply(&mut lock, 1, take("b")); // place until 41, never renewed
        apply(&mut lock, 2, take("c"));
        apply(&mut lock, 30, take("c")); // renewed until 70
        let (_, wake) = apply(&mut lock, 50, FairCall::Release { id: "a", fence: 1 });
        assert_eq!(wake.as_deref(), Some("c"));
        assert_eq!(
            apply(&mut lock, 51, take("c")).0,
            FairReply::Granted { fence: 51 }
        );
    }

    #[test]
    fn withdrawing_head_wakes_the_next_when_free() {
        let mut lock = FairState::default();
        apply(&mut lock, 0, take("a"));
        apply(&mut lock, 1, take("b"));
        apply(&mut lock, 2, take("c"));
        // Held: leaving wakes nobody.
        assert_eq!(
            apply(&mut lock, 3, FairCall::Withdraw { id: "c" }),
            (FairReply::Done(true), None)
        );
        apply(&mut lock, 4, take("c"));
        apply(&mut lock, 5, FairCall::Release { id: "a", fence: 1 });
        let (left, wake) = apply(&mut lock, 6, FairCall::Withdraw { id: "b" });
        assert_eq!((left, wake.as_deref()), (FairReply::Done(true), Some("c")));
        assert_eq!(
            apply(&mut lock, 7, FairCall::Withdraw { id: "b" }).0,
            FairReply::Done(false)
        );
    }

    #[test]
    fn only_the_grant_releases_or_extends_and_fences_rise() {
        let mut lock = FairState::default();
        assert_eq!(apply(&mut lock, 5, take("a")).0, FairReply::Granted { fence: 5 });
        let extend = |id, fence| FairCall::Extend {
            id,
            fence,
            ttl_us: 100,
        };
        assert_eq!(apply(&mut lock, 6, extend("a", 4)).0, FairReply::Done(false));
        assert_eq!(apply(&mut lock, 6, extend("b", 5)).0, FairReply::Done(false));
        assert_eq!(apply(&mut lock, 6, extend("a", 5)).0, FairReply::Done(true));
        // Expired at 106: nobody can extend it, and the next grant's token is higher.
        assert_eq!(apply(&mut lock, 106, extend("a", 5)).0, FairReply::Done(false));
        assert_eq!(
            apply(&mut lock, 107, take("b")).0,
            FairReply::Granted { fence: 107 }
        );
        let (state, _) = apply(&mut lock, 110, FairCall::State);
        let expected = FairReply::State {
            remaining_us: 97,
            holder_fence: 107,
            last_fence: 107,
            waiting: 0,
        };
        assert_eq!(state, expected);
    }
}
