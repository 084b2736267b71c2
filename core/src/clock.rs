//! Clocks, in microseconds since the Unix epoch: the wall clock (shared by every process on the machine,
//! used when a client sends its own `now` to Redis) and the process clock of the memory store.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The largest `now` any call takes, in µs: 2^52 (September 2112). Every time a script computes from
/// it (a lease's end, a theoretical arrival time: `now` plus at most 2^50) then stays below 2^53, which
/// Lua's doubles and JavaScript's numbers keep exact. A larger explicit `now` is an invalid argument on
/// every path (the Lua scripts and the module refuse it too).
pub const MAX_NOW_US: u64 = 1 << 52;

/// Checks an explicit `now` (µs since the Unix epoch) against [`MAX_NOW_US`].
///
/// ```
/// use ratelock::clock::{check_now, MAX_NOW_US};
/// assert!(check_now(Some(MAX_NOW_US)).is_ok() && check_now(None).is_ok());
/// assert!(check_now(Some(MAX_NOW_US + 1)).unwrap_err().is_invalid_argument());
/// ```
#[inline]
pub fn check_now(now_us: Option<u64>) -> crate::Result<()> {
    match now_us {
        Some(now) if now > MAX_NOW_US => Err(now_out_of_range(now)),
        _ => Ok(()),
    }
}

/// [`check_now`]'s error, out of the hot path.
#[cold]
#[inline(never)]
fn now_out_of_range(now: u64) -> crate::Error {
    crate::Error::invalid_argument(
        "now",
        format!("expected µs since the Unix epoch from 0 to 2^52, got {now}"),
    )
}

/// How far this process's wall clock reads from the machine's (see [`jump_local_clock`]).
static LOCAL_JUMP_US: AtomicI64 = AtomicI64::new(0);

/// Microseconds since the Unix epoch, from the wall clock (moved by [`jump_local_clock`], if ever).
///
/// ```
/// assert!(ratelock::clock::now_us() > 1_700_000_000_000_000);
/// ```
pub fn now_us() -> u64 {
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_micros() as u64;
    wall.saturating_add_signed(LOCAL_JUMP_US.load(Ordering::Relaxed))
}

/// Makes this process's wall clock (the one a [`ClockSource::Local`](crate::ClockSource::Local) limiter
/// sends) jump by `by_us`, forward or back, as a client's clock does when NTP steps it: for the fault
/// suite, which checks that the client clock does not matter when the server's clock decides. The
/// machine's clock, the memory store's clock and every monotonic clock are untouched.
///
/// ```
/// let before = ratelock::clock::now_us();
/// ratelock::clock::jump_local_clock(-3_600_000_000);
/// assert!(ratelock::clock::now_us() < before);
/// ratelock::clock::jump_local_clock(3_600_000_000);
/// ```
#[doc(hidden)]
pub fn jump_local_clock(by_us: i64) {
    LOCAL_JUMP_US.fetch_add(by_us, Ordering::Relaxed);
}

/// The memory store's clock: microseconds since the Unix epoch, anchored to the wall clock when first
/// read and then advanced by a monotonic source (the CPU's invariant TSC through quanta with the
/// `fast-clock` feature, about 4× cheaper than the wall clock). It never goes backwards.
///
/// ```
/// let a = ratelock::clock::process_now_us();
/// let b = ratelock::clock::process_now_us();
/// assert!(b >= a && a > 1_700_000_000_000_000);
/// ```
pub fn process_now_us() -> u64 {
    process_clock::now_us()
}

/// `span` in whole microseconds, `u64::MAX` for a span too long to count (the saturating form every
/// timeout and interval kept in an atomic is stored in).
#[inline]
pub(crate) fn micros(span: Duration) -> u64 {
    u64::try_from(span.as_micros()).unwrap_or(u64::MAX)
}

/// A call's start, to tell how long it took: the process clock's monotonic source (the TSC through
/// quanta with `fast-clock`: two readings cost about a third of two `Instant::now()`s, which on the
/// memory store's path of about 100 ns show).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stopwatch(process_clock::Started);

impl Stopwatch {
    /// Started now.
    #[inline]
    pub(crate) fn start() -> Self {
        Stopwatch(process_clock::started())
    }

    /// The time since [`start`](Self::start).
    #[inline]
    pub(crate) fn elapsed(&self) -> Duration {
        process_clock::elapsed(self.0)
    }
}

#[cfg(feature = "fast-clock")]
mod process_clock {
    use std::sync::LazyLock;

    struct Anchor {
        clock: quanta::Clock,
        start_raw: u64,
        start_us: u64,
    }

    static ANCHOR: LazyLock<Anchor> = LazyLock::new(|| {
        let clock = quanta::Clock::new();
        let start_raw = clock.raw();
        Anchor {
            start_us: super::now_us(),
            start_raw,
            clock,
        }
    });

    pub(super) fn now_us() -> u64 {
        let anchor = &*ANCHOR;
        anchor.start_us + anchor.clock.delta_as_nanos(anchor.start_raw, anchor.clock.raw()) / 1_000
    }

    /// The clock's raw reading.
    pub(super) type Started = u64;

    pub(super) fn started() -> Started {
        ANCHOR.clock.raw()
    }

    pub(super) fn elapsed(started: Started) -> std::time::Duration {
        let clock = &ANCHOR.clock;
        std::time::Duration::from_nanos(clock.delta_as_nanos(started, clock.raw()))
    }
}

#[cfg(not(feature = "fast-clock"))]
mod process_clock {
    pub(super) fn now_us() -> u64 {
        super::now_us()
    }

    pub(super) type Started = std::time::Instant;

    pub(super) fn started() -> Started {
        std::time::Instant::now()
    }

    pub(super) fn elapsed(started: Started) -> std::time::Duration {
        started.elapsed()
    }
}
