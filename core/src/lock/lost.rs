//! The lost-lock signal: set once, by the watchdog, when a lease is found gone or taken by another, or
//! when a renewal fails in a way no retry mends; and true from the lease's end on, compared with the
//! clock when asked rather than waiting for a timer. It says why ([`LostReason`]).

use std::sync::Arc;

use tokio::sync::watch;

use super::lease_end::LeaseEnd;
pub use crate::algorithm::lease::LostReason;

/// The sending half, kept by the hold and its watchdog: the first reason sent stays.
pub(crate) type LostSender = watch::Sender<Option<LostReason>>;

/// Marks the hold lost for `reason`, unless it already is (the first reason is the one reported);
/// whether this call marked it.
pub(crate) fn mark_lost(sender: &LostSender, reason: LostReason) -> bool {
    sender.send_if_modified(|current| {
        if current.is_some() {
            return false;
        }
        *current = Some(reason);
        true
    })
}

/// Tells a holder that its lock was lost. Cheap to clone; hand it to the tasks doing the protected work.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// # let store = ratelock::Store::connect("memory://", &Default::default()).await?;
/// let lock = ratelock::DistributedLock::new(&store, "job", Default::default())?;
/// let guard = lock.try_acquire().await?.unwrap();
/// let lost = guard.lost_signal();
/// lock.force_release().await?;            // someone deletes the lock under us
/// guard.extend(std::time::Duration::from_secs(5)).await?; // the next renewal finds it gone
/// lost.wait().await;                       // resolves at once
/// assert!(lost.is_lost());
/// assert_eq!(lost.reason(), Some(ratelock::LostReason::Taken));
/// # Ok::<(), ratelock::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct LostSignal {
    receiver: watch::Receiver<Option<LostReason>>,
    lease_end: Arc<LeaseEnd>,
}

impl LostSignal {
    pub(crate) fn new(lease_end: Arc<LeaseEnd>) -> (LostSender, LostSignal) {
        let (sender, receiver) = watch::channel(None);
        (sender, LostSignal { receiver, lease_end })
    }

    /// True once the lock has been lost: a renewal found it gone or taken, or failed for good, or its
    /// lease's end (as this process sees it) has passed without a renewal, checked against the clock
    /// at this call.
    pub fn is_lost(&self) -> bool {
        self.receiver.borrow().is_some() || self.lease_end.passed()
    }

    /// Why the lock was lost, or `None` while it is not (see [`is_lost`](Self::is_lost)).
    pub fn reason(&self) -> Option<LostReason> {
        let sent = self.receiver.borrow().clone();
        sent.or_else(|| self.lease_end.passed().then_some(LostReason::Expired))
    }

    /// Resolves when the lock is lost (at once if it already is). Never resolves for a lock that is
    /// released normally.
    pub async fn wait(&self) {
        let mut receiver = self.receiver.clone();
        if receiver.wait_for(Option::is_some).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{DistributedLock, LockOptions, Store};

    fn lock_options() -> LockOptions {
        LockOptions {
            ttl: Duration::from_millis(40),
            auto_renew: false,
            ..Default::default()
        }
    }

    /// Runs `test` on a runtime with one thread (the test's own), so blocking it stops the watchdog.
    fn on_one_thread(test: impl std::future::Future<Output = ()>) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(test);
    }

    /// One runtime thread, blocked past the lease's end: its watchdog cannot wake, yet the hold is lost.
    #[test]
    fn a_hold_past_its_lease_end_is_lost_before_the_watchdog_wakes() {
        on_one_thread(async {
            let store = Store::connect("memory://", &Default::default()).await.unwrap();
            let lock = DistributedLock::new(&store, "lost-by-the-clock", lock_options()).unwrap();
            let guard = lock.try_acquire().await.unwrap().unwrap();
            let lost = guard.lost_signal();
            assert!(!guard.is_lost());
            std::thread::sleep(Duration::from_millis(60));
            assert!(guard.is_lost());
            assert!(lost.is_lost());
        });
    }

    #[test]
    fn a_hold_given_back_is_never_lost_by_its_lease_end() {
        on_one_thread(async {
            let store = Store::connect("memory://", &Default::default()).await.unwrap();
            let lock = DistributedLock::new(&store, "given-back", lock_options()).unwrap();
            let guard = lock.try_acquire().await.unwrap().unwrap();
            let lost = guard.lost_signal();
            guard.release().await.unwrap();
            tokio::time::sleep(Duration::from_millis(60)).await;
            assert!(!lost.is_lost());
        });
    }
}
