//! `ratelock lock run NAME -- CMD ARGS…`: a distributed `flock`. Takes the lock (waiting up to
//! `--wait`), runs CMD with RATELOCK_FENCING_TOKEN in its environment while the lock renews itself
//! (`held_command`), forwards SIGINT, SIGTERM and SIGHUP to it (`forwarded_signals`), and releases the
//! lock when it ends. A lock lost while CMD ran stops CMD (SIGTERM, then SIGKILL after `--grace`) and
//! exits with its own code; so does one found lost at the release, after CMD ended.

use std::process::ExitStatus;

use ratelock::{AnyLockStore, DistributedLock, LockGuard, LockOptions, StoreOptions};

use crate::args::{LockRunArgs, StoreArgs};
use crate::exit::Exit;
use crate::forwarded_signals::ForwardedSignals;
use crate::held_command::HeldCommand;
use crate::output;
use crate::store_url;

pub async fn run(store: &StoreArgs, args: LockRunArgs) -> Result<i32, Exit> {
    let options = StoreOptions::default().with_timeout(store.timeout);
    let locks = AnyLockStore::connect(&store.url, &options)
        .await
        .map_err(store_url::failed_at(&store.url))?;
    store_url::require_shared(locks.does_io(), &store.url)?;
    let lock_options = LockOptions::default()
        .with_ttl(args.ttl)
        .with_auto_renew(true)
        .with_prefix(store.prefix.clone());
    let lock = DistributedLock::new(locks, args.name.as_bytes(), lock_options)?;
    let guard = take(&lock, &args)
        .await
        .map_err(|exit| store_url::naming(&store.url, exit))?;
    let outcome = run_holding(&guard, &args).await;
    // Every way out gives the lock back first, a command that could not start included: a dropped
    // guard's release runs in the background, which the process's exit cut short (the lock then
    // stayed held for its whole ttl, and the next run of a cron job found it busy).
    let released = release(guard, &args.name).await;
    match outcome {
        Ok(code) => released.map(|()| code),
        Err(failure) => Err(failure),
    }
}

/// Runs the command while `guard` holds the lock: its exit code, or why it could not run or was
/// stopped.
async fn run_holding(guard: &LockGuard, args: &LockRunArgs) -> Result<i32, Exit> {
    // Listening before the command starts: a signal sent once it runs (it may say it is ready at
    // once) must reach it, not end this process with the lock still held.
    let mut forwarded = ForwardedSignals::install()?;
    let mut command = HeldCommand::start(&args.command, guard.fencing_token())
        .map_err(|err| Exit::Failed(format!("cannot start {:?}: {err}", args.command[0])))?;
    let lost = guard.lost_signal();
    loop {
        tokio::select! {
            status = command.wait() => {
                let status = status.map_err(|err| Exit::Failed(format!("waiting for the command: {err}")))?;
                if command.left_behind() {
                    // As with any lock: what the command left running is not covered once it is given back.
                    output::warning(&format!(
                        "the command ended, leaving processes it started running; lock {:?} is released",
                        args.name
                    ));
                }
                return Ok(code_of(status));
            }
            () = lost.wait() => {
                let reason = lost.reason().map_or("unknown".to_owned(), |reason| reason.to_string());
                command.stop(args.grace).await;
                return Err(Exit::Lost(format!(
                    "lock {:?} was lost while the command ran ({reason}): the command was stopped",
                    args.name
                )));
            }
            signo = forwarded.next() => command.forward(signo),
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

/// Releases the lock after the command ended (or could not start). A lock found lost then (taken or
/// forced free after the last renewal, so the command ran its end without it) is `Exit::Lost`, as a
/// loss seen while it ran; a release that fails on the way is reported, and the outcome stands.
async fn release(guard: LockGuard, name: &str) -> Result<(), Exit> {
    let lost = |why: String| Exit::Lost(format!("lock {name:?} was lost while the command ran ({why})"));
    if guard.is_lost() {
        return Err(lost("its lease could not be renewed".to_owned()));
    }
    match guard
        .release()
        .await
        .and_then(|released| released.or_lost("lock"))
    {
        Ok(_) => Ok(()),
        Err(err) if err.is_lock_lost() => Err(lost(err.to_string())),
        Err(err) => {
            output::warning(&format!(
                "releasing the lock failed (it ends with its lease): {err}"
            ));
            Ok(())
        }
    }
}

/// The command's exit code, or 128 + the signal that ended it.
fn code_of(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}
