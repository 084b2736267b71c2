//! The memory store's locks: the lease functions of `algorithm::lease` over an in-process table, with
//! a `Notify` per lock standing in for the Redis release channel.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::LockState;
use crate::algorithm::lease::{self, Acquired, Extended, Lease, Released};
use crate::clock::process_now_us;
use crate::key::LockKeys;

/// Every lock of one memory store, by lease key.
#[derive(Default)]
pub(crate) struct MemoryLocks {
    table: Mutex<HashMap<Vec<u8>, LockSlot>>,
}

#[derive(Default)]
struct LockSlot {
    lease: Option<Lease>,
    last_fence: u64,
    released: Arc<Notify>,
}

impl MemoryLocks {
    pub(crate) fn acquire(&self, keys: &LockKeys, owner: &str, ttl_us: u64, reentrant: bool) -> Acquired {
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

    pub(crate) fn release(&self, keys: &LockKeys, owner: &str) -> Released {
        let mut table = self.table.lock();
        let Some(slot) = table.get_mut(&keys.lease) else {
            return Released::NotHeld;
        };
        let (answer, change) = lease::release(slot.lease.as_ref(), process_now_us(), owner);
        if let Some(lease) = change {
            slot.lease = lease;
        }
        if answer == Released::Released {
            slot.released.notify_waiters();
        }
        answer
    }

    pub(crate) fn extend(&self, keys: &LockKeys, owner: &str, ttl_us: u64) -> Extended {
        let mut table = self.table.lock();
        let Some(slot) = table.get_mut(&keys.lease) else {
            return Extended::Expired;
        };
        let (answer, lease) = lease::extend(slot.lease.as_ref(), process_now_us(), owner, ttl_us);
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

    /// The notifier woken by every release of this lock.
    pub(crate) fn releases(&self, keys: &LockKeys) -> Arc<Notify> {
        let mut table = self.table.lock();
        table.entry(keys.lease.clone()).or_default().released.clone()
    }

    /// Deletes the lease whoever holds it (the fencing counter stays) and wakes waiters.
    pub(crate) fn force_release(&self, keys: &LockKeys) -> bool {
        let mut table = self.table.lock();
        let Some(slot) = table.get_mut(&keys.lease) else {
            return false;
        };
        let now = process_now_us();
        let was_held = slot.lease.take().is_some_and(|l| l.expires_at > now);
        slot.released.notify_waiters();
        was_held
    }
}
