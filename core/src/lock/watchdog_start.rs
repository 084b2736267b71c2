//! Watchdogs that start when they are first needed. Most holds are given back long before their first
//! renewal (a third of the lease). Spawning a watchdog task for each at acquire costs a task and, when
//! the hold is taken outside the runtime's threads (the memory store, Python's blocking calls, Node's
//! first poll), a wake-up of a runtime thread per acquire: tens of µs on a small machine. Instead a
//! hold books the moment its watchdog is needed with its runtime's one starter task, which spawns the
//! watchdog then. A hold given back before that takes its booking back, and nothing ever ran for it.
//! The starter wakes only when a booking earlier than every other one is made (the first hold after an
//! idle spell) and when the earliest booking comes due.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use tokio::runtime::{Handle, Id};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::process::PerProcess;

/// What spawns a hold's watchdog task on the runtime it is given.
pub(crate) type Spawn = Box<dyn FnOnce(&Handle) -> JoinHandle<()> + Send>;

/// One hold's watchdog: booked with its runtime's starter, running, or stopped.
pub(crate) struct Watchdog {
    state: Mutex<State>,
    starter: Arc<Starter>,
    runtime: Handle,
}

enum State {
    Booked { key: Booking, spawn: Spawn },
    Running(JoinHandle<()>),
    Stopped,
}

/// A booking's place in its starter's queue: when, then the order bookings were made in.
type Booking = (Instant, u64);

impl Watchdog {
    /// A watchdog that `spawn` starts on `runtime` at `at` (at once if `at` has passed).
    pub(crate) fn book(runtime: Handle, at: Instant, spawn: Spawn) -> Arc<Self> {
        let starter = starter_of(&runtime);
        starter.book(at, |key| {
            Arc::new(Watchdog {
                state: Mutex::new(State::Booked { key, spawn }),
                starter: starter.clone(),
                runtime,
            })
        })
    }

    /// Starts the watchdog now if it is only booked: when its booking comes due, or when a manual
    /// extension moved the lease's end, which a running watchdog follows.
    pub(crate) fn start_now(&self) {
        let mut state = self.state.lock();
        if let State::Booked { key, .. } = &*state {
            self.starter.unbook(*key);
            if let State::Booked { spawn, .. } = std::mem::replace(&mut *state, State::Stopped) {
                *state = State::Running(spawn(&self.runtime));
            }
        }
    }

    /// Stops the watchdog: a booking is taken back; a running task is handed over to be aborted.
    pub(crate) fn stop(&self) -> Option<JoinHandle<()>> {
        let mut state = self.state.lock();
        match std::mem::replace(&mut *state, State::Stopped) {
            State::Booked { key, .. } => {
                self.starter.unbook(key);
                None
            }
            State::Running(task) => Some(task),
            State::Stopped => None,
        }
    }
}

/// The starter of one runtime: the bookings, in order, and the wake-up of its task.
#[derive(Default)]
struct Starter {
    queue: Mutex<Queue>,
    wake: Notify,
}

#[derive(Default)]
struct Queue {
    booked: BTreeMap<Booking, Weak<Watchdog>>,
    next_order: u64,
    /// When the task will wake next (`None`: when told), as far as bookings know.
    waking_at: Option<Instant>,
}

impl Starter {
    /// Books the watchdog `make` builds for its place in the queue at `at`, waking the task only when
    /// it would otherwise sleep past it.
    fn book(&self, at: Instant, make: impl FnOnce(Booking) -> Arc<Watchdog>) -> Arc<Watchdog> {
        let (watchdog, wake) = {
            let mut queue = self.queue.lock();
            queue.next_order += 1;
            let key = (at, queue.next_order);
            let watchdog = make(key);
            queue.booked.insert(key, Arc::downgrade(&watchdog));
            let earlier = queue.waking_at.is_none_or(|waking| at < waking);
            if earlier {
                queue.waking_at = Some(at);
            }
            (watchdog, earlier)
        };
        if wake {
            self.wake.notify_one();
        }
        watchdog
    }

    /// Takes a booking back (the task may still wake at its time, and finds nothing to do).
    fn unbook(&self, key: Booking) {
        self.queue.lock().booked.remove(&key);
    }

    /// The watchdogs due at `now`, taken out of the queue, and when the next booking comes due.
    fn take_due(&self, now: Instant) -> (Vec<Weak<Watchdog>>, Option<Instant>) {
        let mut queue = self.queue.lock();
        let mut due = Vec::new();
        while let Some(entry) = queue.booked.first_entry() {
            if entry.key().0 > now {
                break;
            }
            due.push(entry.remove());
        }
        let next = queue.booked.keys().next().map(|key| key.0);
        queue.waking_at = next;
        (due, next)
    }

    /// The task: starts what comes due, sleeps until the next booking or a wake-up.
    async fn run(self: Arc<Self>) {
        loop {
            // Listening before looking: a booking made after the look still wakes the task.
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let (due, next) = self.take_due(Instant::now());
            for watchdog in due.iter().filter_map(Weak::upgrade) {
                watchdog.start_now();
            }
            match next {
                Some(at) => tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = &mut woken => {}
                },
                None => woken.await,
            }
        }
    }
}

/// The starters of the runtimes holds were taken on, by runtime (a runtime's task keeps its starter
/// alive; the entries of runtimes that ended are dropped at the next look). Per process: a forked child
/// never waits on a lock its parent held at the fork, nor uses the parent's starters.
static STARTERS: PerProcess<Starters> = PerProcess::new();

/// Each runtime's starter, by the runtime's id.
type Starters = Mutex<Vec<(Id, Weak<Starter>)>>;

/// This process's starters.
fn starters() -> &'static Starters {
    STARTERS.get_or_init(Mutex::default)
}

/// `runtime`'s starter, made (and its task spawned) on first use.
fn starter_of(runtime: &Handle) -> Arc<Starter> {
    let id = runtime.id();
    let made = {
        let mut starters = starters().lock();
        starters.retain(|(_, starter)| starter.strong_count() > 0);
        if let Some(starter) = starters
            .iter()
            .find(|(of, _)| *of == id)
            .and_then(|(_, starter)| starter.upgrade())
        {
            return starter;
        }
        let starter = Arc::new(Starter::default());
        starters.push((id, Arc::downgrade(&starter)));
        starter
    };
    // Spawned after the registry's lock is let go: a spawn from outside the runtime wakes a thread.
    runtime.spawn(made.clone().run());
    made
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    fn counting(started: &Arc<AtomicUsize>) -> Spawn {
        let started = started.clone();
        Box::new(move |runtime: &Handle| {
            started.fetch_add(1, Ordering::SeqCst);
            runtime.spawn(std::future::pending())
        })
    }

    /// A booking taken back before it comes due never starts; one left in place starts at its time.
    #[tokio::test(start_paused = true)]
    async fn only_the_bookings_still_held_when_due_start() {
        let started = Arc::new(AtomicUsize::new(0));
        let now = Instant::now();
        let runtime = Handle::current();
        let given_back = Watchdog::book(runtime.clone(), now + Duration::from_secs(10), counting(&started));
        let kept = Watchdog::book(runtime.clone(), now + Duration::from_secs(10), counting(&started));
        assert!(given_back.stop().is_none());
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert_eq!(started.load(Ordering::SeqCst), 0);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(started.load(Ordering::SeqCst), 1);
        let task = kept.stop().expect("the kept watchdog runs");
        task.abort();
    }

    /// A child forked while this process's starters were locked (another thread booking a watchdog)
    /// has starters of its own, free, instead of a lock nobody will let go.
    #[cfg(unix)]
    #[test]
    fn a_forked_child_does_not_inherit_a_locked_registry() {
        let held = starters().lock();
        // SAFETY: the child only tries a lock and exits with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let free = starters().try_lock().is_some();
            // SAFETY: leaves the child at once, running no destructor of the parent's state.
            unsafe { libc::_exit(if free { 0 } else { 1 }) };
        }
        drop(held);
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }

    /// A booking earlier than every other one wakes the starter, which would otherwise sleep past it.
    #[tokio::test(start_paused = true)]
    async fn an_earlier_booking_is_started_at_its_own_time() {
        let started = Arc::new(AtomicUsize::new(0));
        let now = Instant::now();
        let runtime = Handle::current();
        let _late = Watchdog::book(runtime.clone(), now + Duration::from_secs(60), counting(&started));
        tokio::time::sleep(Duration::from_millis(1)).await;
        let early = Watchdog::book(runtime.clone(), now + Duration::from_secs(1), counting(&started));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(started.load(Ordering::SeqCst), 1);
        early.stop().expect("started").abort();
        early.start_now();
        assert_eq!(
            started.load(Ordering::SeqCst),
            1,
            "a stopped watchdog stays stopped"
        );
    }
}
