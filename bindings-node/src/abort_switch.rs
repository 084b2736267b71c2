//! `NativeAbortSwitch`: how an `AbortSignal` reaches a waiting acquire on the addon's runtime. `lib/`
//! makes one per acquire given a `signal` and flips it when the signal aborts; the acquire stops
//! waiting and rejects, and the core drops its wait as it does any dropped acquire (a fair lock's
//! place is withdrawn, a grant made meanwhile is given back).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use napi_derive::napi;
use tokio::sync::Notify;

use crate::errors::Result;

/// A one-way switch: off when made, on for good once `abort` is called.
#[napi]
pub struct NativeAbortSwitch {
    shared: Arc<Shared>,
}

struct Shared {
    aborted: AtomicBool,
    flipped: Notify,
}

impl Default for NativeAbortSwitch {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl NativeAbortSwitch {
    /// A switch that is off.
    #[napi(constructor)]
    pub fn new() -> Self {
        NativeAbortSwitch {
            shared: Arc::new(Shared {
                aborted: AtomicBool::new(false),
                flipped: Notify::new(),
            }),
        }
    }

    /// Turns the switch on: the acquire watching it stops waiting (at once, or when it starts).
    #[napi]
    pub fn abort(&self) {
        self.shared.aborted.store(true, Ordering::Release);
        self.shared.flipped.notify_waiters();
    }
}

/// What a waiting acquire watches: `None` when it was given no switch.
pub(crate) struct Watched(Option<Arc<Shared>>);

impl Watched {
    /// The switch of `given`, held by the acquire's future (which outlives the JavaScript call).
    pub(crate) fn of(given: Option<&NativeAbortSwitch>) -> Self {
        Watched(given.map(|switch| switch.shared.clone()))
    }

    /// `wait` unless the switch turns on first: then `wait` is dropped and the call rejects with
    /// [`aborted_wait`](crate::errors::aborted_wait). A wait that is ready wins a tie (`lib/` gives its
    /// hold back when the signal aborted meanwhile).
    pub(crate) async fn or_abort<T>(self, wait: impl Future<Output = Result<T>>) -> Result<T> {
        let Some(shared) = self.0 else {
            return wait.await;
        };
        // Aborted before the wait began (while the store was opened, say): it never starts, so
        // nothing is granted, not even a free lock on the first poll.
        if shared.aborted.load(Ordering::Acquire) {
            return Err(crate::errors::aborted_wait());
        }
        let aborted = async {
            let flipped = shared.flipped.notified();
            tokio::pin!(flipped);
            // Registered before the flag is read, so an abort between the two is not missed.
            flipped.as_mut().enable();
            if !shared.aborted.load(Ordering::Acquire) {
                flipped.await;
            }
        };
        tokio::select! {
            biased;
            outcome = wait => outcome,
            () = aborted => Err(crate::errors::aborted_wait()),
        }
    }
}
