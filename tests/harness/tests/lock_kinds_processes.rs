//! Fair and read-write locks across OS processes on one Redis: a fair lock served in the order the
//! processes queued; a writer in one process served before a reader that came after it in another;
//! and readers sharing while writers exclude everyone, across processes, with unique tokens.

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use ratelock::{FairLock, LockOptions, ReadWriteLock, Store, StoreOptions};
use ratelock_testkit::{eventually_async, RedisServer};

const WAIT: Duration = Duration::from_secs(10);

struct Worker {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Worker {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lock_kinds_worker"))
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start a lock worker");
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Worker { child, lines }
    }

    fn hold(url: &str, name: &str, kind: &str, hold_ms: u64) -> Self {
        Worker::start(&["hold", url, name, kind, &hold_ms.to_string(), "2000"])
    }

    /// (fencing token, µs entered, µs left) of a `hold` worker, once it is done.
    fn finish(mut self) -> (u64, u64, u64) {
        let granted = self.lines.next().unwrap().unwrap();
        let left = self.lines.next().unwrap().unwrap();
        assert!(self.child.wait().unwrap().success(), "a worker failed");
        let numbers: Vec<u64> = granted.split(' ').skip(1).map(|n| n.parse().unwrap()).collect();
        let left: u64 = left.strip_prefix("left ").unwrap().parse().unwrap();
        (numbers[0], numbers[1], left)
    }
}

#[tokio::test]
async fn processes_get_a_fair_lock_in_the_order_they_queued() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let lock = FairLock::new(&store, "queue", LockOptions::default()).unwrap();
    let first = lock.acquire(WAIT).await.unwrap();
    let mut workers = Vec::new();
    for n in 0..4u64 {
        workers.push(Worker::hold(&server.url(), "queue", "fair", 20));
        eventually_async("the process queues", async || {
            lock.state().await.unwrap().waiting == n + 1
        })
        .await;
    }
    first.release().await.unwrap();
    let holds: Vec<_> = workers.into_iter().map(Worker::finish).collect();
    for pair in holds.windows(2) {
        let ((fence_a, _, left_a), (fence_b, entered_b, _)) = (pair[0], pair[1]);
        assert!(entered_b >= left_a, "out of order or overlapping: {holds:?}");
        assert!(fence_b > fence_a, "tokens did not rise: {holds:?}");
    }
}

#[tokio::test]
async fn a_queued_writer_goes_before_a_later_reader_in_another_process() {
    let server = RedisServer::start();
    let store = Store::connect(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    let lock = ReadWriteLock::new(&store, "doc", LockOptions::default()).unwrap();
    let reading = lock.acquire_read(WAIT).await.unwrap();
    let writer = Worker::hold(&server.url(), "doc", "write", 50);
    eventually_async("the writer waits", async || {
        lock.state().await.unwrap().waiting_writers == 1
    })
    .await;
    let reader = Worker::hold(&server.url(), "doc", "read", 10);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        lock.state().await.unwrap().readers,
        1,
        "the later reader got in ahead of the writer"
    );
    reading.release().await.unwrap();
    let (write_fence, _, write_left) = writer.finish();
    let (read_fence, read_entered, _) = reader.finish();
    assert!(read_entered >= write_left, "the reader overlapped the writer");
    assert!(read_fence > write_fence);
}

#[test]
fn processes_share_reads_and_exclude_writes() {
    let server = RedisServer::start();
    let workers: Vec<_> = (0..3)
        .map(|_| Worker::start(&["contend", &server.url(), "table", "4", "25"]))
        .collect();
    let mut holds: Vec<(char, u64, u64, u64)> = Vec::new();
    for Worker { mut child, lines } in workers {
        for line in lines.map(|line| line.unwrap()) {
            let parts: Vec<&str> = line.split(' ').collect();
            let numbers: Vec<u64> = parts[1..].iter().map(|n| n.parse().unwrap()).collect();
            holds.push((
                parts[0].chars().next().unwrap(),
                numbers[0],
                numbers[1],
                numbers[2],
            ));
        }
        assert!(child.wait().unwrap().success(), "a worker failed");
    }
    assert_eq!(holds.len(), 3 * 4 * 25);
    let mut tokens: Vec<u64> = holds.iter().map(|h| h.1).collect();
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), holds.len(), "two grants with one token");
    let overlap = |a: &(char, u64, u64, u64), b: &(char, u64, u64, u64)| a.2 < b.3 && b.2 < a.3;
    let mut shared_reads = 0;
    for (i, a) in holds.iter().enumerate() {
        for b in &holds[i + 1..] {
            if overlap(a, b) {
                assert!(
                    a.0 == 'r' && b.0 == 'r',
                    "a write hold overlapped another hold: {a:?} {b:?}"
                );
                shared_reads += 1;
            }
        }
    }
    assert!(shared_reads > 0, "no two reads ever overlapped");
}
