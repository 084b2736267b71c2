//! Giving back a `DistributedLock` grant nobody heard of (an orphan): after a try of the handle failed
//! in a way that may have run on the server, a task looks at the lock, while no try of the handle is in
//! flight, and releases a grant to the handle's owner token that none of its live guards holds
//! (`own_grants.rs` keeps the book it reads).

use std::sync::Arc;
use std::time::Duration;

use super::own_grants::Next;
use super::shared::DistributedShared;
use crate::algorithm::lease::{LockCall, LockReply, Released};
use crate::error::Result;
use crate::store::outage_retry::while_outage;

/// The pause before another look when one could not be trusted (a try was in flight) or gave back one
/// hold of a re-entered orphan.
const LOOK_AGAIN_AFTER: Duration = Duration::from_millis(50);

/// Gives back, in a task of the current runtime, a grant to this process's `owner` that no live guard
/// of `shared`'s handle holds (none: nothing runs, and the orphan lapses with its lease). The task
/// looks only while no try of the handle is in flight, so a grant on its way to a guard is never taken
/// for an orphan, and it releases the fencing token it saw with `owner`, so a later grant, or another
/// owner's, is never touched. A store that does not answer is asked again (`while_outage`) until the
/// lease of the latest suspect try has run out. One task per handle at a time; a try suspected while
/// it runs makes it look again.
///
/// Not on Redlock: there each server mints its own token, and the Redlock store gives back what a
/// server granted unheard itself (a lock-wide look names one server's token, which is no grant).
///
/// A re-entrant hold that a live guard holds is left alone: whether the lost try re-entered it cannot
/// be told, so such a hold may stay taken until its lease runs out after the last guard's release.
pub(crate) fn give_back_orphan(shared: &Arc<DistributedShared>, owner: Arc<str>) {
    #[cfg(feature = "redis")]
    if matches!(shared.store, crate::store::AnyLockStore::Redlock(_)) {
        return;
    }
    if !shared.own.suspect(shared.options.ttl) {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        shared.own.not_giving_back();
        return;
    };
    let shared = shared.clone();
    runtime.spawn(async move {
        loop {
            let (seen, until) = shared.own.suspects();
            // Nobody is left to tell of a failure: past an outage as long as the lease, or one no
            // retry mends, the orphan (if any) lapses with its lease.
            let settled = while_outage(until, || look_once(&shared, &owner))
                .await
                .unwrap_or(true);
            match shared.own.after_look(seen, settled, LOOK_AGAIN_AFTER) {
                Next::Done => return,
                Next::LookAgain if settled => {}
                Next::LookAgain => tokio::time::sleep(LOOK_AGAIN_AFTER).await,
            }
        }
    });
}

/// One look at the lock: `Ok(true)` when nothing of `owner`'s is left without a guard, `Ok(false)`
/// when it must look again (a try was in flight, or one hold of a re-entered orphan was given back).
async fn look_once(shared: &Arc<DistributedShared>, owner: &str) -> Result<bool> {
    let Some(mark) = shared.own.quiet() else {
        return Ok(false);
    };
    let state = shared.state().await?;
    if !state.held || shared.own.is_live(state.holder_fence) {
        return Ok(true);
    }
    if !shared.own.still_quiet(mark) {
        return Ok(false);
    }
    // Another owner's grant answers HeldByOther and stays as it is.
    let release = LockCall::Release {
        owner,
        fence: state.holder_fence,
    };
    Ok(!matches!(
        reply_as!(shared.call(release).await?, LockReply::Released)?,
        Released::StillHeld { .. }
    ))
}
