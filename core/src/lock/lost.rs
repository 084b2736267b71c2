//! The lost-lock signal: set once, by the watchdog, when a lease is found gone or taken by another.

use tokio::sync::watch;

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
/// # Ok::<(), ratelock::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct LostSignal {
    receiver: watch::Receiver<bool>,
}

impl LostSignal {
    pub(crate) fn new() -> (watch::Sender<bool>, LostSignal) {
        let (sender, receiver) = watch::channel(false);
        (sender, LostSignal { receiver })
    }

    /// True once the lock has been lost.
    pub fn is_lost(&self) -> bool {
        *self.receiver.borrow()
    }

    /// Resolves when the lock is lost (at once if it already is). Never resolves for a lock that is
    /// released normally.
    pub async fn wait(&self) {
        let mut receiver = self.receiver.clone();
        if receiver.wait_for(|lost| *lost).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
