//! What a hold tells its lock's hooks: its grant, its release, its loss (once, with the reason). Below
//! the hold and its watchdog, which both report through it.

use super::lost::{mark_lost, LostReason, LostSender};
use crate::hook::{Hooks, LockEvent};

/// What a hold tells its lock's hooks: its grant, its release, its loss (once, with the reason).
#[derive(Clone)]
pub(crate) struct HoldEvents {
    hooks: Hooks,
    what: &'static str,
    taken: std::time::Instant,
}

impl HoldEvents {
    /// The events of a hold of kind `what`, taken now.
    pub(crate) fn new(hooks: &Hooks, what: &'static str) -> Self {
        HoldEvents {
            hooks: hooks.clone(),
            what,
            taken: std::time::Instant::now(),
        }
    }

    pub(crate) fn acquired(&self, fencing_token: Option<u64>) {
        if !self.hooks.is_empty() {
            self.hooks.on_lock_event(&LockEvent::Acquired {
                what: self.what,
                fencing_token,
            });
        }
    }

    pub(crate) fn released(&self) {
        if !self.hooks.is_empty() {
            self.hooks.on_lock_event(&LockEvent::Released {
                what: self.what,
                held: self.taken.elapsed(),
            });
        }
    }

    /// Marks the hold lost for `reason` through `sender`; the hooks hear of it the first time.
    pub(crate) fn lost(&self, sender: &LostSender, reason: LostReason) {
        if self.hooks.is_empty() {
            mark_lost(sender, reason);
            return;
        }
        if mark_lost(sender, reason.clone()) {
            self.hooks.on_lock_event(&LockEvent::Lost {
                what: self.what,
                held: self.taken.elapsed(),
                reason: &reason,
            });
        }
    }
}
