//! The Redis store's lock roles: every call of `LockCall`, `SemaphoreCall`, `FairCall` and `RwCall` as
//! one run of its script (`lock_*.lua`, `semaphore_*.lua`, `fair_lock.lua`, `rw_lock.lua`), the reply
//! read back into the same reply types the memory store gives.

use std::future::Future;

use redis::Value;

use super::call_tag::excerpt;
use super::commands::script_call;
use super::lease_calls::LeaseCalls;
use super::reply::integers;
use super::script::{
    LuaScript, FAIR_LOCK, FAIR_LOCK_FREEING, LOCK_ACQUIRE, LOCK_EXTEND, LOCK_FORCE_RELEASE, LOCK_RELEASE,
    LOCK_STATE, RW_LOCK, RW_LOCK_FREEING, SEMAPHORE_ACQUIRE, SEMAPHORE_EXTEND, SEMAPHORE_RELEASE,
    SEMAPHORE_STATE,
};
use super::RedisStore;
use crate::algorithm::fair::{FairCall, FairReply};
use crate::algorithm::lease::{Acquired, Extended, LockCall, LockReply, LockState, Released};
use crate::algorithm::permits::{PermitAcquired, SemaphoreCall, SemaphoreReply};
use crate::algorithm::rwlock::{RwCall, RwMode, RwReply};
use crate::error::{Error, Result};
use crate::key::{FairLockKeys, LockKeys, RwLockKeys, SemaphoreKeys};
use crate::store::roles::WatchSource;
use crate::store::roles::{LockKindStore, LockStore, ReleaseWatch};

/// Every Redis future is boxed: they are large, and `Store`'s futures would carry them on memory calls.
impl LockStore for RedisStore {
    fn lock(&self, keys: &LockKeys, call: LockCall<'_>) -> impl Future<Output = Result<LockReply>> + Send {
        Box::pin(LeaseCalls::answer(self, keys, call))
    }

    fn ping(&self) -> impl Future<Output = Result<()>> + Send {
        Box::pin(RedisStore::ping(self))
    }

    /// Boxed like every other Redis call here: the subscriber's future is deep (a pub/sub connection
    /// held across awaits), and inline it pushed the futures of code that awaits a lock wait past
    /// rustc's query depth limit.
    fn watch_releases(&self, channel: &[u8]) -> impl Future<Output = Result<ReleaseWatch>> + Send {
        Box::pin(async move {
            let registration = self.subscriber().register(channel).await?;
            Ok(ReleaseWatch {
                source: WatchSource::Redis(registration),
            })
        })
    }
}

impl LockKindStore for RedisStore {
    fn semaphore(
        &self,
        keys: &SemaphoreKeys,
        call: SemaphoreCall<'_>,
    ) -> impl Future<Output = Result<SemaphoreReply>> + Send {
        Box::pin(async move {
            Ok(match call {
                SemaphoreCall::Acquire { id, limit, ttl_us } => {
                    SemaphoreReply::Acquired(self.semaphore_acquire(keys, id, limit, ttl_us).await?)
                }
                SemaphoreCall::Release { id } => {
                    SemaphoreReply::Done(self.semaphore_release(keys, id).await?)
                }
                SemaphoreCall::Extend { id, ttl_us } => {
                    SemaphoreReply::Done(self.semaphore_extend(keys, id, ttl_us).await?)
                }
                SemaphoreCall::State => {
                    let (in_use, next_free_us) = self.semaphore_state(keys).await?;
                    SemaphoreReply::State { in_use, next_free_us }
                }
            })
        })
    }

    fn fair_lock(
        &self,
        keys: &FairLockKeys,
        call: FairCall<'_>,
        now: Option<u64>,
    ) -> impl Future<Output = Result<FairReply>> + Send {
        Box::pin(RedisStore::fair_lock(self, keys, call, now))
    }

    fn rw_lock(
        &self,
        keys: &RwLockKeys,
        call: RwCall<'_>,
        now: Option<u64>,
    ) -> impl Future<Output = Result<RwReply>> + Send {
        Box::pin(RedisStore::rw_lock(self, keys, call, now))
    }
}

impl LeaseCalls for RedisStore {
    /// Runs `lock_acquire.lua` (server time for the fencing token).
    async fn lock_acquire(
        &self,
        keys: &LockKeys,
        owner: &str,
        ttl_us: u64,
        reentrant: bool,
    ) -> Result<Acquired> {
        let mut cmd = script_call(&LOCK_ACQUIRE, &[&keys.lease, &keys.fence]);
        cmd.arg(owner)
            .arg(ttl_us)
            .arg(if reentrant { "1" } else { "0" })
            .arg("");
        let reply = integers(self.eval(&LOCK_ACQUIRE, cmd).await?, 3)?;
        Ok(match reply[0] {
            1 => Acquired::Granted {
                fence: reply[1] as u64,
                holds: reply[2] as u64,
            },
            _ => Acquired::Busy {
                remaining_us: reply[1].max(0) as u64,
            },
        })
    }

    /// Runs `lock_release.lua`.
    async fn lock_release(&self, keys: &LockKeys, owner: &str, fence: u64) -> Result<Released> {
        let mut cmd = script_call(&LOCK_RELEASE, &[&keys.lease]);
        cmd.arg(owner).arg(&keys.channel).arg(fence);
        let reply = integers(self.eval(&LOCK_RELEASE, cmd).await?, 2)?;
        Ok(match reply[0] {
            1 => Released::Released,
            2 => Released::StillHeld {
                holds: reply[1] as u64,
            },
            -1 => Released::HeldByOther,
            _ => Released::NotHeld,
        })
    }

    /// Runs `lock_extend.lua`.
    async fn lock_extend(&self, keys: &LockKeys, owner: &str, fence: u64, ttl_us: u64) -> Result<Extended> {
        let mut cmd = script_call(&LOCK_EXTEND, &[&keys.lease]);
        cmd.arg(owner).arg(ttl_us).arg(fence);
        Ok(match self.eval(&LOCK_EXTEND, cmd).await? {
            Value::Int(1) => Extended::Extended,
            Value::Int(-1) => Extended::HeldByOther,
            Value::Int(0) => Extended::Expired,
            other => {
                return Err(Error::Protocol(format!(
                    "unexpected reply from lock_extend.lua: {}",
                    excerpt(&other)
                )))
            }
        })
    }

    /// Runs `lock_state.lua`.
    async fn lock_state(&self, keys: &LockKeys) -> Result<LockState> {
        let cmd = script_call(&LOCK_STATE, &[&keys.lease, &keys.fence]);
        let reply = integers(self.eval(&LOCK_STATE, cmd).await?, 4)?;
        Ok(LockState {
            held: reply[0] == 1,
            remaining_us: reply[1].max(0) as u64,
            holder_fence: reply[2].max(0) as u64,
            last_fence: reply[3].max(0) as u64,
        })
    }

    /// Runs `lock_force_release.lua`.
    async fn lock_force_release(&self, keys: &LockKeys) -> Result<bool> {
        let mut cmd = script_call(&LOCK_FORCE_RELEASE, &[&keys.lease]);
        cmd.arg(&keys.channel);
        Ok(matches!(
            self.eval(&LOCK_FORCE_RELEASE, cmd).await?,
            Value::Int(1)
        ))
    }
}

impl RedisStore {
    /// Runs `semaphore_acquire.lua` (server time).
    pub(super) async fn semaphore_acquire(
        &self,
        keys: &SemaphoreKeys,
        id: &str,
        limit: u64,
        ttl_us: u64,
    ) -> Result<PermitAcquired> {
        let mut cmd = script_call(&SEMAPHORE_ACQUIRE, &[&keys.permits]);
        cmd.arg(id).arg(limit).arg(ttl_us).arg("");
        let reply = integers(self.eval(&SEMAPHORE_ACQUIRE, cmd).await?, 2)?;
        Ok(match reply[0] {
            1 => PermitAcquired::Granted {
                in_use: reply[1] as u64,
            },
            _ => PermitAcquired::Full {
                next_free_us: reply[1].max(0) as u64,
            },
        })
    }

    /// Runs `semaphore_release.lua`.
    pub(super) async fn semaphore_release(&self, keys: &SemaphoreKeys, id: &str) -> Result<bool> {
        let mut cmd = script_call(&SEMAPHORE_RELEASE, &[&keys.permits]);
        cmd.arg(id).arg(&keys.channel).arg("");
        Ok(matches!(self.eval(&SEMAPHORE_RELEASE, cmd).await?, Value::Int(1)))
    }

    /// Runs `semaphore_extend.lua`.
    pub(super) async fn semaphore_extend(&self, keys: &SemaphoreKeys, id: &str, ttl_us: u64) -> Result<bool> {
        let mut cmd = script_call(&SEMAPHORE_EXTEND, &[&keys.permits]);
        cmd.arg(id).arg(ttl_us).arg("");
        Ok(matches!(self.eval(&SEMAPHORE_EXTEND, cmd).await?, Value::Int(1)))
    }

    /// Runs `semaphore_state.lua`.
    pub(super) async fn semaphore_state(&self, keys: &SemaphoreKeys) -> Result<(u64, u64)> {
        let mut cmd = script_call(&SEMAPHORE_STATE, &[&keys.permits]);
        cmd.arg("");
        let reply = integers(self.eval(&SEMAPHORE_STATE, cmd).await?, 2)?;
        Ok((reply[0].max(0) as u64, reply[1].max(0) as u64))
    }

    /// Runs one fair-lock operation at `now` (µs; the server clock when `None`).
    async fn fair_lock(
        &self,
        keys: &FairLockKeys,
        call: FairCall<'_>,
        now: Option<u64>,
    ) -> Result<FairReply> {
        // All but an acquire runs on a full server too (FAIR_LOCK_FREEING), as on the module.
        let script: &LuaScript = match call {
            FairCall::Acquire { .. } => &FAIR_LOCK,
            _ => &FAIR_LOCK_FREEING,
        };
        let mut cmd = script_call(script, &[&keys.holder, &keys.queue, &keys.places, &keys.fence]);
        let (op, id, fence, ttl_us, waiter_ttl_us) = match call {
            FairCall::Acquire {
                id,
                ttl_us,
                waiter_ttl_us,
                queue,
            } => (
                if queue { "acquire" } else { "try" },
                id,
                0,
                ttl_us,
                waiter_ttl_us,
            ),
            FairCall::Release { id, fence } => ("release", id, fence, 0, 0),
            FairCall::Extend { id, fence, ttl_us } => ("extend", id, fence, ttl_us, 0),
            FairCall::Withdraw { id } => ("withdraw", id, 0, 0, 0),
            FairCall::State => ("state", "", 0, 0, 0),
        };
        cmd.arg(op)
            .arg(now.map(|n| n.to_string()).unwrap_or_default())
            .arg(id)
            .arg(fence)
            .arg(ttl_us)
            .arg(waiter_ttl_us)
            .arg(&keys.wake_prefix);
        let count = if op == "state" { 4 } else { 3 };
        let reply = integers(self.eval(script, cmd).await?, count)?;
        let n = |i: usize| reply[i].max(0) as u64;
        Ok(match call {
            FairCall::Acquire { .. } if reply[0] == 1 => FairReply::Granted { fence: n(1) },
            FairCall::Acquire { .. } => FairReply::Busy {
                retry_us: n(1),
                position: n(2),
            },
            FairCall::State => FairReply::State {
                remaining_us: n(0),
                holder_fence: n(1),
                last_fence: n(2),
                waiting: n(3),
            },
            _ => FairReply::Done(reply[0] == 1),
        })
    }

    /// Runs one read-write-lock operation at `now` (µs; the server clock when `None`).
    async fn rw_lock(&self, keys: &RwLockKeys, call: RwCall<'_>, now: Option<u64>) -> Result<RwReply> {
        // All but an acquire runs on a full server too (RW_LOCK_FREEING), as on the module.
        let script: &LuaScript = match call {
            RwCall::Acquire { .. } => &RW_LOCK,
            _ => &RW_LOCK_FREEING,
        };
        let mut cmd = script_call(script, &[&keys.readers, &keys.writer, &keys.waiting, &keys.fence]);
        let mode_code = |mode: RwMode| if mode == RwMode::Read { "r" } else { "w" };
        let flag = |on: bool| if on { "1" } else { "0" };
        let (op, id, mode, fence, ttl_us) = match call {
            RwCall::Acquire { id, mode, ttl_us, .. } => ("acquire", id, mode_code(mode), 0, ttl_us),
            RwCall::Release { id, mode, fence } => ("release", id, mode_code(mode), fence, 0),
            RwCall::Extend {
                id,
                mode,
                fence,
                ttl_us,
            } => ("extend", id, mode_code(mode), fence, ttl_us),
            RwCall::Withdraw { id } => ("withdraw", id, "w", 0, 0),
            RwCall::State => ("state", "", "r", 0, 0),
        };
        let (waiter_ttl_us, prefer_writers, queue) = match call {
            RwCall::Acquire {
                waiter_ttl_us,
                prefer_writers,
                queue,
                ..
            } => (waiter_ttl_us, prefer_writers, queue),
            _ => (0, false, false),
        };
        cmd.arg(op)
            .arg(now.map(|n| n.to_string()).unwrap_or_default())
            .arg(id)
            .arg(mode)
            .arg(fence)
            .arg(ttl_us)
            .arg(waiter_ttl_us)
            .arg(flag(prefer_writers))
            .arg(flag(queue))
            .arg(&keys.channel);
        let count = if op == "state" { 5 } else { 2 };
        let reply = integers(self.eval(script, cmd).await?, count)?;
        let n = |i: usize| reply[i].max(0) as u64;
        Ok(match call {
            RwCall::Acquire { .. } if reply[0] == 1 => RwReply::Granted { fence: n(1) },
            RwCall::Acquire { .. } => RwReply::Busy { retry_us: n(1) },
            RwCall::State => RwReply::State {
                readers: n(0),
                writer_fence: n(1),
                writer_remaining_us: n(2),
                waiting_writers: n(3),
                last_fence: n(4),
            },
            _ => RwReply::Done(reply[0] == 1),
        })
    }
}
