//! The Redis store's fair and read-write locks: each operation of `algorithm::fair` and
//! `algorithm::rwlock` as one call of `fair_lock.lua` or `rw_lock.lua`, replies read back into the
//! same reply types the memory store gives.

use super::commands::script_call;
use super::reply::integers;
use super::script::{FAIR_LOCK, RW_LOCK};
use super::RedisStore;
use crate::algorithm::fair::{FairCall, FairReply};
use crate::algorithm::rwlock::{RwCall, RwMode, RwReply};
use crate::error::Result;
use crate::key::{FairLockKeys, RwLockKeys};

impl RedisStore {
    /// Runs one fair-lock operation at `now` (µs; the server clock when `None`).
    pub async fn fair_lock(
        &self,
        keys: &FairLockKeys,
        call: FairCall<'_>,
        now: Option<u64>,
    ) -> Result<FairReply> {
        let mut cmd = script_call(
            &FAIR_LOCK,
            &[&keys.holder, &keys.queue, &keys.places, &keys.fence],
        );
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
        let reply = integers(self.eval(&FAIR_LOCK, cmd).await?, count)?;
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
    pub async fn rw_lock(&self, keys: &RwLockKeys, call: RwCall<'_>, now: Option<u64>) -> Result<RwReply> {
        let mut cmd = script_call(
            &RW_LOCK,
            &[&keys.readers, &keys.writer, &keys.waiting, &keys.fence],
        );
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
        let reply = integers(self.eval(&RW_LOCK, cmd).await?, count)?;
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
