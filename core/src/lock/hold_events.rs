//! What a hold tells its lock's hooks: its grant, its release, its loss (once, with the reason). Below
//! the hold and its watchdog, which both report through it.

use super::lost::{mark_lost, LostReason, LostSender};
use crate::algorithm::lease::Released;
use crate::error::Result;
use crate::hook::{Hooks, LockEvent};

/// What a hold tells its lock's hooks: its grant, its release, its loss (once, with the reason).
#[derive(Clone)]
pub(crate) struct HoldEvents {
    hooks: Hooks,
    what: &'static str,
    taken: std::time::Instant,
}

impl HoldEvents {
    /// The events of a hold of kind `what`, taken at `taken` (when its granting request was sent).
    pub(crate) fn new(hooks: &Hooks, what: &'static str, taken: std::time::Instant) -> Self {
        HoldEvents {
            hooks: hooks.clone(),
            what,
            taken,
        }
    }

    /// Whether any hook listens (else there is nobody to tell when the hold is lost).
    pub(crate) fn heard(&self) -> bool {
        !self.hooks.is_empty()
    }

    pub(crate) fn acquired(&self, fencing_token: Option<u64>) {
        if !self.hooks.is_empty() {
            self.hooks.on_lock_event(&LockEvent::Acquired {
                what: self.what,
                fencing_token,
            });
        }
    }

    /// What giving the hold back came to, told once: released (unless it was lost before, `was_lost`),
    /// or lost as the store's answer says (not held: expired; held by another: taken; a refusal no
    /// retry mends: failed). A release the store could not answer tells nothing: the hold is still
    /// held, or (dropped) its lease runs out, which its watchdog no longer reports.
    pub(crate) fn settled(&self, sender: &LostSender, was_lost: bool, outcome: &Result<Released>) {
        match outcome {
            Ok(Released::NotHeld) => self.lost(sender, LostReason::Expired),
            Ok(Released::HeldByOther) => self.lost(sender, LostReason::Taken),
            Ok(_) if !was_lost => self.released(),
            Ok(_) => {}
            Err(error) if error.is_store_failure() => {}
            Err(error) => self.lost(sender, LostReason::Failed(error.clone())),
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
