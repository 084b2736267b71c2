//! Locks of every kind: [`DistributedLock`] (`distributed.rs`; on any lock store, Redlock included),
//! [`Semaphore`], [`FairLock`] and [`ReadWriteLock`], their guards and leases, and the upkeep a held
//! lease gets (the watchdog that renews it, the lost signal that says when it ended). This file only
//! names the parts.

// First: its `reply_as!` serves the files after it.
#[macro_use]
mod reply;

mod any_guard;
mod distributed;
mod fair;
mod give_back;
mod guard;
mod hold_events;
mod lease_end;
mod lock_lease;
mod lost;
mod options;
mod orphan;
mod own_grants;
mod owner;
mod queued_lease;
mod run_to_end;
mod rwlock;
mod semaphore;
mod shared;
mod upkeep;
mod wait;
mod watchdog;
mod watchdog_start;

pub use any_guard::AnyGuard;
pub use distributed::DistributedLock;
pub use fair::{FairLock, FairLockState};
pub use guard::{Guard, Lease};
pub use lock_lease::{LockGuard, LockLease};
pub use lost::{LostReason, LostSignal};
pub use options::{LockOptions, MAX_LEASE};
pub use queued_lease::{HeldLease, LeaseGuard};
pub use rwlock::{ReadWriteLock, RwLockState};
pub use semaphore::{ConcurrencyLimiter, PermitGuard, PermitLease, Semaphore};
