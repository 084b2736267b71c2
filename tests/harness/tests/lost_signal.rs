//! The lost signal of the fault suite: a hold that can no longer be renewed is signalled lost no later
//! than its lease's end plus a bound, and a client that was itself stopped (SIGSTOP) past its lease
//! hears it within the bound of waking (the time it was stopped does not count). Bound: 100 ms, well
//! above the watchdog's own reaction (it wakes at the lease end it counted from the request's send) and
//! a scheduler's jitter on a loaded 2-core machine. The signal says why: expired, taken, or a renewal
//! refused for good (then at once, not at the lease's end).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ratelock::{DistributedLock, FairLock, LockOptions, LostReason, Store, StoreOptions};
use ratelock_testkit::answering_proxy::AnsweringProxy;
use ratelock_testkit::fault::{Fault, FaultProxy};
use ratelock_testkit::RedisServer;

const BOUND: Duration = Duration::from_millis(100);
const TTL: Duration = Duration::from_millis(300);

/// Takes a lock through `url`, cuts it off with `cut_off`, and measures when the lost signal fires
/// against the latest end the lease can have: its grant's complete plus the ttl. The answer is how much
/// later than a plain timer set for that same moment it fired: a stalled machine delays both alike.
async fn lost_after_lease_end(url: &str, cut_off: impl FnOnce()) -> Duration {
    let options = StoreOptions::default().with_timeout(Duration::from_millis(100));
    let store = Store::connect(url, &options).await.unwrap();
    let lock = DistributedLock::new(&store, "lost:bound", LockOptions::default().with_ttl(TTL)).unwrap();
    let guard = lock.try_acquire().await.unwrap().expect("free");
    let latest_lease_end = Instant::now() + TTL;
    let control = tokio::spawn(async move {
        tokio::time::sleep_until(latest_lease_end.into()).await;
        Instant::now().saturating_duration_since(latest_lease_end)
    });
    cut_off();
    tokio::time::timeout(Duration::from_secs(5), guard.lost())
        .await
        .expect("the loss is signalled");
    let late = Instant::now().saturating_duration_since(latest_lease_end);
    assert_eq!(guard.lost_reason(), Some(LostReason::Expired));
    let timer_late = control.await.unwrap();
    eprintln!("a plain timer for the lease end woke {timer_late:?} late");
    late.saturating_sub(timer_late)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_cut_off_from_its_server_is_signalled_lost_within_the_bound_of_its_lease_end() {
    let server = RedisServer::start();
    let proxy = FaultProxy::start(server.port(), 1, 21);
    let partition = Fault {
        partitioned: true,
        ..Fault::default()
    };
    let late = lost_after_lease_end(&proxy.url(0), || proxy.set(0, partition)).await;
    eprintln!("partitioned: lost {late:?} after the latest lease end (beyond the timer's lateness)");
    assert!(late <= BOUND, "lost {late:?} after the lease's end");
    proxy.set(0, Fault::default());

    let frozen = RedisServer::start();
    let late = lost_after_lease_end(&frozen.url(), || frozen.pause()).await;
    frozen.resume();
    eprintln!("server frozen: lost {late:?} after the latest lease end (beyond the timer's lateness)");
    assert!(late <= BOUND, "lost {late:?} after the lease's end");
}

#[test]
fn a_client_stopped_past_its_lease_hears_it_lost_within_the_bound_of_waking() {
    let server = RedisServer::start();
    let mut worker = Command::new(env!("CARGO_BIN_EXE_lock_worker"))
        .args([
            "pause",
            &server.url(),
            "lost:stopped",
            &TTL.as_millis().to_string(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the worker");
    let mut lines = BufReader::new(worker.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let token: u64 = first
        .strip_prefix("acquired ")
        .expect("acquired")
        .parse()
        .unwrap();
    let pid = worker.id().to_string();
    let signal = |which: &str| {
        assert!(Command::new("kill")
            .args([which, &pid])
            .status()
            .unwrap()
            .success())
    };
    signal("-STOP");
    std::thread::sleep(TTL * 3);
    // Meanwhile the lease ran out and someone else took the lock, with a higher token.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let taken = runtime.block_on(async {
        let store = Store::connect(&server.url(), &Default::default()).await.unwrap();
        let lock = DistributedLock::new(&store, "lost:stopped", Default::default()).unwrap();
        lock.try_acquire()
            .await
            .unwrap()
            .expect("the stopped client's lease ran out")
    });
    assert!(taken.fencing_token() > token);
    let woken = Instant::now();
    signal("-CONT");
    let heard = lines.next().unwrap().unwrap();
    let late = woken.elapsed();
    assert_eq!(heard, "lost");
    eprintln!("stopped past its lease: lost {late:?} after waking");
    assert!(late <= BOUND, "lost {late:?} after waking");
    let released = lines.next().unwrap().unwrap();
    assert!(
        released.contains("HeldByOther"),
        "its release changes nothing: {released}"
    );
    let _ = worker.wait();
    runtime.block_on(async { taken.release().await.unwrap() });
}

/// A renewal the store refuses with a reply nobody knows cannot succeed later: the hold is lost at once,
/// saying why, instead of being renewed in vain until its lease runs out. (The proxy answers only the
/// fair lock's `extend` operation.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_refused_for_good_loses_the_hold_at_once_and_says_why() {
    let server = RedisServer::start();
    let proxy = AnsweringProxy::start_matching(server.port(), "-NEWCODE never seen", "extend");
    let store = Store::connect(&proxy.url(), &StoreOptions::default())
        .await
        .unwrap();
    let ttl = Duration::from_secs(3);
    let lock = FairLock::new(&store, "lost:refused", LockOptions::default().with_ttl(ttl)).unwrap();
    let guard = lock.try_acquire().await.unwrap().expect("free");
    let taken = Instant::now();
    tokio::time::timeout(ttl, guard.lost())
        .await
        .expect("lost before the lease's end");
    // The first renewal goes out at a third of the ttl.
    assert!(
        taken.elapsed() < ttl / 3 + Duration::from_millis(500),
        "lost after {:?}",
        taken.elapsed()
    );
    match guard.lost_reason() {
        Some(LostReason::Failed(error)) => assert!(error.is_protocol(), "{error}"),
        other => panic!("lost for {other:?}"),
    }
}
