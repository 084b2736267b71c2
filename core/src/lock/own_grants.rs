//! What a `DistributedLock` handle knows of its own grants in this process: the fencing tokens its
//! live guards hold and the tries still waiting for an answer. An acquire the store did not answer (a
//! timeout, a connection lost after the write) may still have been granted; that grant has no guard,
//! and the handle's own next try sees its owner token and waits on it until the lease ends. With this
//! book, the handle can tell such an orphan from a hold of its own and give it back
//! ([`give_back_orphan`]).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use smallvec::SmallVec;
use tokio::time::Instant;

use super::shared::DistributedShared;
use crate::algorithm::lease::{LockCall, LockReply, Released};
use crate::error::Result;
use crate::store::outage_retry::while_outage;

/// The pause before another look when one could not be trusted (a try was in flight) or gave back one
/// hold of a re-entered orphan.
const LOOK_AGAIN_AFTER: Duration = Duration::from_millis(50);

/// The book of one handle (shared by its clones), kept per process: a child after a fork has another
/// owner token, and none of its parent's guards or tries.
#[derive(Debug, Default)]
pub(crate) struct OwnGrants {
    book: Mutex<Book>,
}

#[derive(Debug, Default)]
struct Book {
    /// The process generation the book was kept in.
    generation: u64,
    /// Fencing tokens of live guards (a re-entered grant's token appears once per guard).
    live: SmallVec<[u64; 2]>,
    /// Tries sent and not yet answered.
    in_flight: u64,
    /// Tries ever begun: a look at the lock is trusted only if none began while it was made.
    begun: u64,
    /// Unanswered tries that may have been granted, and whether a give-back task is on them.
    suspected: u64,
    giving_back: bool,
}

/// A try in flight until dropped.
pub(crate) struct InFlight(Arc<DistributedShared>);

/// A live guard's fencing token, in the book until the last clone of its lease is dropped.
pub(crate) struct LiveGrant {
    shared: Arc<DistributedShared>,
    fence: u64,
}

impl OwnGrants {
    fn book(&self) -> parking_lot::MutexGuard<'_, Book> {
        let mut book = self.book.lock();
        let generation = crate::process::generation();
        if book.generation != generation {
            *book = Book {
                generation,
                ..Book::default()
            };
        }
        book
    }

    /// Whether a live guard of this handle holds grant `fence`.
    fn is_live(&self, fence: u64) -> bool {
        self.book().live.contains(&fence)
    }

    /// The count of tries begun, when none is in flight (a look at the lock can then be trusted).
    fn quiet(&self) -> Option<u64> {
        let book = self.book();
        (book.in_flight == 0).then_some(book.begun)
    }

    /// Whether no try began since [`quiet`](Self::quiet) answered `mark`, and none is in flight.
    fn still_quiet(&self, mark: u64) -> bool {
        let book = self.book();
        book.in_flight == 0 && book.begun == mark
    }
}

/// Marks a try of `shared`'s handle in flight until the returned value is dropped.
pub(crate) fn begin_try(shared: &Arc<DistributedShared>) -> InFlight {
    let mut book = shared.own.book();
    book.in_flight += 1;
    book.begun += 1;
    drop(book);
    InFlight(shared.clone())
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut book = self.0.own.book();
        book.in_flight = book.in_flight.saturating_sub(1);
    }
}

/// Enters grant `fence` in the book of `shared`'s handle, for the guard made over it.
pub(crate) fn live_grant(shared: &Arc<DistributedShared>, fence: u64) -> Arc<LiveGrant> {
    shared.own.book().live.push(fence);
    Arc::new(LiveGrant {
        shared: shared.clone(),
        fence,
    })
}

impl Drop for LiveGrant {
    fn drop(&mut self) {
        let mut book = self.shared.own.book();
        if let Some(at) = book.live.iter().position(|fence| *fence == self.fence) {
            book.live.swap_remove(at);
        }
    }
}

/// After a try of `shared`'s handle failed in a way that [`may_have_run`], gives back a grant to this
/// process's `owner` that no live guard holds, in a task of the current runtime (none: nothing runs,
/// and the orphan lapses with its lease). The task looks at the lock only while no try of the handle is
/// in flight, so a grant on its way to a guard is never taken for an orphan, and it gives back only
/// the grant it saw (`owner` and fencing token), so a later grant is never touched. A store that does
/// not answer is asked again (`while_outage`) for at most one lease length, after which any orphan
/// has lapsed. One task per handle at a time; a failure while it runs makes it look again.
///
/// A re-entrant hold that a live guard holds is left alone: whether the lost try re-entered it cannot
/// be told, so such a hold may stay taken until its lease runs out after the last guard's release.
pub(crate) fn give_back_orphan(shared: &Arc<DistributedShared>, owner: Arc<str>) {
    {
        let mut book = shared.own.book();
        book.suspected += 1;
        if book.giving_back {
            return;
        }
        book.giving_back = true;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        shared.own.book().giving_back = false;
        return;
    };
    let shared = shared.clone();
    runtime.spawn(async move {
        let until = Instant::now() + shared.options.ttl;
        loop {
            let seen = shared.own.book().suspected;
            // Nobody is left to tell of a failure: past an outage as long as the lease, or one no
            // retry mends, the orphan (if any) lapses with its lease.
            let done = while_outage(until, || look_once(&shared, &owner))
                .await
                .unwrap_or(true);
            let over = Instant::now() + LOOK_AGAIN_AFTER >= until;
            {
                let mut book = shared.own.book();
                if over || (done && book.suspected == seen) {
                    book.giving_back = false;
                    return;
                }
            }
            if !done {
                tokio::time::sleep(LOOK_AGAIN_AFTER).await;
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
