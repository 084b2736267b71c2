//! The lost-lock signal: set once, by the watchdog, when a lease is found gone or taken by another, or
//! when a renewal fails in a way no retry mends; and true from the lease's end on, compared with the
//! clock when asked rather than waiting for a timer. Its waiters watch the lease's end themselves, so a
//! hold with no watchdog (no renewal and no hooks to tell) is still signalled lost when its lease runs
//! out. It says why ([`LostReason`]).

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
        let mut sender_alive = true;
        loop {
            // Listening before looking: a change made after the look still wakes this waiter.
            let changed = self.lease_end.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if receiver.borrow_and_update().is_some() || self.lease_end.passed() {
                return;
            }
            // A hold given back can only be marked lost by its release's answer, not by its end.
            let end = (!self.lease_end.is_given_back()).then(|| self.lease_end.get());
            let until_end = async move {
                match end {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                sent = receiver.changed(), if sender_alive => sender_alive = sent.is_ok(),
                () = until_end => {}
                () = &mut changed => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::LostSignal;
    use crate::{DistributedLock, LockGuard, LockOptions, Store};

    fn lock_options() -> LockOptions {
        LockOptions {
            ttl: Duration::from_millis(40),
            auto_renew: false,
            ..Default::default()
        }
    }

    /// A hold of the lock `name` on `store`, made with `options`.
    async fn held(store: &Store, name: &str, options: LockOptions) -> LockGuard {
        let lock = DistributedLock::new(store, name, options).unwrap();
        lock.try_acquire().await.unwrap().unwrap()
    }

    /// A task waiting on `lost`.
    fn waiting_on(lost: &LostSignal) -> tokio::task::JoinHandle<()> {
        let lost = lost.clone();
        tokio::spawn(async move { lost.wait().await })
    }

    async fn memory() -> Store {
        Store::connect("memory://", &Default::default()).await.unwrap()
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
            let guard = held(&memory().await, "lost-by-the-clock", lock_options()).await;
            let lost = guard.lost_signal();
            assert!(!guard.is_lost());
            std::thread::sleep(Duration::from_millis(60));
            assert!(guard.is_lost());
            assert!(lost.is_lost());
        });
    }

    /// No renewal and no hooks: the hold books no watchdog and starts no task, yet its lost signal's
    /// waiter hears the lease's end. Holds that renew book their watchdogs with the runtime's starter,
    /// whose task is the only one until their first renewals.
    #[test]
    fn a_hold_that_is_not_renewed_runs_no_task_and_its_waiter_still_hears_the_lease_end() {
        on_one_thread(async {
            let runtime = tokio::runtime::Handle::current();
            let store = memory().await;
            let guard = held(&store, "no-watchdog", lock_options()).await;
            assert_eq!(runtime.metrics().num_alive_tasks(), 0);
            let waited = tokio::time::timeout(Duration::from_secs(2), guard.lost_signal().wait()).await;
            assert!(waited.is_ok(), "the waiter did not hear the lease's end");
            assert_eq!(guard.lost_reason(), Some(crate::LostReason::Expired));

            let renewed = LockOptions {
                auto_renew: true,
                ..lock_options()
            };
            let mut holds = Vec::new();
            for name in ["renewed-1", "renewed-2", "renewed-3"] {
                holds.push(held(&store, name, renewed.clone()).await);
            }
            // Three holds before their first renewal: no watchdog task yet, only the starter's.
            assert_eq!(runtime.metrics().num_alive_tasks(), 1);
        });
    }

    /// A waiter that started before an extension follows the lease's new end.
    #[test]
    fn a_waiter_follows_an_extension() {
        on_one_thread(async {
            let guard = held(&memory().await, "extended", lock_options()).await;
            let waiter = waiting_on(&guard.lost_signal());
            tokio::time::sleep(Duration::from_millis(10)).await;
            guard.extend(Duration::from_millis(200)).await.unwrap();
            tokio::time::sleep(Duration::from_millis(80)).await;
            assert!(!waiter.is_finished(), "the waiter took the old lease end");
            assert!(!guard.is_lost());
            tokio::time::timeout(Duration::from_secs(2), waiter)
                .await
                .unwrap()
                .unwrap();
            assert!(guard.is_lost());
        });
    }

    /// A guard dropped while held is given back in the background: its waiters are not told "lost"
    /// when its lease would have ended.
    #[test]
    fn a_dropped_guard_is_never_lost_by_its_lease_end() {
        on_one_thread(async {
            let guard = held(&memory().await, "dropped", lock_options()).await;
            let lost = guard.lost_signal();
            let waiter = waiting_on(&lost);
            drop(guard);
            tokio::time::sleep(Duration::from_millis(60)).await;
            assert!(!lost.is_lost());
            assert!(
                !waiter.is_finished(),
                "a waiter heard a lease end after the guard was dropped"
            );
        });
    }

    #[test]
    fn a_hold_given_back_is_never_lost_by_its_lease_end() {
        on_one_thread(async {
            let guard = held(&memory().await, "given-back", lock_options()).await;
            let lost = guard.lost_signal();
            let waiter = waiting_on(&lost);
            guard.release().await.unwrap();
            tokio::time::sleep(Duration::from_millis(60)).await;
            assert!(!lost.is_lost());
            assert!(
                !waiter.is_finished(),
                "a waiter heard a lease end after the release"
            );
        });
    }
}
