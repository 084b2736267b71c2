//! What a `DistributedLock` handle knows of its own grants in this process: the fencing tokens its
//! live guards hold, the tries still waiting for an answer, and the tries whose answer never came. A
//! try the store did not answer (a timeout, a connection lost after the write) may still have been
//! granted; that grant has no guard, and the handle's own next try sees its owner token and waits on it
//! until the lease ends. This book lets the handle tell such an orphan from a hold of its own
//! (`orphan.rs` gives it back).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use smallvec::SmallVec;
use tokio::time::Instant;

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
    /// Unanswered tries that may have been granted, the latest end of their leases, and whether a
    /// give-back task is on them.
    suspected: u64,
    until: Option<Instant>,
    giving_back: bool,
}

/// A try in flight until dropped.
pub(crate) struct InFlight(Arc<OwnGrants>);

/// A live guard's fencing token, in the book until the last clone of its lease is dropped.
pub(crate) struct LiveGrant {
    own: Arc<OwnGrants>,
    fence: u64,
}

/// Where a give-back task stands after a look (see [`OwnGrants::after_look`]).
pub(crate) enum Next {
    /// Look again after a pause.
    LookAgain,
    /// Nothing is left to give back, or the leases of every suspect have run out: the task ends.
    Done,
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
    pub(crate) fn is_live(&self, fence: u64) -> bool {
        self.book().live.contains(&fence)
    }

    /// The count of tries begun, when none is in flight (a look at the lock can then be trusted).
    pub(crate) fn quiet(&self) -> Option<u64> {
        let book = self.book();
        (book.in_flight == 0).then_some(book.begun)
    }

    /// Whether no try began since [`quiet`](Self::quiet) answered `mark`, and none is in flight.
    pub(crate) fn still_quiet(&self, mark: u64) -> bool {
        let book = self.book();
        book.in_flight == 0 && book.begun == mark
    }

    /// Counts a try that may have been granted unheard, under a lease of `lease` from now. True when a
    /// give-back task must start (none is on the suspects yet).
    pub(crate) fn suspect(&self, lease: Duration) -> bool {
        let mut book = self.book();
        book.suspected += 1;
        let until = Instant::now() + lease;
        book.until = Some(book.until.map_or(until, |earlier| earlier.max(until)));
        !std::mem::replace(&mut book.giving_back, true)
    }

    /// The suspects counted so far, and the latest end of their leases.
    pub(crate) fn suspects(&self) -> (u64, Instant) {
        let book = self.book();
        (book.suspected, book.until.unwrap_or_else(Instant::now))
    }

    /// After a look that began with `seen` suspects: done only when the look found nothing left
    /// (`settled`) and no try was suspected since, or when the leases of every suspect are over.
    pub(crate) fn after_look(&self, seen: u64, settled: bool, pause: Duration) -> Next {
        let mut book = self.book();
        let over = book.until.is_none_or(|until| Instant::now() + pause >= until);
        if over || (settled && book.suspected == seen) {
            book.giving_back = false;
            book.until = None;
            return Next::Done;
        }
        Next::LookAgain
    }

    /// Ends a give-back task that could not start (no runtime).
    pub(crate) fn not_giving_back(&self) {
        self.book().giving_back = false;
    }
}

/// Marks a try of the handle owning `own` in flight until the returned value is dropped.
pub(crate) fn begin_try(own: &Arc<OwnGrants>) -> InFlight {
    let mut book = own.book();
    book.in_flight += 1;
    book.begun += 1;
    drop(book);
    InFlight(own.clone())
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut book = self.0.book();
        book.in_flight = book.in_flight.saturating_sub(1);
    }
}

/// Enters grant `fence` in `own`'s book, for the guard made over it.
pub(crate) fn live_grant(own: &Arc<OwnGrants>, fence: u64) -> Arc<LiveGrant> {
    own.book().live.push(fence);
    Arc::new(LiveGrant {
        own: own.clone(),
        fence,
    })
}

impl Drop for LiveGrant {
    fn drop(&mut self) {
        let mut book = self.own.book();
        if let Some(at) = book.live.iter().position(|fence| *fence == self.fence) {
            book.live.swap_remove(at);
        }
    }
}
