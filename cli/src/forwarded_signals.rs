//! The signals `lock run` passes on to its command: SIGINT, SIGTERM and SIGHUP, each one unless this
//! process was started with it ignored (`nohup`, `trap '' HUP`): that one stays ignored, for the
//! command too, as `flock(1)` leaves it.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::Exit;

/// The signals listened for.
pub struct ForwardedSignals {
    interrupt: Option<Signal>,
    terminate: Option<Signal>,
    hangup: Option<Signal>,
}

impl ForwardedSignals {
    /// Listens for each signal this process does not ignore.
    pub fn install() -> Result<Self, Exit> {
        let listen = |kind: SignalKind, signo: i32| {
            if ignored(signo) {
                return Ok(None);
            }
            signal(kind)
                .map(Some)
                .map_err(|err| Exit::Failed(format!("cannot listen for signals: {err}")))
        };
        Ok(ForwardedSignals {
            interrupt: listen(SignalKind::interrupt(), libc::SIGINT)?,
            terminate: listen(SignalKind::terminate(), libc::SIGTERM)?,
            hangup: listen(SignalKind::hangup(), libc::SIGHUP)?,
        })
    }

    /// The next signal received, as its number; never, when none is listened for.
    pub async fn next(&mut self) -> i32 {
        tokio::select! {
            Some(()) = recv(&mut self.interrupt) => libc::SIGINT,
            Some(()) = recv(&mut self.terminate) => libc::SIGTERM,
            Some(()) = recv(&mut self.hangup) => libc::SIGHUP,
            else => std::future::pending().await,
        }
    }
}

async fn recv(listened: &mut Option<Signal>) -> Option<()> {
    match listened {
        Some(listened) => listened.recv().await,
        None => None,
    }
}

/// Whether `signo`'s disposition is "ignore" (as inherited from the process that started this one).
fn ignored(signo: i32) -> bool {
    // SAFETY: sigaction with no new action only reads the current one into `current`.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signo, std::ptr::null(), &mut current) == 0 && current.sa_sigaction == libc::SIG_IGN
    }
}
