//! The memory store's lock kinds: every call of `algorithm::lease`, `algorithm::permits`,
//! `algorithm::fair` and `algorithm::rwlock` answered by that module's pure `apply` over in-process
//! tables, with a `Notify` per channel standing in for Redis pub/sub.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::algorithm::fair::{self, FairCall, FairReply, FairState};
use crate::algorithm::lease::{self, LockCall, LockRecord, LockReply};
use crate::algorithm::permits::{self, Permits, SemaphoreCall, SemaphoreReply};
use crate::algorithm::rwlock::{self, RwCall, RwReply, RwState};
use crate::clock::process_now_us;
use crate::key::{FairLockKeys, LockKeys, RwLockKeys, SemaphoreKeys};

/// Operations between two sweeps of the tables.
const SWEEP_EVERY: u64 = 1024;

/// Every lock and semaphore of one memory store.
#[derive(Default)]
pub(crate) struct MemoryLocks {
    operations: std::sync::atomic::AtomicU64,
    table: Mutex<HashMap<Vec<u8>, LockRecord>>,
    permits: Mutex<HashMap<Vec<u8>, Permits>>,
    fair: Mutex<HashMap<Vec<u8>, FairState>>,
    rw: Mutex<HashMap<Vec<u8>, RwState>>,
    channels: Mutex<HashMap<Vec<u8>, Arc<Notify>>>,
}

impl MemoryLocks {
    /// Every `SWEEP_EVERY` operations, drops what no longer matters: locks whose lease is over once the
    /// clock has passed their last token (a new counter then still mints a higher one), empty permit
    /// lists, and channels nobody listens to.
    fn maybe_sweep(&self) {
        let n = self.operations.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if !n.is_multiple_of(SWEEP_EVERY) {
            return;
        }
        let now = process_now_us();
        self.table.lock().retain(|_, record| record.in_use(now));
        self.permits.lock().retain(|_, held| {
            permits::reclaim(held, now);
            !held.is_empty()
        });
        self.fair.lock().retain(|_, lock| {
            let _ = fair::apply(lock, now, FairCall::State);
            lock.holder.is_some() || !lock.queue.is_empty() || lock.last_fence >= now
        });
        self.rw.lock().retain(|_, lock| {
            let _ = rwlock::apply(lock, now, RwCall::State);
            let idle = lock.writer.is_none() && lock.readers.is_empty() && lock.waiting_writers.is_empty();
            !idle || lock.last_fence >= now
        });
        self.channels
            .lock()
            .retain(|_, notify| Arc::strong_count(notify) > 1);
    }

    /// Entries in the lock, permit and channel tables (for tests of the sweep).
    #[cfg(test)]
    fn sizes(&self) -> (usize, usize, usize) {
        (
            self.table.lock().len(),
            self.permits.lock().len(),
            self.channels.lock().len(),
        )
    }

    /// One operation on a distributed lock, at the process clock.
    pub(crate) fn lock(&self, keys: &LockKeys, call: LockCall<'_>) -> LockReply {
        self.maybe_sweep();
        let creates = matches!(call, LockCall::Acquire { .. });
        let (reply, wake) = with_entry(&mut self.table.lock(), &keys.lease, creates, |record| {
            lease::apply(record, process_now_us(), call)
        });
        if wake {
            self.wake(&keys.channel);
        }
        reply
    }

    /// One operation on a semaphore, at the process clock.
    pub(crate) fn semaphore(&self, keys: &SemaphoreKeys, call: SemaphoreCall<'_>) -> SemaphoreReply {
        self.maybe_sweep();
        let creates = matches!(call, SemaphoreCall::Acquire { .. });
        let (reply, wake) = with_entry(&mut self.permits.lock(), &keys.permits, creates, |held| {
            permits::apply(held, process_now_us(), call)
        });
        if wake {
            self.wake(&keys.channel);
        }
        reply
    }

    /// The notifier woken by every message on `channel`.
    pub(crate) fn channel(&self, channel: &[u8]) -> Arc<Notify> {
        self.channels.lock().entry(channel.to_vec()).or_default().clone()
    }

    fn wake(&self, channel: &[u8]) {
        if let Some(notify) = self.channels.lock().get(channel) {
            notify.notify_waiters();
        }
    }

    /// One operation on a fair lock at `now` (µs; the process clock when `None`); wakes the waiter it names.
    pub(crate) fn fair_lock(&self, keys: &FairLockKeys, call: FairCall<'_>, now: Option<u64>) -> FairReply {
        self.maybe_sweep();
        let now = now.unwrap_or_else(process_now_us);
        let (reply, wake) = fair::apply(
            self.fair.lock().entry(keys.holder.clone()).or_default(),
            now,
            call,
        );
        if let Some(id) = wake {
            self.wake(&keys.wake_channel(&id));
        }
        reply
    }

    /// One operation on a read-write lock at `now` (µs; the process clock when `None`).
    pub(crate) fn rw_lock(&self, keys: &RwLockKeys, call: RwCall<'_>, now: Option<u64>) -> RwReply {
        self.maybe_sweep();
        let now = now.unwrap_or_else(process_now_us);
        let (reply, wake) = rwlock::apply(self.rw.lock().entry(keys.writer.clone()).or_default(), now, call);
        if wake {
            self.wake(&keys.channel);
        }
        reply
    }
}

/// `apply` on the state of `key` in `table`: the stored one; a new one stored for a call that `creates`
/// (an acquire); for any other call on a missing key, a fresh state that is not kept, so a release,
/// extend or read of a lock nobody holds copies no key and stores nothing.
fn with_entry<S: Default, R>(
    table: &mut HashMap<Vec<u8>, S>,
    key: &[u8],
    creates: bool,
    apply: impl FnOnce(&mut S) -> R,
) -> R {
    if let Some(state) = table.get_mut(key) {
        return apply(state);
    }
    if creates {
        apply(table.entry(key.to_vec()).or_default())
    } else {
        apply(&mut S::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::lease::{Acquired, Released};

    #[test]
    fn finished_locks_permits_and_channels_are_swept_and_tokens_still_rise() {
        let locks = MemoryLocks::default();
        let mut last_fence = 0;
        let take = LockCall::Acquire {
            owner: "owner",
            ttl_us: 1_000_000,
            reentrant: false,
        };
        for i in 0..3 * SWEEP_EVERY {
            let name = format!("job:{i}");
            let keys = LockKeys::new("rl", name.as_bytes());
            if let LockReply::Acquired(Acquired::Granted { fence, .. }) = locks.lock(&keys, take) {
                let release = LockCall::Release {
                    owner: "owner",
                    fence,
                };
                assert_eq!(
                    locks.lock(&keys, release),
                    LockReply::Released(Released::Released)
                );
                last_fence = fence;
            }
            let permits = SemaphoreKeys::new("rl", name.as_bytes());
            let acquire = SemaphoreCall::Acquire {
                id: "p",
                limit: 2,
                ttl_us: 1_000_000,
            };
            locks.semaphore(&permits, acquire);
            let release = SemaphoreCall::Release { id: "p" };
            assert_eq!(locks.semaphore(&permits, release), SemaphoreReply::Done(true));
            drop(locks.channel(&keys.channel));
        }
        let (table, permits, channels) = locks.sizes();
        assert!(
            table < SWEEP_EVERY as usize && permits < SWEEP_EVERY as usize,
            "{table} {permits}"
        );
        assert!(channels < SWEEP_EVERY as usize, "{channels}");
        // A swept lock mints from the clock again, still above every earlier token.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let keys = LockKeys::new("rl", b"job:0");
        let short = LockCall::Acquire {
            owner: "owner",
            ttl_us: 1_000,
            reentrant: false,
        };
        match locks.lock(&keys, short) {
            LockReply::Acquired(Acquired::Granted { fence, .. }) => assert!(fence > last_fence),
            busy => panic!("{busy:?}"),
        }
    }
}
