//! The command `lock run` runs while it holds the lock: started so that nothing it starts outlives the
//! lock unseen, signalled, and stopped when the lock is lost.
//!
//! Outside a terminal's foreground (cron, systemd, a script, a background job) the command leads a
//! process group of its own, and every signal goes to the whole group: a shell's or a wrapper's
//! children stop with it. In a terminal's foreground the command stays in this process's group, so it
//! can read the terminal; the terminal already sends ^C and a hangup to the whole group, so those are
//! not sent again. In both, the command is killed if this process is (`PR_SET_PDEATHSIG`): a holder
//! killed by the OOM killer leaves no command running without the lock.

use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::{Child, Command};

/// A running command and how to reach it.
pub struct HeldCommand {
    child: Child,
    /// The command leads a process group of its own: signals go to the group.
    own_group: bool,
}

impl HeldCommand {
    /// Starts `command` (program and arguments) with `token` as `RATELOCK_FENCING_TOKEN`.
    pub fn start(command: &[String], token: u64) -> std::io::Result<Self> {
        let own_group = !in_terminal_foreground();
        let mut starting = Command::new(&command[0]);
        starting
            .args(&command[1..])
            .env("RATELOCK_FENCING_TOKEN", token.to_string())
            .kill_on_drop(true);
        if own_group {
            starting.process_group(0);
        }
        #[cfg(target_os = "linux")]
        {
            let parent = std::process::id();
            // SAFETY: the closure runs in the forked child before exec and calls only async-signal-safe
            // functions (prctl, getppid, raise).
            unsafe {
                starting.pre_exec(move || {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    // The parent may have died before the prctl: then nothing would ever send it.
                    if libc::getppid() as u32 != parent {
                        libc::raise(libc::SIGKILL);
                    }
                    Ok(())
                });
            }
        }
        Ok(HeldCommand {
            child: starting.spawn()?,
            own_group,
        })
    }

    /// Waits for the command to end.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Passes on `signo`, received by this process, to the command: to its group, or (in a terminal's
    /// foreground, where the terminal sent ^C and a hangup to the command as well) only SIGTERM.
    pub fn forward(&self, signo: i32) {
        if self.own_group || (signo != libc::SIGINT && signo != libc::SIGHUP) {
            self.send(signo);
        }
    }

    /// SIGTERM, then SIGKILL after `grace` if the command is still running.
    pub async fn stop(&mut self, grace: Duration) {
        self.send(libc::SIGTERM);
        if tokio::time::timeout(grace, self.child.wait()).await.is_err() {
            self.send(libc::SIGKILL);
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }

    /// Sends `signo` to the command's group, or to the command (nothing once it has been reaped).
    fn send(&self, signo: i32) {
        if let Some(pid) = self.child.id() {
            let target = if self.own_group {
                -(pid as libc::pid_t)
            } else {
                pid as libc::pid_t
            };
            // SAFETY: kill(2) to a process (or the group it leads) this process spawned and has not
            // reaped, so the pid is not reused.
            unsafe {
                libc::kill(target, signo);
            }
        }
    }
}

/// Whether this process runs in the foreground process group of its controlling terminal.
fn in_terminal_foreground() -> bool {
    let Ok(terminal) = std::fs::File::open("/dev/tty") else {
        return false;
    };
    use std::os::fd::AsRawFd;
    // SAFETY: tcgetpgrp and getpgrp only read; the descriptor is open for the call.
    unsafe { libc::tcgetpgrp(terminal.as_raw_fd()) == libc::getpgrp() }
}
