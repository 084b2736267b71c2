//! What every handle of one fair or read-write lock shares: its store, keys and options, the owner
//! token of this handle's grants and their count. The lock kinds and the guard over their holds both
//! read it, so it lives below both.

use std::sync::atomic::AtomicU64;

use super::LockOptions;
use crate::key::{FairLockKeys, RwLockKeys};
use crate::store::Store;

/// The shared part of one lock handle, over the keys of its kind.
pub(crate) struct LockShared<Keys> {
    pub(crate) store: Store,
    pub(crate) keys: Keys,
    pub(crate) options: LockOptions,
    pub(crate) owner: String,
    pub(crate) grants: AtomicU64,
}

/// A fair lock's shared part.
pub(crate) type FairShared = LockShared<FairLockKeys>;

/// A read-write lock's shared part.
pub(crate) type RwShared = LockShared<RwLockKeys>;
