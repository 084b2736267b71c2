//! `Guard`: the one guard over a held lease of any lock kind (a lock grant, a semaphore permit, a fair
//! or read-write hold), with the lost signal, manual extension and release. Dropping a held guard stops
//! its watchdog and gives the lease back in the background. What differs between kinds (which call
//! extends or releases, what the answers are) is the [`Lease`] the guard holds.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::hold_events::HoldEvents;
use super::lost::LostSignal;
use super::options::{check_lease, LockOptions};
use super::upkeep::Upkeep;
use crate::algorithm::lease::{Extended, Released};
use crate::error::Result;

mod sealed {
    pub trait Sealed {}
}

/// A held lease of one lock kind, as a [`Guard`] drives it. Implemented by ratelock's lock kinds only.
/// Every kind answers the same typed outcomes: [`Extended`] and [`Released`].
pub trait Lease: sealed::Sealed + Clone + Send + Sync + 'static {
    #[doc(hidden)]
    fn options(&self) -> &LockOptions;
    /// What the hold is, in messages: `"lock"`, `"permit"`, `"fair lock"`, `"read hold"`...
    #[doc(hidden)]
    fn what(&self) -> &'static str;
    #[doc(hidden)]
    fn extend(&self, ttl: Duration) -> impl Future<Output = Result<Extended>> + Send;
    /// The answer to `extend` once the hold was signalled lost (no lease is extended then).
    #[doc(hidden)]
    fn extend_lost(&self) -> impl Future<Output = Result<Extended>> + Send {
        async { Ok(Extended::Expired) }
    }
    #[doc(hidden)]
    fn release(&self) -> impl Future<Output = Result<Released>> + Send;
    /// Gives the lease back without a runtime (possible on the memory store only).
    #[doc(hidden)]
    fn release_in_memory(&self);
    /// The grant's fencing token (`None` for a semaphore permit, which has none).
    #[doc(hidden)]
    fn fence(&self) -> Option<u64> {
        None
    }
    /// Whether a release sent twice gives back no more than one: true for every kind but a
    /// re-entrant lock, whose release takes one of several holds of the same owner and fence, so that
    /// a second one, after a first that timed out but ran, takes another's.
    #[doc(hidden)]
    fn release_is_idempotent(&self) -> bool {
        true
    }
    /// After a release whose earlier try failed on the way (it may have run) found the lease gone:
    /// whether that earlier try is what freed it. `false` where the kind cannot tell.
    #[doc(hidden)]
    fn freed_by_unheard_release(&self) -> impl Future<Output = Result<bool>> + Send {
        async { Ok(false) }
    }
    /// How much of a lease of a given length its store's clocks may have taken before this process
    /// counts it (Redlock's drift allowance; none for one server).
    #[doc(hidden)]
    fn clock_drift(&self) -> fn(Duration) -> Duration {
        |_| Duration::ZERO
    }
}

/// A held lease. Release it with [`release`](Self::release); dropping it releases in the background.
/// [`LockGuard`](crate::LockGuard), [`PermitGuard`](crate::PermitGuard) and
/// [`LeaseGuard`](crate::LeaseGuard) are this guard over each kind's lease.
#[must_use = "dropping the guard gives the lease back"]
pub struct Guard<L: Lease> {
    pub(crate) lease: L,
    upkeep: Upkeep,
    released: bool,
}

impl<L: Lease + std::fmt::Debug> std::fmt::Debug for Guard<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("lease", &self.lease)
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl<L: Lease> Guard<L> {
    /// A guard for a grant whose request was sent at `sent`; starts its watchdog.
    pub(crate) fn start(lease: L, sent: Instant) -> Self {
        let renewing = lease.clone();
        let renew: super::watchdog::Renew = Arc::new(move || {
            let lease = renewing.clone();
            Box::pin(async move {
                let ttl = lease.options().ttl;
                Ok(lease.extend(ttl).await? == Extended::Extended)
            })
        });
        let options = lease.options();
        let events = HoldEvents::new(&options.hooks, lease.what(), sent.into_std());
        events.acquired(lease.fence());
        let upkeep = Upkeep::start(
            sent,
            options.ttl,
            lease.clock_drift(),
            options.auto_renew,
            renew,
            events,
        );
        Guard {
            lease,
            upkeep,
            released: false,
        }
    }

    /// True in the process that took the lease; false in a forked child, for which it stays the
    /// parent's (the child can neither extend nor release it, and dropping it there does nothing).
    pub fn is_owned_here(&self) -> bool {
        self.upkeep.owned_here().is_ok()
    }

    /// True once the lease is known lost (a renewal found it gone or taken, or it ran out).
    pub fn is_lost(&self) -> bool {
        self.upkeep.lost().is_lost()
    }

    /// Resolves as soon as the lease is known lost.
    pub async fn lost(&self) {
        self.upkeep.lost().wait().await
    }

    /// Why the lease was lost, or `None` while it is not.
    pub fn lost_reason(&self) -> Option<super::lost::LostReason> {
        self.upkeep.lost().reason()
    }

    /// A clonable handle on the lost signal, for the tasks doing the protected work.
    pub fn lost_signal(&self) -> LostSignal {
        self.upkeep.lost().clone()
    }

    /// Moves the end of the lease to `ttl` from now. Never re-takes it: an answer other than extended
    /// means the lease is lost, and the lost signal fires. Once the lost signal has fired, nothing is
    /// extended any more, even if the server's lease has not quite ended.
    pub async fn extend(&self, ttl: Duration) -> Result<Extended> {
        check_lease(ttl)?;
        self.upkeep.owned_here()?;
        if self.is_lost() {
            return self.lease.extend_lost().await;
        }
        let sent = Instant::now();
        let answer = self.lease.extend(ttl).await?;
        let extended = answer == Extended::Extended;
        if extended && self.is_lost() {
            // The lost signal fired while the extension was on its way: the holder was told to stop,
            // so the lease it just extended is given back rather than left taken for a whole ttl. Not
            // a re-entrant lock's: its release takes one hold of several, and the guard's drop (or
            // release) gives this one back again; that lease is left to end.
            if self.lease.release_is_idempotent() {
                let _ = self.lease.release().await;
            }
            return self.lease.extend_lost().await;
        }
        self.upkeep.extended(extended, sent, ttl);
        Ok(answer)
    }

    /// Stops the watchdog, then gives the lease back; the answer says if it had been lost before.
    pub async fn release(mut self) -> Result<Released> {
        self.try_release().await
    }

    /// [`release`](Self::release) that keeps the guard when the release fails on the way (the store
    /// was unreachable or timed out): the lease is still this guard's and the caller can retry, but it
    /// is no longer renewed, so if nobody retries it runs out at its end (as with `auto_renew` off).
    /// After a successful release, further calls answer as not held. A re-entrant lock's release is
    /// tried once: one that failed on the way may have run, and sent again (by a retry or by the
    /// guard's drop) it would give back another hold of the same owner, freeing the lock under the
    /// outer guard; its hold ends with its lease instead, and further calls answer as not held.
    pub async fn try_release(&mut self) -> Result<Released> {
        let release = self.lease.release();
        let lease = &self.lease;
        let answer = self
            .upkeep
            .give_back(&mut self.released, release, || lease.freed_by_unheard_release())
            .await;
        if answer.is_err() && !self.lease.release_is_idempotent() {
            self.released = true;
        }
        answer
    }

    /// What this guard holds, for messages: `"lock"`, `"permit"`, `"fair lock"`, `"read hold"` or
    /// `"write hold"` (as in [`Released::or_lost`]).
    pub fn what(&self) -> &'static str {
        self.lease.what()
    }
}

impl<L: Lease> Drop for Guard<L> {
    fn drop(&mut self) {
        if self.released || self.upkeep.owned_here().is_err() {
            return;
        }
        let lease = self.lease.clone();
        let release = release_until(lease, self.upkeep.lease_end());
        if self.upkeep.release_in_background(release).is_err() {
            self.lease.release_in_memory();
        }
    }
}

/// A dropped guard's release, in the background: tried again while the store cannot be reached, until
/// the lease would have run out anyway (then nothing is left to give back); its last answer, which the
/// hold's hooks hear. A re-entrant lock's release is sent once: one that failed may have run, and sent
/// again it would give back another hold of the same owner (the outer guard's), freeing the lock
/// under it. Its hold then ends with its lease, as an undelivered release's does.
async fn release_until<L: Lease>(lease: L, end: Instant) -> Result<Released> {
    if !lease.release_is_idempotent() {
        return lease.release().await;
    }
    crate::store::outage_retry::while_outage(end, || lease.release()).await
}

pub(crate) use sealed::Sealed;
