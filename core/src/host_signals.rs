//! The signals a host process handles itself (a server's stop and reload signals, job control, child
//! exits), kept off the threads ratelock starts. A signal sent to a process is delivered to any one of
//! its threads that does not block it; a host whose C handler runs its shutdown where it lands (uWSGI's
//! workers call `exit` from theirs) would otherwise run it on a ratelock thread while its own main
//! thread waits on, never woken: a uWSGI worker then hung until its master killed it. Signals a fault
//! raises on the faulting thread (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGPIPE...) and a profiler's SIGPROF
//! stay unblocked.

/// The signals a host handles for the whole process.
#[cfg(unix)]
const HOST_SIGNALS: [libc::c_int; 12] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGCHLD,
    libc::SIGALRM,
    libc::SIGWINCH,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
];

/// Blocks the host's signals on the calling thread (and on the threads it starts after, which inherit
/// its mask), so that they reach one of the host's own threads. Call it first thing on a thread
/// ratelock owns: a runtime's `on_thread_start`, a probe thread. Does nothing off Unix.
///
/// ```
/// std::thread::spawn(|| {
///     ratelock::host_signals::keep_off_this_thread();
///     // ... this thread's work: a SIGTERM sent to the process is handled elsewhere
/// })
/// .join()
/// .unwrap();
/// ```
pub fn keep_off_this_thread() {
    #[cfg(unix)]
    // SAFETY: `set` is a local signal set initialised by sigemptyset before use; pthread_sigmask only
    // changes this thread's mask, and a null old-mask pointer is allowed.
    unsafe {
        let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        for signal in HOST_SIGNALS {
            libc::sigaddset(set.as_mut_ptr(), signal);
        }
        let failed = libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), std::ptr::null_mut());
        debug_assert_eq!(failed, 0, "pthread_sigmask refused a set of valid signals");
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// This thread's blocked signals as the kernel reports them (`SigBlk` in /proc).
    fn blocked_here() -> u64 {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let line = status.lines().find(|line| line.starts_with("SigBlk:")).unwrap();
        u64::from_str_radix(line["SigBlk:".len()..].trim(), 16).unwrap()
    }

    fn bit(signal: libc::c_int) -> u64 {
        1 << (signal - 1)
    }

    #[test]
    fn a_thread_that_keeps_them_off_blocks_the_host_signals_and_no_fault_signal() {
        let blocked = std::thread::spawn(|| {
            keep_off_this_thread();
            blocked_here()
        })
        .join()
        .unwrap();
        for signal in HOST_SIGNALS {
            assert_ne!(blocked & bit(signal), 0, "signal {signal} blocked");
        }
        for signal in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGPIPE,
            libc::SIGPROF,
        ] {
            assert_eq!(blocked & bit(signal), 0, "signal {signal} left alone");
        }
        assert_eq!(
            blocked_here() & bit(libc::SIGTERM),
            0,
            "the test's own thread is untouched"
        );
    }
}
