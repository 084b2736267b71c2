//! The store operations behind `FairLock` and `ReadWriteLock`: one call per operation, answered by
//! `algorithm::fair` / `algorithm::rwlock` in memory or by `fair_lock.lua` / `rw_lock.lua` on Redis.

use super::Store;
use crate::algorithm::fair::{FairCall, FairReply};
use crate::algorithm::rwlock::{RwCall, RwReply};
use crate::error::Result;
use crate::key::{FairLockKeys, RwLockKeys};

impl Store {
    /// One fair-lock operation. `now` (µs) replaces the store's clock, for tests that replay a timeline;
    /// `None` uses the store's clock (the server's, on Redis).
    pub async fn fair_lock(
        &self,
        keys: &FairLockKeys,
        call: FairCall<'_>,
        now: Option<u64>,
    ) -> Result<FairReply> {
        match self {
            Store::Memory(store) => Ok(store.locks().fair_lock(keys, call, now)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.fair_lock(keys, call, now)).await,
            #[cfg(feature = "redis")]
            Store::Redlock(_) => Err(super::locks_only("a fair lock")),
        }
    }

    /// One read-write-lock operation; `now` as for [`fair_lock`](Self::fair_lock).
    pub async fn rw_lock(&self, keys: &RwLockKeys, call: RwCall<'_>, now: Option<u64>) -> Result<RwReply> {
        match self {
            Store::Memory(store) => Ok(store.locks().rw_lock(keys, call, now)),
            #[cfg(feature = "redis")]
            Store::Redis(store) => Box::pin(store.rw_lock(keys, call, now)).await,
            #[cfg(feature = "redis")]
            Store::Redlock(_) => Err(super::locks_only("a read-write lock")),
        }
    }
}
