//! `FaultProxy`: a TCP proxy on loopback between clients and one redis-server, with faults switched on
//! and off while traffic flows. Clients reach it through doors (one listening port per group of
//! clients), so a fault can hit one group and spare the others: a partition of some clients from a
//! server is a fault on their door. It runs on a thread and runtime of its own, so sync tests, async
//! tests and other processes (through the `fault_proxy` binary) use it alike.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::plan::SplitMix;

/// What a door does to the bytes through it. The default passes everything at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fault {
    /// Added to every chunk, each way.
    pub latency: Duration,
    /// Up to this much more, drawn per chunk from the door's seeded generator.
    pub jitter: Duration,
    /// Replies are held (not lost): they arrive when the stall ends (a black hole while it lasts).
    pub stall_replies: bool,
    /// Replies are thrown away: the server keeps going, the client hears nothing (half-open).
    pub drop_replies: bool,
    /// Nothing passes either way, and new connections are held unanswered, until it ends.
    pub partitioned: bool,
    /// Bytes per second each way (`None`: no limit).
    pub bandwidth: Option<u64>,
}

impl Fault {
    /// Replies thrown away while the server runs every command: a call whose answer never comes.
    pub const DROP_REPLIES: Fault = Fault {
        latency: Duration::ZERO,
        jitter: Duration::ZERO,
        stall_replies: false,
        drop_replies: true,
        partitioned: false,
        bandwidth: None,
    };
}

/// One door's fault and the cuts made to its connections.
struct Door {
    port: u16,
    fault: watch::Sender<Fault>,
    /// Bumped by `cut`: every connection opened before it is reset.
    cuts: watch::Sender<u64>,
    /// The connections open through the door: an id each, and the cut count when it opened.
    open: Mutex<Vec<(u64, u64)>>,
    next_id: AtomicU64,
    seed: AtomicU64,
}

impl Door {
    /// Keeps `cuts_seen` (the cut count a new connection opened at) until the guard drops.
    fn opened(&self, cuts_seen: u64) -> Opened<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock_open().push((id, cuts_seen));
        Opened { door: self, id }
    }

    fn lock_open(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u64)>> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A connection's place in its door's `open` list, taken off when the connection ends.
struct Opened<'d> {
    door: &'d Door,
    id: u64,
}

impl Drop for Opened<'_> {
    fn drop(&mut self) {
        self.door.lock_open().retain(|(id, _)| *id != self.id);
    }
}

/// A proxy for one upstream server with `doors` listening ports. Dropping it stops every connection.
pub struct FaultProxy {
    doors: Arc<Vec<Door>>,
    runtime: Option<tokio::runtime::Runtime>,
    /// Bytes carried from the server to clients and thrown away (half-open), for tests and tables.
    dropped: Arc<AtomicU64>,
}

impl FaultProxy {
    /// A proxy in front of `127.0.0.1:upstream` with `doors` doors, jitter drawn from `seed`.
    pub fn start(upstream: u16, doors: usize, seed: u64) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fault-proxy")
            .enable_all()
            .build()
            .expect("a runtime for the fault proxy");
        let listeners: Vec<TcpListener> = (0..doors.max(1))
            .map(|_| {
                let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
                listener.set_nonblocking(true).expect("non-blocking listener");
                let _guard = runtime.enter();
                TcpListener::from_std(listener).expect("a tokio listener")
            })
            .collect();
        let doors: Arc<Vec<Door>> = Arc::new(
            listeners
                .iter()
                .enumerate()
                .map(|(index, listener)| Door {
                    port: listener.local_addr().expect("bound").port(),
                    fault: watch::channel(Fault::default()).0,
                    cuts: watch::channel(0).0,
                    open: Mutex::new(Vec::new()),
                    next_id: AtomicU64::new(0),
                    seed: AtomicU64::new(seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                })
                .collect(),
        );
        let dropped = Arc::new(AtomicU64::new(0));
        for (index, listener) in listeners.into_iter().enumerate() {
            let (doors, dropped) = (doors.clone(), dropped.clone());
            runtime.spawn(accept(listener, upstream, doors, index, dropped));
        }
        FaultProxy {
            doors,
            runtime: Some(runtime),
            dropped,
        }
    }

    /// The port clients of group `door` connect to.
    pub fn port(&self, door: usize) -> u16 {
        self.doors[door].port
    }

    /// `redis://127.0.0.1:<port of door>/`.
    pub fn url(&self, door: usize) -> String {
        format!("redis://127.0.0.1:{}/", self.port(door))
    }

    /// Every door's URL, in door order.
    pub fn urls(&self) -> Vec<String> {
        (0..self.doors()).map(|door| self.url(door)).collect()
    }

    /// How many doors there are.
    pub fn doors(&self) -> usize {
        self.doors.len()
    }

    /// Sets door `door`'s fault (it applies to the bytes that arrive from now on).
    pub fn set(&self, door: usize, fault: Fault) {
        self.doors[door].fault.send_replace(fault);
    }

    /// Sets the same fault on every door.
    pub fn set_all(&self, fault: Fault) {
        for door in 0..self.doors.len() {
            self.set(door, fault);
        }
    }

    /// Door `door`'s fault now.
    pub fn fault(&self, door: usize) -> Fault {
        *self.doors[door].fault.borrow()
    }

    /// Resets every connection open through door `door` (the client sees RST); new ones still open. It
    /// returns once those connections are reset (within 2 s), so that the caller's next step meets the
    /// reset rather than racing the proxy's thread to it.
    pub fn cut(&self, door: usize) {
        let door = &self.doors[door];
        let mut made = 0;
        door.cuts.send_modify(|cuts| {
            *cuts += 1;
            made = *cuts;
        });
        let deadline = Instant::now() + Duration::from_secs(2);
        while door.lock_open().iter().any(|(_, seen)| *seen < made) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Bytes of replies thrown away so far (half-open).
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Accepts the clients of door `index`; each is served by its own task.
async fn accept(
    listener: TcpListener,
    upstream: u16,
    doors: Arc<Vec<Door>>,
    index: usize,
    dropped: Arc<AtomicU64>,
) {
    while let Ok((client, _)) = listener.accept().await {
        let (doors, dropped) = (doors.clone(), dropped.clone());
        tokio::spawn(async move {
            let _ = carry(client, upstream, &doors[index], &dropped).await;
        });
    }
}

/// Carries one client's connection both ways until either side closes or the door cuts it.
async fn carry(client: TcpStream, upstream: u16, door: &Door, dropped: &AtomicU64) -> std::io::Result<()> {
    let _ = client.set_nodelay(true);
    // The cuts this connection has seen, and its place among the door's open connections (dropped
    // last, once the sockets are): a later cut resets it, and `cut` waits for that.
    let mut cuts = door.cuts.subscribe();
    let seen = *cuts.borrow_and_update();
    let _opened = door.opened(seen);
    let mut fault = door.fault.subscribe();
    // A partitioned door holds a new client unanswered: no server connection until it heals.
    if fault.borrow().partitioned {
        tokio::select! {
            biased;
            _ = cuts.changed() => return reset(client),
            _ = fault.wait_for(|f| !f.partitioned) => {}
        }
    }
    let server = TcpStream::connect(("127.0.0.1", upstream)).await?;
    let _ = server.set_nodelay(true);
    let (client_in, client_out) = client.into_split();
    let (server_in, server_out) = server.into_split();
    let seed = door.seed.fetch_add(1, Ordering::Relaxed);
    // Each pump watches for cuts from what this connection has seen: a cut made while it connected
    // upstream is not missed.
    let requests = pump(
        (client_in, server_out),
        door,
        cuts.clone(),
        Way::Requests,
        SplitMix::new(seed),
        dropped,
    );
    let replies = pump(
        (server_in, client_out),
        door,
        cuts,
        Way::Replies,
        SplitMix::new(!seed),
        dropped,
    );
    // Either way ending ends the connection (its halves are dropped). A cut is seen by both pumps; the
    // first to see it sets zero linger on the sockets it holds (both, between them), so the drop sends
    // RST to the client and to the server.
    tokio::select! {
        ended = requests => ended,
        ended = replies => ended,
    }
}

/// Which way bytes go through a connection.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    Requests,
    Replies,
}

/// Moves bytes from `from` to `to`, applying the door's fault to each chunk as it arrives.
async fn pump(
    (mut from, mut to): (OwnedReadHalf, OwnedWriteHalf),
    door: &Door,
    mut cuts: watch::Receiver<u64>,
    way: Way,
    mut rng: SplitMix,
    dropped: &AtomicU64,
) -> std::io::Result<()> {
    let mut fault = door.fault.subscribe();
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::select! {
            read = from.read(&mut buffer) => read?,
            _ = cuts.changed() => return reset_halves(from, to),
        };
        if n == 0 {
            let _ = to.shutdown().await;
            return Ok(());
        }
        let now = *fault.borrow_and_update();
        if way == Way::Replies && now.drop_replies && !now.partitioned {
            dropped.fetch_add(n as u64, Ordering::Relaxed);
            continue;
        }
        // Held while stalled or partitioned: delivered when that ends, unless the door cuts first. A cut
        // made before the fault is lifted wins even when this task wakes to find both (biased: left to
        // chance, a test that cuts and then heals would see the held bytes delivered half the time).
        let held = |f: &Fault| f.partitioned || (way == Way::Replies && f.stall_replies);
        if held(&now) {
            tokio::select! {
                biased;
                _ = cuts.changed() => return reset_halves(from, to),
                _ = fault.wait_for(|f| !held(f)) => {}
            }
        }
        let now = *fault.borrow();
        if way == Way::Replies && now.drop_replies {
            dropped.fetch_add(n as u64, Ordering::Relaxed);
            continue;
        }
        let mut delay = now.latency;
        if !now.jitter.is_zero() {
            delay += Duration::from_nanos(rng.below(now.jitter.as_nanos() as u64 + 1));
        }
        if let Some(bandwidth) = now.bandwidth {
            delay += Duration::from_secs_f64(n as f64 / bandwidth.max(1) as f64);
        }
        if !delay.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = cuts.changed() => return reset_halves(from, to),
            }
        }
        to.write_all(&buffer[..n]).await?;
    }
}

/// Resets a connection: zero linger, so closing it sends RST instead of FIN.
fn reset(stream: TcpStream) -> std::io::Result<()> {
    stream.set_zero_linger()
}

/// [`reset`] for a connection split in halves (the client's socket is whichever half faces it; both
/// are reset, which a server also sees as a dropped connection).
fn reset_halves(from: OwnedReadHalf, to: OwnedWriteHalf) -> std::io::Result<()> {
    let _ = from.as_ref().set_zero_linger();
    let _ = to.as_ref().set_zero_linger();
    Ok(())
}
