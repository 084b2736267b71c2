//! The five lock operations one Redis server (`RedisStore`, each a script) and a Redlock store (every
//! server at once, answered by the majority) both perform, and the one place a `LockCall` is turned
//! into the operation it names.

use crate::algorithm::lease::{Acquired, Extended, LockCall, LockReply, LockState, Released};
use crate::error::Result;
use crate::key::LockKeys;

/// A distributed lock's operations on Redis.
pub(crate) trait LeaseCalls {
    /// Takes (or re-enters) the lock for `owner`, minting a fencing token on the server's clock.
    async fn lock_acquire(
        &self,
        keys: &LockKeys,
        owner: &str,
        ttl_us: u64,
        reentrant: bool,
    ) -> Result<Acquired>;
    /// Gives back one hold of grant (`owner`, `fence`).
    async fn lock_release(&self, keys: &LockKeys, owner: &str, fence: u64) -> Result<Released>;
    /// Moves the end of grant (`owner`, `fence`)'s lease; never re-acquires.
    async fn lock_extend(&self, keys: &LockKeys, owner: &str, fence: u64, ttl_us: u64) -> Result<Extended>;
    /// Reads the lock.
    async fn lock_state(&self, keys: &LockKeys) -> Result<LockState>;
    /// Deletes the lease whoever holds it; true if it was held.
    async fn lock_force_release(&self, keys: &LockKeys) -> Result<bool>;

    /// The operation `call` names, its answer in the matching reply.
    async fn answer(&self, keys: &LockKeys, call: LockCall<'_>) -> Result<LockReply> {
        Ok(match call {
            LockCall::Acquire {
                owner,
                ttl_us,
                reentrant,
            } => LockReply::Acquired(self.lock_acquire(keys, owner, ttl_us, reentrant).await?),
            LockCall::Release { owner, fence } => {
                LockReply::Released(self.lock_release(keys, owner, fence).await?)
            }
            LockCall::Extend { owner, fence, ttl_us } => {
                LockReply::Extended(self.lock_extend(keys, owner, fence, ttl_us).await?)
            }
            LockCall::State => LockReply::State(self.lock_state(keys).await?),
            LockCall::ForceRelease => LockReply::ForceReleased(self.lock_force_release(keys).await?),
        })
    }
}
