//! Giving back, in the background, what a try whose answer never came may have been granted
//! ([`Error::may_have_run`](crate::Error)): a release nobody awaits, asked again through an outage until
//! the lease would have run out anyway, and the book of what a wait's tries left unheard.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::Result;
use crate::store::outage_retry::in_background_while_outage;

/// Runs `release` in a task of the current runtime, again while the store is out, for at most `lease`
/// (after which the grant has lapsed anyway).
pub(crate) fn release_in_background<F, Fut>(lease: Duration, release: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<()>> + Send,
{
    in_background_while_outage(Instant::now() + lease, release);
}

/// What the tries of one wait (or one lone try) left unheard: whether a try's answer was lost, and
/// whether the wait is still there to see to it. Within a wait every try asks for the same grant id,
/// so the wait sees to a lost answer itself (a semaphore's next try is granted the same permit again;
/// a fair lock or a writer keeps the grant before its next try, which would otherwise wait on its own
/// grant), and gives back what is left when it ends without a grant, or is dropped. A try whose
/// wait has gone gives back itself.
pub(crate) struct Unheard {
    /// (the wait is still there, a try's answer was lost)
    state: parking_lot::Mutex<(bool, bool)>,
}

impl Unheard {
    /// The book of a wait's tries.
    pub(crate) fn for_wait() -> std::sync::Arc<Self> {
        std::sync::Arc::new(Unheard {
            state: parking_lot::Mutex::new((true, false)),
        })
    }

    /// The book of a lone try, with no wait to see to it: one for every lone try, since nothing ever
    /// changes in it (no wait is there to mark), so a try allocates nothing for it.
    pub(crate) fn lone() -> std::sync::Arc<Self> {
        static LONE: std::sync::LazyLock<std::sync::Arc<Unheard>> = std::sync::LazyLock::new(|| {
            std::sync::Arc::new(Unheard {
                state: parking_lot::Mutex::new((false, false)),
            })
        });
        LONE.clone()
    }

    /// A try answered `answer`: true when its answer may have been lost after a grant
    /// ([`Error::may_have_run`](crate::Error)) and no wait is there, so the try must give back itself
    /// (a wait is told, and sees to it).
    pub(crate) fn try_must_give_back<T>(&self, answer: &Result<T>) -> bool {
        if !matches!(answer, Err(err) if err.may_have_run()) {
            return false;
        }
        let mut state = self.state.lock();
        state.1 = state.0;
        !state.0
    }

    /// Whether a try's answer was lost and nothing has given its grant back yet.
    pub(crate) fn pending(&self) -> bool {
        self.state.lock().1
    }

    /// Nothing a lost answer granted is left: it was given back, or the wait was granted (what a lost
    /// answer granted is then the grant it holds).
    pub(crate) fn settled(&self) {
        self.state.lock().1 = false;
    }

    /// The wait ends: true when a lost answer is left for it to give back.
    fn end(&self) -> bool {
        let mut state = self.state.lock();
        state.0 = false;
        std::mem::take(&mut state.1)
    }
}

/// Ends a wait's [`Unheard`] when dropped (the wait returned, or was dropped mid-way), and then runs
/// `give_back` if a lost answer is left.
pub(crate) struct WaitEnd<F: FnOnce()> {
    unheard: std::sync::Arc<Unheard>,
    give_back: Option<F>,
}

impl<F: FnOnce()> WaitEnd<F> {
    pub(crate) fn new(unheard: &std::sync::Arc<Unheard>, give_back: F) -> Self {
        WaitEnd {
            unheard: unheard.clone(),
            give_back: Some(give_back),
        }
    }
}

impl<F: FnOnce()> Drop for WaitEnd<F> {
    fn drop(&mut self) {
        if self.unheard.end() {
            if let Some(give_back) = self.give_back.take() {
                give_back();
            }
        }
    }
}
