//! What every handle of a distributed, fair or read-write lock shares: its store, keys and options,
//! and the owner token of this handle's grants (with their count, for fair and read-write locks). The
//! lock kinds and the guards over their holds both read it, so it lives below both. (A semaphore's is
//! in `semaphore.rs`, beside the only kind that uses it.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::options::{check_lease, check_waiter_ttl, LockOptions};
use super::own_grants::OwnGrants;
use super::owner::ProcessOwner;
use crate::algorithm::lease::{LockCall, LockReply};
use crate::error::Result;
use crate::key::{check_key, check_prefix, FairLockKeys, LockKeys, RwLockKeys};
use crate::store::{AnyLockStore, LockState, LockStore, Store};

/// The shared part of one lock handle, over the keys of its kind.
pub(crate) struct LockShared<Keys> {
    pub(crate) store: Store,
    pub(crate) keys: Keys,
    pub(crate) options: LockOptions,
    pub(crate) owner: ProcessOwner,
    pub(crate) grants: AtomicU64,
}

/// A fair lock's shared part.
pub(crate) type FairShared = LockShared<FairLockKeys>;

/// A read-write lock's shared part.
pub(crate) type RwShared = LockShared<RwLockKeys>;

impl<Keys> LockShared<Keys> {
    /// The shared part of a handle on lock `name` in `store`, its keys made by `keys` from the prefix
    /// and name, after checking the name and the options (lease and waiter's place lengths).
    pub(crate) fn new(
        store: &Store,
        name: &[u8],
        options: LockOptions,
        keys: impl FnOnce(&str, &[u8]) -> Keys,
    ) -> Result<Self> {
        check_key("name", name)?;
        check_prefix(&options.prefix)?;
        check_lease(options.ttl)?;
        check_waiter_ttl(options.waiter_ttl)?;
        Ok(LockShared {
            store: store.clone(),
            keys: keys(&options.prefix, name),
            options,
            owner: ProcessOwner::new()?,
            grants: AtomicU64::new(0),
        })
    }

    /// A fresh grant id: this process's owner token and this handle's grant count.
    pub(crate) fn next_id(&self) -> String {
        let n = self.grants.fetch_add(1, Ordering::Relaxed);
        format!("{}:{n}", self.owner.token())
    }
}

/// The shared part of one [`DistributedLock`](super::DistributedLock) handle (on any lock store,
/// Redlock included).
pub(crate) struct DistributedShared {
    pub(crate) store: AnyLockStore,
    pub(crate) keys: LockKeys,
    pub(crate) owner: ProcessOwner,
    pub(crate) options: LockOptions,
    /// The lock's name as given (for `Debug`).
    pub(crate) name: String,
    /// This handle's live grants and tries in flight, to give back a grant nobody heard of.
    pub(crate) own: Arc<OwnGrants>,
}

impl DistributedShared {
    /// One call on this lock's keys.
    pub(crate) async fn call(&self, call: LockCall<'_>) -> Result<LockReply> {
        self.store.lock(&self.keys, call).await
    }

    /// The lock as it stands.
    pub(crate) async fn state(&self) -> Result<LockState> {
        reply_as!(self.call(LockCall::State).await?, LockReply::State)
    }
}
