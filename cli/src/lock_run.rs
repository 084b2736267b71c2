//! `ratelock lock run NAME -- CMD ARGS…`: a distributed `flock`. Takes the lock (waiting up to
//! `--wait`), runs CMD with RATELOCK_FENCING_TOKEN in its environment while the lock renews itself,
//! forwards SIGINT, SIGTERM and SIGHUP to it, and releases the lock when it ends. A lost lock stops CMD
//! (SIGTERM, then SIGKILL after `--grace`) and exits with its own code.

use std::process::ExitStatus;
use std::time::Duration;

use ratelock::{AnyLockStore, DistributedLock, LockGuard, LockOptions, StoreOptions};
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::args::{LockRunArgs, StoreArgs};
use crate::exit::Exit;

pub async fn run(store: &StoreArgs, args: LockRunArgs) -> Result<i32, Exit> {
    let options = StoreOptions::default().with_timeout(store.timeout);
    let locks = AnyLockStore::connect(&store.url, &options).await?;
    let lock_options = LockOptions::default()
        .with_ttl(args.ttl)
        .with_auto_renew(true)
        .with_prefix(store.prefix.clone());
    let lock = DistributedLock::new(locks, args.name.as_bytes(), lock_options)?;
    let guard = take(&lock, &args).await?;
    let outcome = run_holding(&guard, &args).await;
    // Every way out gives the lock back first, a command that could not start included: a dropped
    // guard's release runs in the background, which the process's exit cut short (the lock then
    // stayed held for its whole ttl, and the next run of a cron job found it busy).
    release(guard).await;
    outcome
}

/// Runs the command while `guard` holds the lock: its exit code, or why it could not run or was
/// stopped.
async fn run_holding(guard: &LockGuard, args: &LockRunArgs) -> Result<i32, Exit> {
    let token = guard.fencing_token();
    // Listening before the command starts: a signal sent once it runs (it may say it is ready at
    // once) must reach it, not end this process with the lock still held.
    let mut forwarded = Forwarded::install()?;
    let mut child = Command::new(&args.command[0])
        .args(&args.command[1..])
        .env("RATELOCK_FENCING_TOKEN", token.to_string())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| Exit::Failed(format!("cannot start {:?}: {err}", args.command[0])))?;
    let lost = guard.lost_signal();
    loop {
        tokio::select! {
            status = child.wait() => {
                let status = status.map_err(|err| Exit::Failed(format!("waiting for the command: {err}")))?;
                return Ok(code_of(status));
            }
            () = lost.wait() => {
                let reason = lost.reason().map_or("unknown".to_owned(), |reason| reason.to_string());
                stop(&mut child, args.grace).await;
                return Err(Exit::Lost(format!(
                    "lock {:?} was lost while the command ran ({reason}): the command was stopped",
                    args.name
                )));
            }
            Some(signo) = forwarded.next() => send(&child, signo),
        }
    }
}

/// The lock, at once or within `--wait`.
async fn take(lock: &DistributedLock, args: &LockRunArgs) -> Result<LockGuard, Exit> {
    match args.wait.filter(|wait| !wait.is_zero()) {
        None => lock.try_acquire().await?.ok_or_else(|| {
            Exit::Busy(format!(
                "lock {:?} is held by another holder (give --wait to wait for it)",
                args.name
            ))
        }),
        Some(wait) => lock.acquire(wait).await.map_err(|err| {
            if err.is_wait_timeout() {
                Exit::WaitTimedOut(format!("lock {:?} was still held after {wait:?}", args.name))
            } else {
                err.into()
            }
        }),
    }
}

/// Releases the lock after the command ended (or could not start); a failure is reported, and the
/// command's code stands. A lock already lost has nothing to give back.
async fn release(guard: LockGuard) {
    if guard.is_lost() {
        return;
    }
    if let Err(err) = guard.release().await {
        eprintln!("ratelock: releasing the lock failed (it ends with its lease): {err}");
    }
}

/// The command's exit code, or 128 + the signal that ended it.
fn code_of(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// SIGTERM, then SIGKILL after `grace` if the command is still running.
async fn stop(child: &mut Child, grace: Duration) {
    send(child, libc::SIGTERM);
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

/// Sends `signo` to the command (nothing once it has been reaped).
fn send(child: &Child, signo: i32) {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) with a pid this process spawned and has not reaped.
        unsafe {
            libc::kill(pid as libc::pid_t, signo);
        }
    }
}

/// The signals `lock run` passes on to its command.
struct Forwarded {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Forwarded {
    fn install() -> Result<Self, Exit> {
        let listen = |kind: SignalKind| {
            signal(kind).map_err(|err| Exit::Failed(format!("cannot listen for signals: {err}")))
        };
        Ok(Forwarded {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
            hangup: listen(SignalKind::hangup())?,
        })
    }

    /// The next signal received, as its number.
    async fn next(&mut self) -> Option<i32> {
        tokio::select! {
            Some(()) = self.interrupt.recv() => Some(libc::SIGINT),
            Some(()) = self.terminate.recv() => Some(libc::SIGTERM),
            Some(()) = self.hangup.recv() => Some(libc::SIGHUP),
            else => None,
        }
    }
}
