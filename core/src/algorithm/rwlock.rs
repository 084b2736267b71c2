//! The read-write lock as pure functions: many readers or one writer, each hold its own lease. With
//! writer preference, a writer that is refused leaves a waiting mark (itself a short lease it renews by
//! asking again), and new readers are refused while a mark lives, so a stream of readers cannot starve
//! writers. Every grant mints a fencing token from one counter. Mirrored by `lua/rw_lock.lua`; the
//! memory store runs these directly.

use super::lease::next_fence;

/// One read-write lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RwState {
    /// Read holds: (grant id, fencing token, µs at which the lease ends).
    pub readers: Vec<(String, u64, u64)>,
    /// The write hold: (grant id, fencing token, µs at which the lease ends).
    pub writer: Option<(String, u64, u64)>,
    /// Writers waiting (writer preference): (grant id, µs at which the mark lapses unless renewed).
    pub waiting_writers: Vec<(String, u64)>,
    /// The last fencing token minted.
    pub last_fence: u64,
}

/// Which side of the lock a hold is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwMode {
    /// Shared with other readers.
    Read,
    /// Exclusive.
    Write,
}

/// One operation on a read-write lock. Ids name one acquire each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwCall<'a> {
    /// Take a read or write hold if the lock allows it now.
    Acquire {
        /// The grant id.
        id: &'a str,
        /// Read or write.
        mode: RwMode,
        /// Lease length.
        ttl_us: u64,
        /// How long a waiting writer's mark lasts unless renewed.
        waiter_ttl_us: u64,
        /// Writers first: a refused writer marks itself waiting (when `queue`), and readers are
        /// refused while any writer waits.
        prefer_writers: bool,
        /// Whether a refused writer leaves a waiting mark (a waiting acquire) or not (a try).
        queue: bool,
    },
    /// Give back grant (`id`, `fence`).
    Release {
        /// The grant id.
        id: &'a str,
        /// Read or write.
        mode: RwMode,
        /// Its fencing token.
        fence: u64,
    },
    /// Move the end of grant (`id`, `fence`)'s lease to `ttl_us` from now; never re-takes it.
    Extend {
        /// The grant id.
        id: &'a str,
        /// Read or write.
        mode: RwMode,
        /// Its fencing token.
        fence: u64,
        /// New lease length from now.
        ttl_us: u64,
    },
    /// Remove a waiting writer's mark (a writer that gave up).
    Withdraw {
        /// The grant id.
        id: &'a str,
    },
    /// Read the lock.
    State,
}

/// The answer to an [`RwCall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwReply {
    /// Granted with this fencing token.
    Granted {
        /// The fencing token of the grant.
        fence: u64,
    },
    /// Not granted: worth asking again within this many µs.
    Busy {
        /// µs until it is worth asking again.
        retry_us: u64,
    },
    /// Release, extend, withdraw: whether it changed anything.
    Done(bool),
    /// The lock as it stands.
    State {
        /// Live read holds.
        readers: u64,
        /// The writer's fencing token (0 when no writer).
        writer_fence: u64,
        /// µs until the writer's lease ends (0 when no writer).
        writer_remaining_us: u64,
        /// Writers marked waiting.
        waiting_writers: u64,
        /// The last token minted.
        last_fence: u64,
    },
}

/// Applies `call` at `now` (µs). Returns the reply and whether waiters should be woken (the lock may
/// have become available to someone).
///
/// ```
/// use ratelock::algorithm::rwlock::{apply, RwCall, RwMode, RwReply, RwState};
/// let mut lock = RwState::default();
/// let take = |id, mode| RwCall::Acquire {
///     id, mode, ttl_us: 100, waiter_ttl_us: 40, prefer_writers: true, queue: true,
/// };
/// assert_eq!(apply(&mut lock, 10, take("r1", RwMode::Read)).0, RwReply::Granted { fence: 10 });
/// assert_eq!(apply(&mut lock, 11, take("r2", RwMode::Read)).0, RwReply::Granted { fence: 11 });
/// // A writer waits for both readers and marks itself waiting...
/// assert_eq!(apply(&mut lock, 12, take("w", RwMode::Write)).0, RwReply::Busy { retry_us: 20 });
/// // ...so a new reader is refused, and the writer gets the lock once the readers leave.
/// assert!(matches!(apply(&mut lock, 13, take("r3", RwMode::Read)).0, RwReply::Busy { .. }));
/// apply(&mut lock, 14, RwCall::Release { id: "r1", mode: RwMode::Read, fence: 10 });
/// let (done, wake) = apply(&mut lock, 15, RwCall::Release { id: "r2", mode: RwMode::Read, fence: 11 });
/// assert_eq!((done, wake), (RwReply::Done(true), true));
/// assert_eq!(apply(&mut lock, 16, take("w", RwMode::Write)).0, RwReply::Granted { fence: 16 });
/// ```
pub fn apply(state: &mut RwState, now: u64, call: RwCall<'_>) -> (RwReply, bool) {
    state.readers.retain(|&(_, _, ends)| ends > now);
    state.waiting_writers.retain(|&(_, ends)| ends > now);
    if state.writer.as_ref().is_some_and(|&(_, _, ends)| ends <= now) {
        state.writer = None;
    }
    match call {
        RwCall::Acquire {
            id,
            mode: RwMode::Read,
            ttl_us,
            prefer_writers,
            ..
        } => (read(state, now, id, ttl_us, prefer_writers), false),
        RwCall::Acquire {
            id,
            mode: RwMode::Write,
            ttl_us,
            waiter_ttl_us,
            prefer_writers,
            queue,
        } => {
            let mark = (prefer_writers && queue).then_some(waiter_ttl_us);
            (write(state, now, id, ttl_us, mark), false)
        }
        RwCall::Release { id, mode, fence } => {
            let released = match mode {
                RwMode::Read => remove_reader(state, id, fence),
                RwMode::Write if is_grant(state.writer.as_ref(), id, fence) => {
                    state.writer = None;
                    true
                }
                RwMode::Write => false,
            };
            // Readers leaving matter to writers only once the last one is gone.
            let wake = released && state.writer.is_none() && state.readers.is_empty();
            (RwReply::Done(released), wake)
        }
        RwCall::Extend {
            id,
            mode,
            fence,
            ttl_us,
        } => {
            let hold = match mode {
                RwMode::Read => state
                    .readers
                    .iter_mut()
                    .find(|(reader, held_fence, _)| reader == id && *held_fence == fence),
                RwMode::Write => state
                    .writer
                    .as_mut()
                    .filter(|(writer, held_fence, _)| writer == id && *held_fence == fence),
            };
            let extended = hold.map(|(_, _, ends)| *ends = now + ttl_us).is_some();
            (RwReply::Done(extended), false)
        }
        RwCall::Withdraw { id } => {
            let before = state.waiting_writers.len();
            state.waiting_writers.retain(|(writer, _)| writer != id);
            let left = state.waiting_writers.len() < before;
            // Readers held back by the last mark may go now.
            let wake = left && state.waiting_writers.is_empty() && state.writer.is_none();
            (RwReply::Done(left), wake)
        }
        RwCall::State => {
            let (writer_fence, writer_remaining_us) = match &state.writer {
                Some((_, fence, ends)) => (*fence, ends - now),
                None => (0, 0),
            };
            let reply = RwReply::State {
                readers: state.readers.len() as u64,
                writer_fence,
                writer_remaining_us,
                waiting_writers: state.waiting_writers.len() as u64,
                last_fence: state.last_fence,
            };
            (reply, false)
        }
    }
}

fn read(state: &mut RwState, now: u64, id: &str, ttl_us: u64, prefer_writers: bool) -> RwReply {
    if let Some((_, _, ends)) = &state.writer {
        return RwReply::Busy { retry_us: ends - now };
    }
    if prefer_writers {
        if let Some(lapses) = state.waiting_writers.iter().map(|&(_, ends)| ends).min() {
            return RwReply::Busy {
                retry_us: lapses - now,
            };
        }
    }
    let fence = mint(state, now);
    state.readers.push((id.to_owned(), fence, now + ttl_us));
    RwReply::Granted { fence }
}

/// A write hold, or a refusal that (with `mark`, the mark's length) leaves or renews a waiting mark.
fn write(state: &mut RwState, now: u64, id: &str, ttl_us: u64, mark: Option<u64>) -> RwReply {
    let busy_until = match &state.writer {
        Some((_, _, ends)) => Some(*ends),
        None => state.readers.iter().map(|&(_, _, ends)| ends).min(),
    };
    let Some(busy_until) = busy_until else {
        state.waiting_writers.retain(|(writer, _)| writer != id);
        let fence = mint(state, now);
        state.writer = Some((id.to_owned(), fence, now + ttl_us));
        return RwReply::Granted { fence };
    };
    let mut retry_us = busy_until - now;
    if let Some(waiter_ttl_us) = mark {
        match state.waiting_writers.iter_mut().find(|(writer, _)| writer == id) {
            Some(waiting) => waiting.1 = now + waiter_ttl_us,
            None => state.waiting_writers.push((id.to_owned(), now + waiter_ttl_us)),
        }
        retry_us = retry_us.min(waiter_ttl_us / 2);
    }
    RwReply::Busy { retry_us }
}

fn mint(state: &mut RwState, now: u64) -> u64 {
    state.last_fence = next_fence(state.last_fence, now);
    state.last_fence
}

fn remove_reader(state: &mut RwState, id: &str, fence: u64) -> bool {
    let before = state.readers.len();
    state
        .readers
        .retain(|(reader, held_fence, _)| !(reader == id && *held_fence == fence));
    state.readers.len() < before
}

fn is_grant(hold: Option<&(String, u64, u64)>, id: &str, fence: u64) -> bool {
    matches!(hold, Some((holder, held_fence, _)) if holder == id && *held_fence == fence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(id: &str, mode: RwMode, prefer_writers: bool) -> RwCall<'_> {
        RwCall::Acquire {
            id,
            mode,
            ttl_us: 100,
            waiter_ttl_us: 40,
            prefer_writers,
            queue: true,
        }
    }

    #[test]
    fn a_writer_excludes_everyone_and_readers_share() {
        let mut lock = RwState::default();
        assert_eq!(
            apply(&mut lock, 1, take("w", RwMode::Write, true)).0,
            RwReply::Granted { fence: 1 }
        );
        assert_eq!(
            apply(&mut lock, 2, take("r", RwMode::Read, true)).0,
            RwReply::Busy { retry_us: 99 }
        );
        assert_eq!(
            apply(&mut lock, 3, take("w2", RwMode::Write, false)).0,
            RwReply::Busy { retry_us: 98 }
        );
        let release = RwCall::Release {
            id: "w",
            mode: RwMode::Write,
            fence: 1,
        };
        assert_eq!(apply(&mut lock, 4, release), (RwReply::Done(true), true));
        assert_eq!(apply(&mut lock, 4, release), (RwReply::Done(false), false));
        assert!(matches!(
            apply(&mut lock, 5, take("r", RwMode::Read, false)).0,
            RwReply::Granted { .. }
        ));
        assert!(matches!(
            apply(&mut lock, 6, take("r2", RwMode::Read, false)).0,
            RwReply::Granted { .. }
        ));
        let (state, _) = apply(&mut lock, 7, RwCall::State);
        assert!(matches!(
            state,
            RwReply::State {
                readers: 2,
                writer_fence: 0,
                last_fence: 6,
                ..
            }
        ));
    }

    #[test]
    fn without_writer_preference_readers_keep_coming() {
        let mut lock = RwState::default();
        apply(&mut lock, 0, take("r1", RwMode::Read, false));
        assert_eq!(
            apply(&mut lock, 1, take("w", RwMode::Write, false)).0,
            RwReply::Busy { retry_us: 99 }
        );
        assert!(lock.waiting_writers.is_empty());
        assert!(matches!(
            apply(&mut lock, 2, take("r2", RwMode::Read, false)).0,
            RwReply::Granted { .. }
        ));
    }

    #[test]
    fn a_dead_writers_mark_lapses_and_withdrawing_wakes_readers() {
        let mut lock = RwState::default();
        apply(&mut lock, 0, take("r1", RwMode::Read, true));
        apply(&mut lock, 1, take("w", RwMode::Write, true)); // mark until 41
        assert_eq!(
            apply(&mut lock, 2, take("r2", RwMode::Read, true)).0,
            RwReply::Busy { retry_us: 39 }
        );
        assert!(matches!(
            apply(&mut lock, 41, take("r2", RwMode::Read, true)).0,
            RwReply::Granted { .. }
        ));
        apply(&mut lock, 42, take("w", RwMode::Write, true));
        assert_eq!(
            apply(&mut lock, 43, RwCall::Withdraw { id: "w" }),
            (RwReply::Done(true), true)
        );
        assert!(matches!(
            apply(&mut lock, 44, take("r3", RwMode::Read, true)).0,
            RwReply::Granted { .. }
        ));
    }

    #[test]
    fn extending_needs_the_exact_grant_and_never_revives_one() {
        let mut lock = RwState::default();
        apply(&mut lock, 10, take("r", RwMode::Read, true));
        let extend = |fence, mode| RwCall::Extend {
            id: "r",
            mode,
            fence,
            ttl_us: 100,
        };
        assert_eq!(
            apply(&mut lock, 20, extend(10, RwMode::Write)).0,
            RwReply::Done(false)
        );
        assert_eq!(
            apply(&mut lock, 20, extend(9, RwMode::Read)).0,
            RwReply::Done(false)
        );
        assert_eq!(
            apply(&mut lock, 20, extend(10, RwMode::Read)).0,
            RwReply::Done(true)
        );
        assert_eq!(
            apply(&mut lock, 120, extend(10, RwMode::Read)).0,
            RwReply::Done(false)
        );
        assert!(lock.readers.is_empty());
    }
}
