//! Redlock: what a server granted that nobody heard of. A server whose answer to an acquire never came
//! may have granted it all the same, with a token of its own; that grant is asked about and given
//! back in the background, unless it is the server's part of a grant the owner holds. The tries in
//! flight per (lock, owner) are counted here, so a grant on its way to its caller is never taken for
//! an unheard one.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::RedisStore;
use crate::key::LockKeys;
use crate::store::outage_retry::while_outage;

/// A lock's lease key and an owner token: whose tries and grants these are.
pub(super) type GrantKey = (Vec<u8>, String);

/// The pause before another look when a try of the same owner was in flight.
const LOOK_AGAIN_AFTER: Duration = Duration::from_millis(50);

/// Acquires in flight, per lock and owner (an entry only while one is).
#[derive(Default)]
pub(super) struct Tries {
    in_flight: Mutex<HashMap<GrantKey, u64>>,
}

/// One acquire in flight until dropped.
pub(super) struct TryInFlight {
    tries: Arc<Tries>,
    key: GrantKey,
}

impl Tries {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<GrantKey, u64>> {
        self.in_flight
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts an acquire of `key` in flight until the returned value is dropped.
    pub(super) fn begin(self: &Arc<Self>, key: GrantKey) -> TryInFlight {
        *self.lock().entry(key.clone()).or_insert(0) += 1;
        TryInFlight {
            tries: self.clone(),
            key,
        }
    }

    /// Whether no acquire of `key` is in flight.
    fn quiet(&self, key: &GrantKey) -> bool {
        !self.lock().contains_key(key)
    }
}

impl Drop for TryInFlight {
    fn drop(&mut self) {
        let mut in_flight = self.tries.lock();
        if let Some(count) = in_flight.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                in_flight.remove(&self.key);
            }
        }
    }
}

/// Gives back, in a task of the current runtime, a grant to `owner` on `node` that no answer told of,
/// until `until` (its lease's end). The server is asked what it holds, then to release that token of
/// `owner` only, so another owner's hold, or a later grant, is never touched. It looks only while no
/// acquire of the same lock and owner is in flight, and reads `held_here` (the server's token of the
/// grant the owner holds, if any) after making sure of that, so a grant that was on its way to its
/// caller during the look has been recorded by then and is kept.
pub(super) fn give_back_unheard<H>(
    node: RedisStore,
    tries: Arc<Tries>,
    keys: LockKeys,
    owner: String,
    until: Instant,
    held_here: H,
) where
    H: Fn() -> Option<u64> + Send + Sync + 'static,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let key: GrantKey = (keys.lease.clone(), owner.clone());
    runtime.spawn(async move {
        let look = || look_once(&node, &tries, &key, &keys, &owner, &held_here);
        loop {
            // Nobody awaits this: a refusal, like a last outage, leaves the grant to its lease.
            match while_outage(until, look).await {
                Ok(false) if Instant::now() + LOOK_AGAIN_AFTER < until => {
                    tokio::time::sleep(LOOK_AGAIN_AFTER).await
                }
                _ => return,
            }
        }
    });
}

/// One look: `Ok(true)` when done, `Ok(false)` when an acquire of the same owner was in flight.
fn look_once<'a, H: Fn() -> Option<u64>>(
    node: &'a RedisStore,
    tries: &'a Tries,
    key: &'a GrantKey,
    keys: &'a LockKeys,
    owner: &'a str,
    held_here: &'a H,
) -> impl Future<Output = crate::error::Result<bool>> + 'a {
    use super::lease_calls::LeaseCalls;
    async move {
        if !tries.quiet(key) {
            return Ok(false);
        }
        let state = node.lock_state(keys).await?;
        if !state.held {
            return Ok(true);
        }
        if !tries.quiet(key) {
            return Ok(false);
        }
        if held_here() == Some(state.holder_fence) {
            return Ok(true);
        }
        node.lock_release(keys, owner, state.holder_fence).await?;
        Ok(true)
    }
}
