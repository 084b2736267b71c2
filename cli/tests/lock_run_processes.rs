//! `ratelock lock run` and the processes around it, against a real redis-server: a lock found lost at
//! the release, a command's own children stopped with it (with no controlling terminal, as under cron),
//! the command killed when ratelock is, and a signal ignored at start (`nohup`) left ignored.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ratelock::{AnyLockStore, DistributedLock, LockOptions, StoreOptions};
use ratelock_testkit::RedisServer;

fn ratelock(server: &RedisServer, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ratelock"));
    command.env("RATELOCK_URL", server.url()).args(args);
    command
}

/// `command` in a session of its own, with no controlling terminal, as cron and systemd start jobs
/// (whether `cargo test` runs in a terminal or not).
fn without_terminal(mut command: Command) -> Command {
    // SAFETY: setsid is async-signal-safe; it runs in the forked child before exec.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    command
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Frees the lock `name` as an operator would (`force_release`): true when it was held.
fn force_free(server: &RedisServer, name: &str) -> bool {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = AnyLockStore::connect(&server.url(), &StoreOptions::default())
            .await
            .unwrap();
        let lock = DistributedLock::new(store, name, LockOptions::default()).unwrap();
        lock.force_release().await.unwrap()
    })
}

/// Whether process `pid` is gone (or a zombie nobody has reaped yet).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[test]
fn a_lock_found_lost_at_the_release_is_reported_lost_not_the_commands_success() {
    // A renewal comes every third of the ttl: a lock forced free between two renewals was noticed by
    // nobody, and the command's own 0 came out while another holder could have run beside it.
    let server = RedisServer::start();
    let holder = ratelock(
        &server,
        &["lock", "run", "report", "--ttl", "30s", "--", "sleep", "1"],
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(force_free(&server, "report"), "the CLI held it");
    let output = holder.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(77), "{}", stderr(&output));
    assert!(stderr(&output).contains("lost"), "{}", stderr(&output));
}

#[test]
fn a_lost_lock_stops_the_commands_own_children_too() {
    // Only the shell was sent SIGTERM: the job it had started went on writing after ratelock said the
    // command was stopped, beside the next holder.
    let server = RedisServer::start();
    let dir = std::env::temp_dir().join(format!("ratelock-cli-group-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let late = dir.join("late");
    // One child ends at once on SIGTERM; another takes its time (longer than --grace) and must be
    // killed: the stop waited only for the shell.
    let slow = dir.join("slow");
    let script = format!(
        "(sleep 2; echo late > {}) & (trap 'sleep 2; echo slow > {}' TERM; sleep 5) & wait",
        late.display(),
        slow.display()
    );
    let holder = without_terminal(ratelock(
        &server,
        &[
            "lock", "run", "group", "--ttl", "900ms", "--grace", "1s", "--", "sh", "-c", &script,
        ],
    ))
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(force_free(&server, "group"));
    // The next renewal (every 300 ms) finds the lock lost, well before the child's 2 s are up.
    let output = holder.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(77), "{}", stderr(&output));
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !late.exists(),
        "the command's child ran on after the lock was lost"
    );
    assert!(!slow.exists(), "a child slow to stop ran on past --grace");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_command_that_leaves_processes_running_is_told_of_at_the_release() {
    let server = RedisServer::start();
    let output = without_terminal(ratelock(
        &server,
        &["lock", "run", "left", "--", "sh", "-c", "sleep 2 & exit 0"],
    ))
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("leaving processes it started running"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_command_dies_with_a_killed_ratelock() {
    // kill_on_drop does nothing on SIGKILL (the OOM killer, systemd's last resort): the command ran on
    // without the lock, and the next holder started beside it.
    let server = RedisServer::start();
    let mut holder = ratelock(
        &server,
        &["lock", "run", "k9", "--", "sh", "-c", "echo $$; exec sleep 30"],
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    let command: i32 = line.trim().parse().expect("the command's pid");
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(3), || gone(command)),
        "the command {command} still runs"
    );
}

#[test]
fn a_hangup_ignored_at_start_stays_ignored() {
    // nohup ratelock lock run ...: the hangup was caught and passed on, and ended the command (129)
    // that nohup was meant to keep running, as flock(1) does.
    let server = RedisServer::start();
    let binary = env!("CARGO_BIN_EXE_ratelock");
    let script = format!("trap '' HUP; exec {binary} lock run hup -- sh -c 'sleep 1; exit 5'");
    let holder = Command::new("sh")
        .args(["-c", &script])
        .env("RATELOCK_URL", server.url())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    // SAFETY: a signal to the child this test spawned (sh exec'd into ratelock: the same pid).
    unsafe {
        libc::kill(holder.id() as libc::pid_t, libc::SIGHUP);
    }
    let output = holder.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
}

#[test]
fn a_standard_error_gone_changes_no_exit_code_and_leaves_no_lock_taken() {
    // The note on processes left running was an eprintln!, which panicked on the closed pipe: exit 101
    // for the command's 3, and the lock stayed taken until its lease ran out.
    let server = RedisServer::start();
    let mut run = without_terminal(ratelock(
        &server,
        &["lock", "run", "unread", "--", "sh", "-c", "sleep 1 & exit 3"],
    ))
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    drop(run.stderr.take());
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    assert!(!force_free(&server, "unread"), "the lock was given back");
}
