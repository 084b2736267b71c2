//! The command `lock run` runs while it holds the lock: started, signalled, and stopped when the lock
//! is lost.
//!
//! With no controlling terminal (cron, systemd, CI, a container without `-t`) the command leads a
//! process group of its own, and every signal goes to the whole group: what a shell or a wrapper
//! started stops with it, and a lost lock's stop waits for the whole group. With a terminal the command
//! stays in `ratelock`'s group, so that job control (^Z, `fg`, `bg`) and reading the terminal work as
//! for any command; signals then reach the command alone. In both, the command is killed if this
//! process is (`PR_SET_PDEATHSIG`, Linux): a holder killed by the OOM killer leaves no command running
//! without the lock.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// A running command and how to reach it.
pub struct HeldCommand {
    child: Child,
    /// The process group the command leads (no controlling terminal), whose members are signalled.
    group: Option<libc::pid_t>,
}

impl HeldCommand {
    /// Starts `command` (program and arguments) with `token` as `RATELOCK_FENCING_TOKEN`.
    pub fn start(command: &[String], token: u64) -> std::io::Result<Self> {
        let own_group = !has_controlling_terminal();
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
            // The death signal follows the thread that forks: this runs on the thread `block_on`
            // drives (the main thread, alive until the process exits), never on a pool thread.
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
        let child = starting.spawn()?;
        let group = if own_group {
            child.id().map(|pid| pid as libc::pid_t)
        } else {
            None
        };
        Ok(HeldCommand { child, group })
    }

    /// Waits for the command to end.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Passes on `signo`, received by this process, to the command (its group, when it leads one).
    pub fn forward(&self, signo: i32) {
        self.send(signo);
    }

    /// Whether a process of the command's group still runs after the command ended: what it started
    /// and left behind (never with a terminal, where the command leads no group).
    pub fn left_behind(&self) -> bool {
        self.group.is_some_and(group_alive)
    }

    /// SIGTERM, then SIGKILL once `grace` has passed while the command, or a process of its group, is
    /// still running.
    pub async fn stop(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        self.send(libc::SIGTERM);
        let ended = tokio::time::timeout(grace, self.child.wait()).await.is_ok();
        // The command ended; what it started may still be on its way out. Its group's id cannot be
        // taken by another process while one member lives.
        if ended {
            while self.left_behind() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        if let Some(group) = self.group.filter(|&group| group_alive(group)) {
            // SAFETY: kill(2) to the group a member of which is alive, so its id is still the group's.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
        }
        if !ended {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }

    /// Sends `signo` to the command's group while it has a member, else to the command while it has
    /// not been reaped.
    fn send(&self, signo: i32) {
        let target = match (self.group, self.child.id()) {
            (Some(group), _) if group_alive(group) => -group,
            (_, Some(pid)) => pid as libc::pid_t,
            _ => return,
        };
        // SAFETY: kill(2) to a live group this process made, or to a child not yet reaped: neither id
        // can have been reused.
        unsafe {
            libc::kill(target, signo);
        }
    }
}

/// Whether a process of group `group` is alive (signal 0 reaches it).
fn group_alive(group: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the group exists and may be signalled.
    unsafe { libc::kill(-group, 0) == 0 }
}

/// Whether this process has a controlling terminal (`/dev/tty` opens).
fn has_controlling_terminal() -> bool {
    std::fs::File::open("/dev/tty").is_ok()
}
