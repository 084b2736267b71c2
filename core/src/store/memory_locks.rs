//! The memory store's locks and semaphores: the functions of `algorithm::lease` and
//! `algorithm::permits` over in-process tables, with a `Notify` per channel standing in for Redis
//! pub/sub. Fair and read-write locks run `algorithm::fair` and `algorithm::rwlock` the same way.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::LockState;
use crate::algorithm::fair::{self, FairCall, FairReply, FairState};
use crate::algorithm::lease::{self, Acquired, Extended, Lease, Released};
use crate::algorithm::permits::{self, PermitAcquired};
use crate::algorithm::rwlock::{self, RwCall, RwReply, RwState};
use crate::clock::process_now_us;
use crate::key::{FairLockKeys, LockKeys, RwLockKeys, SemaphoreKeys};

/// Operations between two sweeps of the tables.
const SWEEP_EVERY: u64 = 1024;

/// Every lock and semaphore of one memory store.
#[derive(Default)]
pub(crate) struct MemoryLocks {
    operations: std::sync::atomic::AtomicU64,
    table: Mutex<HashMap<Vec<u8>, LockSlot>>,
    permits: Mutex<HashMap<Vec<u8>, Permits>>,
    fair: Mutex<HashMap<Vec<u8>, FairState>>,
    rw: Mutex<HashMap<Vec<u8>, RwState>>,
    channels: Mutex<HashMap<Vec<u8>, Arc<Notify>>>,
}

/// The permits of one semaphore: (permit id, lease end µs).
type Permits = Vec<(String, u64)>;

#[derive(Default)]
struct LockSlot {
    lease: Option<Lease>,
    last_fence: u64,
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
        self.table.lock().retain(|_, slot| {
            let held = slot.lease.as_ref().is_some_and(|l| l.expires_at > now);
            held || slot.last_fence >= now
        });
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

    pub(crate) fn acquire(&self, keys: &LockKeys, owner: &str, ttl_us: u64, reentrant: bool) -> Acquired {
        self.maybe_sweep();
        let mut table = self.table.lock();
        let slot = table.entry(keys.lease.clone()).or_default();
        let now = process_now_us();
        let (answer, lease, fence) = lease::acquire(
            slot.lease.as_ref(),
            slot.last_fence,
            now,
            owner,
            ttl_us,
            reentrant,
        );
        if let Some(lease) = lease {
            slot.lease = Some(lease);
        }
        slot.last_fence = fence;
        answer
    }

    pub(crate) fn release(&self, keys: &LockKeys, owner: &str, fence: u64) -> Released {
        let mut table = self.table.lock();
        let Some(slot) = table.get_mut(&keys.lease) else {
            return Released::NotHeld;
        };
        let (answer, change) = lease::release(slot.lease.as_ref(), process_now_us(), owner, fence);
        if let Some(lease) = change {
            slot.lease = lease;
        }
        drop(table);
        if answer == Released::Released {
            self.wake(&keys.channel);
        }
        answer
    }

    pub(crate) fn extend(&self, keys: &LockKeys, owner: &str, fence: u64, ttl_us: u64) -> Extended {
        let mut table = self.table.lock();
        let Some(slot) = table.get_mut(&keys.lease) else {
            return Extended::Expired;
        };
        let (answer, lease) = lease::extend(slot.lease.as_ref(), process_now_us(), owner, fence, ttl_us);
        if let Some(lease) = lease {
            slot.lease = Some(lease);
        }
        answer
    }

    pub(crate) fn state(&self, keys: &LockKeys) -> LockState {
        let table = self.table.lock();
        let now = process_now_us();
        let Some(slot) = table.get(&keys.lease) else {
            return LockState::default();
        };
        match slot.lease.as_ref().filter(|l| l.expires_at > now) {
            Some(lease) => LockState {
                held: true,
                remaining_us: lease.expires_at - now,
                holder_fence: lease.fence,
                last_fence: slot.last_fence,
            },
            None => LockState {
                last_fence: slot.last_fence,
                ..LockState::default()
            },
        }
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

    pub(crate) fn semaphore_acquire(
        &self,
        keys: &SemaphoreKeys,
        id: &str,
        limit: u64,
        ttl_us: u64,
    ) -> PermitAcquired {
        self.maybe_sweep();
        let mut table = self.permits.lock();
        let held = table.entry(keys.permits.clone()).or_default();
        permits::acquire(held, process_now_us(), id, limit, ttl_us)
    }

    pub(crate) fn semaphore_release(&self, keys: &SemaphoreKeys, id: &str) -> bool {
        let released = match self.permits.lock().get_mut(&keys.permits) {
            Some(held) => permits::release(held, process_now_us(), id),
            None => false,
        };
        if released {
            self.wake(&keys.channel);
        }
        released
    }

    pub(crate) fn semaphore_extend(&self, keys: &SemaphoreKeys, id: &str, ttl_us: u64) -> bool {
        match self.permits.lock().get_mut(&keys.permits) {
            Some(held) => permits::extend(held, process_now_us(), id, ttl_us),
            None => false,
        }
    }

    /// (permits in use, µs until the earliest lease ends).
    pub(crate) fn semaphore_state(&self, keys: &SemaphoreKeys) -> (u64, u64) {
        let now = process_now_us();
        let mut table = self.permits.lock();
        let Some(held) = table.get_mut(&keys.permits) else {
            return (0, 0);
        };
        permits::reclaim(held, now);
        let earliest = held.iter().map(|&(_, expires)| expires - now).min().unwrap_or(0);
        (held.len() as u64, earliest)
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

    /// Deletes the lease whoever holds it (the fencing counter stays) and wakes waiters.
    pub(crate) fn force_release(&self, keys: &LockKeys) -> bool {
        let mut table = self.table.lock();
        let Some(slot) = table.get_mut(&keys.lease) else {
            return false;
        };
        let now = process_now_us();
        let was_held = slot.lease.take().is_some_and(|l| l.expires_at > now);
        drop(table);
        self.wake(&keys.channel);
        was_held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_locks_permits_and_channels_are_swept_and_tokens_still_rise() {
        let locks = MemoryLocks::default();
        let mut last_fence = 0;
        for i in 0..3 * SWEEP_EVERY {
            let name = format!("job:{i}");
            let keys = LockKeys::new("rl", name.as_bytes());
            if let Acquired::Granted { fence, .. } = locks.acquire(&keys, "owner", 1_000_000, false) {
                assert_eq!(locks.release(&keys, "owner", fence), Released::Released);
                last_fence = fence;
            }
            let permits = SemaphoreKeys::new("rl", name.as_bytes());
            locks.semaphore_acquire(&permits, "p", 2, 1_000_000);
            assert!(locks.semaphore_release(&permits, "p"));
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
        match locks.acquire(&keys, "owner", 1_000, false) {
            Acquired::Granted { fence, .. } => assert!(fence > last_fence),
            busy => panic!("{busy:?}"),
        }
    }
}
