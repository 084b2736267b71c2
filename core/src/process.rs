//! Which process this is, as far as ratelock's own state is concerned: a generation counter that a
//! `pthread_atfork` child handler bumps, and [`PerProcess`], a value rebuilt lazily in a forked child
//! instead of being shared with the parent. A child never uses a runtime thread, socket, subscription or
//! watchdog that it did not create itself; what it inherited is leaked, never used and never dropped
//! (dropping could touch locks or threads that only exist in the parent).
//!
//! Checking costs one atomic load (plus a `Once` that is already done): no `getpid()` per call.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Once;

static GENERATION: AtomicU64 = AtomicU64::new(0);
static WATCH_FORKS: Once = Once::new();

#[cfg(unix)]
extern "C" fn forked_child() {
    // Async-signal-safe: one atomic add, nothing else.
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// The process generation: 0 in the process that loaded ratelock, one more in a child after each fork.
/// Two calls that return the same number ran in the same process.
///
/// ```
/// let here = ratelock::process::generation();
/// assert_eq!(ratelock::process::generation(), here);
/// ```
pub fn generation() -> u64 {
    WATCH_FORKS.call_once(|| {
        #[cfg(unix)]
        // SAFETY: registers a handler that only performs an atomic add (async-signal-safe).
        unsafe {
            libc::pthread_atfork(None, None, Some(forked_child));
        }
    });
    GENERATION.load(Ordering::Acquire)
}

/// A value that belongs to one process: built on first use, and built again on first use in a forked
/// child. The parent's value is never handed to the child (it is leaked there, never dropped).
///
/// ```
/// use ratelock::process::PerProcess;
/// let counter = PerProcess::new();
/// let first = counter.get_or_init(|| std::sync::atomic::AtomicU32::new(7));
/// assert_eq!(first.load(std::sync::atomic::Ordering::Relaxed), 7);
/// ```
pub struct PerProcess<T> {
    current: AtomicPtr<Slot<T>>,
}

struct Slot<T> {
    generation: u64,
    value: T,
    /// The slot this one replaced (another process's), kept so that `Drop` in its own process frees it.
    older: *mut Slot<T>,
}

// SAFETY: slots are only read through shared references and freed with `&mut self`; `T` must be shareable.
unsafe impl<T: Send + Sync> Send for PerProcess<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for PerProcess<T> {}

impl<T> Default for PerProcess<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> PerProcess<T> {
    /// An empty slot.
    pub const fn new() -> Self {
        PerProcess {
            current: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The value built in this process, if any.
    pub fn get(&self) -> Option<&T> {
        let slot = self.current.load(Ordering::Acquire);
        // SAFETY: a published slot is never freed while `self` is borrowed (only `Drop` frees).
        let slot = unsafe { slot.as_ref() }?;
        (slot.generation == generation()).then_some(&slot.value)
    }

    /// The value of this process, built by `init` if this process has none yet. Two threads that race
    /// build one each; one value wins and the other is dropped.
    pub fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
        if let Some(value) = self.get() {
            return value;
        }
        let here = generation();
        let mut seen = self.current.load(Ordering::Acquire);
        let fresh = Box::into_raw(Box::new(Slot {
            generation: here,
            value: init(),
            older: seen,
        }));
        loop {
            match self
                .current
                .compare_exchange(seen, fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                // SAFETY: `fresh` is now published and lives until `Drop`.
                Ok(_) => return unsafe { &(*fresh).value },
                Err(now) => {
                    // SAFETY: published slots live until `Drop`.
                    let winner = unsafe { &*now };
                    if winner.generation == here {
                        // SAFETY: `fresh` was never published; this thread still owns it.
                        let lost = unsafe { Box::from_raw(fresh) };
                        drop(lost);
                        return &winner.value;
                    }
                    // SAFETY: `fresh` is still ours; link it to the slot it will replace.
                    unsafe { (*fresh).older = now };
                    seen = now;
                }
            }
        }
    }
}

impl<T> Drop for PerProcess<T> {
    fn drop(&mut self) {
        let mut slot = *self.current.get_mut();
        let here = generation();
        while !slot.is_null() {
            // SAFETY: `&mut self`: nobody else can see these slots any more.
            let boxed = unsafe { Box::from_raw(slot) };
            slot = boxed.older;
            if boxed.generation == here {
                drop(boxed);
            } else {
                // Another process's value: its threads and sockets are not ours to close.
                std::mem::forget(boxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_process() {
        let slot = PerProcess::new();
        assert!(slot.get().is_none());
        let first = slot.get_or_init(|| 1) as *const i32;
        let again = slot.get_or_init(|| 2) as *const i32;
        assert_eq!(first, again);
        assert_eq!(slot.get(), Some(&1));
    }

    #[cfg(unix)]
    #[test]
    fn a_forked_child_builds_its_own() {
        let slot = std::sync::Arc::new(PerProcess::new());
        slot.get_or_init(|| 1u32);
        let before = generation();
        // SAFETY: the child only reads atomics and exits with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let ok = generation() == before + 1 && slot.get().is_none() && *slot.get_or_init(|| 2) == 2;
            // SAFETY: leaves the child at once, running no destructor of the parent's state.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_eq!(generation(), before);
        assert_eq!(slot.get(), Some(&1));
    }
}
