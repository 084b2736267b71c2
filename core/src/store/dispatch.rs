//! The role traits for the two store enums, each call passed to the variant that answers it: the one
//! place where `Store` and `AnyLockStore` are matched per call. A new store is a new variant here and
//! its role impls in its own file.

use super::roles::sealed::Sealed;
use super::roles::{EntryChange, LimitRequest, LimitStore, OverrideChange};
use super::{AnyLockStore, Store};
use crate::algorithm::standing::Verdict;
use crate::error::Result;
use crate::rule::Rules;

/// `$body` with `$inner` bound to the store inside `$store` (a `Store`), whichever it is.
macro_rules! each_store {
    ($store:expr, $inner:ident => $body:expr) => {
        match $store {
            Store::Memory($inner) => $body,
            #[cfg(feature = "redis")]
            Store::Redis($inner) => $body,
        }
    };
}

impl Sealed for Store {}
impl Sealed for AnyLockStore {}

impl LimitStore for Store {
    async fn check(&self, request: &LimitRequest<'_>) -> Result<Verdict> {
        crate::clock::check_now(request.now_us)?;
        each_store!(self, store => LimitStore::check(store, request).await)
    }

    fn check_blocking(&self, request: &LimitRequest<'_>) -> Option<Result<Verdict>> {
        if let Err(error) = crate::clock::check_now(request.now_us) {
            return Some(Err(error));
        }
        each_store!(self, store => LimitStore::check_blocking(store, request))
    }

    async fn reset(&self, prefix: &str, key: &[u8], rules: &Rules) -> Result<()> {
        each_store!(self, store => LimitStore::reset(store, prefix, key, rules).await)
    }

    async fn refund(&self, request: &LimitRequest<'_>) -> Result<Verdict> {
        crate::clock::check_now(request.now_us)?;
        each_store!(self, store => LimitStore::refund(store, request).await)
    }

    async fn set_override(&self, change: &OverrideChange<'_>) -> Result<bool> {
        crate::clock::check_now(change.now_us)?;
        each_store!(self, store => LimitStore::set_override(store, change).await)
    }

    async fn stand(&self, change: &EntryChange<'_>) -> Result<bool> {
        crate::clock::check_now(change.now_us)?;
        each_store!(self, store => LimitStore::stand(store, change).await)
    }
}

#[cfg(feature = "runtime")]
mod locks {
    use std::future::Future;

    use super::{AnyLockStore, Store};
    use crate::algorithm::fair::{FairCall, FairReply};
    use crate::algorithm::lease::{LockCall, LockReply};
    use crate::algorithm::permits::{SemaphoreCall, SemaphoreReply};
    use crate::algorithm::rwlock::{RwCall, RwReply};
    use crate::error::Result;
    use crate::key::{FairLockKeys, LockKeys, RwLockKeys, SemaphoreKeys};
    use crate::store::roles::{LockKindStore, LockStore, ReleaseWatch};

    impl LockStore for Store {
        async fn lock(&self, keys: &LockKeys, call: LockCall<'_>) -> Result<LockReply> {
            each_store!(self, store => LockStore::lock(store, keys, call).await)
        }

        fn ping(&self) -> impl Future<Output = Result<()>> + Send {
            Store::ping(self)
        }

        async fn watch_releases(&self, channel: &[u8]) -> Result<ReleaseWatch> {
            each_store!(self, store => store.watch_releases(channel).await)
        }
    }

    impl LockKindStore for Store {
        async fn semaphore(&self, keys: &SemaphoreKeys, call: SemaphoreCall<'_>) -> Result<SemaphoreReply> {
            each_store!(self, store => store.semaphore(keys, call).await)
        }

        async fn fair_lock(
            &self,
            keys: &FairLockKeys,
            call: FairCall<'_>,
            now: Option<u64>,
        ) -> Result<FairReply> {
            crate::clock::check_now(now)?;
            each_store!(self, store => LockKindStore::fair_lock(store, keys, call, now).await)
        }

        async fn rw_lock(&self, keys: &RwLockKeys, call: RwCall<'_>, now: Option<u64>) -> Result<RwReply> {
            crate::clock::check_now(now)?;
            each_store!(self, store => LockKindStore::rw_lock(store, keys, call, now).await)
        }
    }

    /// `$body` with `$inner` bound to the lock store inside `$store` (an `AnyLockStore`).
    macro_rules! each_lock_store {
        ($store:expr, $inner:ident => $body:expr) => {
            match $store {
                AnyLockStore::Store($inner) => $body,
                #[cfg(feature = "redis")]
                AnyLockStore::Redlock($inner) => $body,
            }
        };
    }

    impl LockStore for AnyLockStore {
        async fn lock(&self, keys: &LockKeys, call: LockCall<'_>) -> Result<LockReply> {
            each_lock_store!(self, store => store.lock(keys, call).await)
        }

        async fn ping(&self) -> Result<()> {
            each_lock_store!(self, store => LockStore::ping(store).await)
        }

        async fn watch_releases(&self, channel: &[u8]) -> Result<ReleaseWatch> {
            each_lock_store!(self, store => store.watch_releases(channel).await)
        }
    }
}
