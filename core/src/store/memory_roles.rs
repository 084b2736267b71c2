//! The roles the memory store plays: every call answered at once, in process, by `memory.rs` (limits)
//! and `memory_locks.rs` (every lock kind); the futures are ready the moment they are made.

use std::future::{ready, Future};

use super::roles::sealed::Sealed;
use super::roles::{EntryChange, LimitRequest, OverrideChange};
use super::MemoryStore;
use crate::algorithm::standing::Verdict;
use crate::error::Result;
use crate::rule::Rules;

impl Sealed for MemoryStore {}

impl super::LimitStore for MemoryStore {
    fn check(&self, request: &LimitRequest<'_>) -> impl Future<Output = Result<Verdict>> + Send {
        ready(MemoryStore::check(self, request))
    }

    fn check_blocking(&self, request: &LimitRequest<'_>) -> Option<Result<Verdict>> {
        Some(MemoryStore::check(self, request))
    }

    fn reset(&self, prefix: &str, key: &[u8], rules: &Rules) -> impl Future<Output = Result<()>> + Send {
        MemoryStore::reset(self, prefix, key, rules);
        ready(Ok(()))
    }

    fn refund(&self, request: &LimitRequest<'_>) -> impl Future<Output = Result<Verdict>> + Send {
        ready(MemoryStore::refund(self, request))
    }

    fn stand(&self, change: &EntryChange<'_>) -> impl Future<Output = Result<bool>> + Send {
        ready(Ok(MemoryStore::stand(self, change)))
    }

    fn set_override(&self, change: &OverrideChange<'_>) -> impl Future<Output = Result<bool>> + Send {
        ready(Ok(MemoryStore::set_override(self, change)))
    }
}

#[cfg(feature = "runtime")]
mod locks {
    use std::future::{ready, Future};

    use crate::algorithm::fair::{FairCall, FairReply};
    use crate::algorithm::lease::{LockCall, LockReply};
    use crate::algorithm::permits::{SemaphoreCall, SemaphoreReply};
    use crate::algorithm::rwlock::{RwCall, RwReply};
    use crate::error::Result;
    use crate::key::{FairLockKeys, LockKeys, RwLockKeys, SemaphoreKeys};
    use crate::store::roles::WatchSource;
    use crate::store::roles::{LockKindStore, LockStore, ReleaseWatch};
    use crate::store::MemoryStore;

    impl LockStore for MemoryStore {
        fn lock(
            &self,
            keys: &LockKeys,
            call: LockCall<'_>,
        ) -> impl Future<Output = Result<LockReply>> + Send {
            ready(Ok(self.locks().lock(keys, call)))
        }

        fn ping(&self) -> impl Future<Output = Result<()>> + Send {
            ready(Ok(()))
        }

        fn watch_releases(&self, channel: &[u8]) -> impl Future<Output = Result<ReleaseWatch>> + Send {
            let source = WatchSource::Memory(self.locks().channel(channel));
            ready(Ok(ReleaseWatch { source }))
        }
    }

    impl LockKindStore for MemoryStore {
        fn semaphore(
            &self,
            keys: &SemaphoreKeys,
            call: SemaphoreCall<'_>,
        ) -> impl Future<Output = Result<SemaphoreReply>> + Send {
            ready(Ok(self.locks().semaphore(keys, call)))
        }

        fn fair_lock(
            &self,
            keys: &FairLockKeys,
            call: FairCall<'_>,
            now: Option<u64>,
        ) -> impl Future<Output = Result<FairReply>> + Send {
            ready(Ok(self.locks().fair_lock(keys, call, now)))
        }

        fn rw_lock(
            &self,
            keys: &RwLockKeys,
            call: RwCall<'_>,
            now: Option<u64>,
        ) -> impl Future<Output = Result<RwReply>> + Send {
            ready(Ok(self.locks().rw_lock(keys, call, now)))
        }
    }
}
