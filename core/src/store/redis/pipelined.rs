//! The async connection to one server (`redis://`, `rediss://`, `redis+unix://`): one socket shared by
//! every call of the process,
//! calls pipelined (a writer task drains every queued call into one write, a reader task matches
//! replies to calls in the same order; a lone caller, with nothing queued or in flight, writes its
//! call itself and saves the writer task's wake-up), replacing redis-rs's reconnecting manager there so that the
//! connection lifecycle is ratelock's own:
//! - a connection the server or a proxy closed (FIN or RST: an idle timeout, `CLIENT KILL`) is found
//!   before a call is written to it, and the call goes out on a fresh connection;
//! - a write that left no byte is tried once more on a fresh connection;
//! - a call that may have reached the server is never sent again: a close while waiting fails it;
//! - a timed-out call's reply is still read, in order, and dropped.
//!
//! Whether a call may go out again is [`CallAttempt`]'s answer. The store reports what its calls meet
//! to its circuit breaker; a call that times out also retires the connection it went out on.
//!
//! The socket is TCP, a Unix socket or TLS over TCP, `#insecure` included (see `stream.rs`). A
//! cluster's nodes and the master the sentinels name are reached over it too (`cluster_node.rs`,
//! `sentinel_master.rs`); RESP3 stays on redis-rs's connection.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use redis::Value;
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, oneshot};

use super::endpoint::Endpoint;
use super::socket_peek::{self, Peeked};
use super::stream::{self, Opened, ReadHalf, WriteHalf};
use super::tls_settings::TlsSettings;
use super::wire_reader::{Reply, ReplyReader};
use crate::error::{Error, Result};
use crate::store::connection_core::{
    connect_timed_out, preamble_unanswered, transport_error, CallAttempt, Next, Written,
};

/// The shared connection of one server (cheap to clone).
#[derive(Clone)]
pub(crate) struct Pipelined {
    shared: Arc<Shared>,
}

struct Shared {
    endpoint: Endpoint,
    /// `rediss://`: what the socket trusts and presents.
    tls: TlsSettings,
    timeout: Duration,
    /// The open link, read without waiting by every call.
    current: Mutex<Option<Arc<Link>>>,
    /// Held while a link is replaced (by whoever finds it closed), so one caller connects.
    link: tokio::sync::Mutex<()>,
    /// Bumped at every new socket: what the server was found to run is checked again.
    opened: Arc<AtomicU64>,
}

/// One socket: its write half, the queue of its writer task, the calls waiting for replies in write
/// order, and whether it is closed (the reader met the end of the stream, or a write failed).
struct Link {
    writer: WriteHalf,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    /// Calls handed to the writer task and not yet written (queued, or in its current write). Held
    /// while a call is queued or written directly, so that bytes leave in the order answers wait.
    unwritten: Mutex<usize>,
    waiting: Mutex<VecDeque<oneshot::Sender<Answer>>>,
    closed: AtomicBool,
    /// The error of a reply after which the server closed the connection (`ERR Protocol error`, as to a
    /// client that has not authenticated since a password was set), or of the TLS alert by which it
    /// refused the client (`tls-auth-clients`): what a call that this link left unsent answers when it
    /// cannot go out again, since the server refuses every call alike.
    refusal: Mutex<Option<Error>>,
    /// Set, and waiters woken, when the reader task has ended (the stream ended, or a reply closed it).
    reader_ended: AtomicBool,
    reader_end: tokio::sync::Notify,
    /// Dropped with the link, which stops its reader task: the socket then closes. A TLS stream's
    /// halves share one socket, so dropping the write half sends no FIN, and the reader, blocked on a
    /// read that an idle server never answers, kept the socket, the task and a server client open.
    _reader_stop: oneshot::Sender<()>,
    #[cfg(unix)]
    fd: std::os::fd::RawFd,
}

/// One call handed to a link's writer task: its bytes and where its answer goes, or the rest of a call
/// its caller began to write (its answer already waits for the reply).
struct Outgoing {
    bytes: Vec<u8>,
    answer: Option<oneshot::Sender<Answer>>,
}

/// What a call hears back.
enum Answer {
    /// Its reply (or the failure that means it may have run).
    Reply(Result<Value>),
    /// No byte of it left (the link was closed, or the write failed before any byte): its bytes, to send
    /// on a fresh connection.
    Unsent(Vec<u8>),
}

impl Pipelined {
    /// A connection to the server `endpoint` names; nothing is opened yet. `opened` is bumped at every
    /// new socket; on `rediss://`, `tls` says what the socket trusts and presents.
    pub(crate) fn new(
        endpoint: Endpoint,
        tls: TlsSettings,
        timeout: Duration,
        opened: Arc<AtomicU64>,
    ) -> Self {
        Pipelined {
            shared: Arc::new(Shared {
                endpoint,
                tls,
                timeout,
                current: Mutex::new(None),
                link: tokio::sync::Mutex::new(()),
                opened,
            }),
        }
    }

    /// A new connection to the same server, with the same settings and a socket of its own.
    #[cfg(feature = "cluster")]
    pub(crate) fn fresh(&self) -> Pipelined {
        let shared = &self.shared;
        Pipelined::new(
            shared.endpoint.clone(),
            shared.tls.clone(),
            shared.timeout,
            Arc::default(),
        )
    }

    /// Whether `other` is this same connection (a clone of it).
    #[cfg(feature = "sentinel")]
    pub(crate) fn same_as(&self, other: &Pipelined) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Opens the connection now (for a store that connects eagerly), within the timeout.
    pub(crate) async fn open(&self) -> Result<()> {
        let timeout = self.shared.timeout;
        match tokio::time::timeout(timeout, self.link(None)).await {
            Ok(opened) => opened.map(drop),
            Err(_) => Err(connect_timed_out(timeout, self.shared.endpoint.tls())),
        }
    }

    /// Sends one command, already written as RESP bytes, and reads its reply, within the timeout.
    pub(crate) async fn send_written(&self, bytes: Vec<u8>) -> Result<Value> {
        self.send_telling(bytes).await.0
    }

    /// [`send_written`](Self::send_written), also telling whether the call may have reached the server
    /// (false: no byte of it left, so it can go out anywhere again).
    pub(crate) async fn send_telling(&self, bytes: Vec<u8>) -> (Result<Value>, bool) {
        self.send_within(bytes, self.shared.timeout).await
    }

    /// [`send_telling`](Self::send_telling) within `timeout` (what is left of a longer call's).
    pub(crate) async fn send_within(&self, bytes: Vec<u8>, timeout: Duration) -> (Result<Value>, bool) {
        // The link the call went out on: a call that times out retires it (it may be silently dead).
        let mut used: Option<Arc<Link>> = None;
        let call = async {
            let mut bytes = bytes;
            let mut stale = None;
            let mut attempt = CallAttempt::new();
            loop {
                let link = self.link(stale.as_ref()).await?;
                used = Some(link.clone());
                let (answer, heard) = oneshot::channel();
                let written = match link.submit(bytes, answer) {
                    Err(unsent) => {
                        bytes = unsent;
                        Written::Nothing
                    }
                    Ok(()) => match heard.await {
                        Ok(Answer::Reply(reply)) => return reply,
                        Ok(Answer::Unsent(returned)) => {
                            bytes = returned;
                            Written::Nothing
                        }
                        Err(_) => return Err(closed_before_reply()),
                    },
                };
                // The bytes came back: the call is on no connection (a timeout now sent nothing).
                used = None;
                if attempt.written(written) != Next::ResendOnFresh {
                    // A server that refused a call and closed the connection refuses this one too
                    // (its reply may still wait for the reader when the write failed first).
                    return Err(link.refusal_once_read().await.unwrap_or_else(|| {
                        Error::StoreUnavailable(
                            "the connection closed twice before the call could be sent".into(),
                        )
                    }));
                }
                stale = Some(link);
            }
        };
        let replied = match tokio::time::timeout(timeout, call).await {
            Ok(reply) => reply,
            // No connection opened in time: the call never left.
            Err(_) if used.is_none() => Err(connect_timed_out(timeout, self.shared.endpoint.tls())),
            Err(_) => Err(Error::Timeout(timeout)),
        };
        let may_have_run = used.is_some();
        if let (Err(Error::Timeout(_)), Some(link)) = (&replied, used) {
            // Replies still owed on it are read and dropped by its reader; new calls go out on a fresh
            // connection, so a connection that died without a FIN is not used forever.
            link.close();
        }
        (replied, may_have_run)
    }

    /// The open link, or a fresh one when there is none, when it is found closed, or when `stale` (a
    /// link a write just failed on) is still the current one.
    async fn link(&self, stale: Option<&Arc<Link>>) -> Result<Arc<Link>> {
        if let Some(link) = self.usable(stale) {
            return Ok(link);
        }
        let _replacing = self.shared.link.lock().await;
        if let Some(link) = self.usable(stale) {
            return Ok(link);
        }
        // Boxed: a connect (a TLS handshake's, too) is a deep future that every call's would carry.
        let link = Box::pin(self.connect()).await?;
        *self.shared.current.lock() = Some(link.clone());
        self.shared.opened.fetch_add(1, Ordering::Release);
        Ok(link)
    }

    /// The current link if calls may be written to it (closing it if not).
    fn usable(&self, stale: Option<&Arc<Link>>) -> Option<Arc<Link>> {
        let current = self.shared.current.lock().clone()?;
        let is_stale = stale.is_some_and(|stale| Arc::ptr_eq(stale, &current));
        if !is_stale && current.is_open() {
            return Some(current);
        }
        current.close();
        None
    }

    /// Connects, sends the preamble (AUTH, SELECT) and starts the reader task.
    async fn connect(&self) -> Result<Arc<Link>> {
        let endpoint = &self.shared.endpoint;
        let socket = stream::open(endpoint, &self.shared.tls).await?;
        // The preamble's replies wait first; the reader task starts once they are queued.
        let mut setup = Vec::new();
        let waiting = (0..endpoint.preamble_replies())
            .map(|_| {
                let (sender, reply) = oneshot::channel();
                setup.push(reply);
                sender
            })
            .collect();
        let preamble = if setup.is_empty() {
            &[][..]
        } else {
            endpoint.preamble()
        };
        let link = Link::start(socket, waiting, preamble).await?;
        for reply in setup {
            let value = match reply.await {
                Ok(Answer::Reply(Ok(value))) => value,
                Ok(Answer::Reply(Err(err))) if !err.is_store_failure() => return Err(err),
                // Nothing but the preamble was sent: no call may have run.
                _ => return Err(preamble_unanswered(None)),
            };
            Reply(value).into_result()?;
        }
        Ok(link)
    }
}

impl Link {
    /// Writes `preamble` on `socket`, then makes its link and starts its writer and reader tasks;
    /// `waiting` holds the preamble's answers.
    async fn start(
        socket: Opened,
        waiting: VecDeque<oneshot::Sender<Answer>>,
        preamble: &[u8],
    ) -> Result<Arc<Link>> {
        let Opened {
            reader,
            writer,
            #[cfg(unix)]
            fd,
        } = socket;
        if let (_, Some(err)) = writer.write_counted(preamble).await {
            return Err(transport_error(&err, "connecting"));
        }
        let (outgoing, queue) = mpsc::unbounded_channel();
        let (reader_stop, stopped) = oneshot::channel();
        let link = Arc::new(Link {
            writer,
            outgoing,
            unwritten: Mutex::new(0),
            waiting: Mutex::new(waiting),
            closed: AtomicBool::new(false),
            refusal: Mutex::new(None),
            reader_ended: AtomicBool::new(false),
            reader_end: tokio::sync::Notify::new(),
            _reader_stop: reader_stop,
            #[cfg(unix)]
            fd,
        });
        tokio::spawn(write_calls(Arc::downgrade(&link), queue));
        tokio::spawn(read_until_the_end(Arc::downgrade(&link), reader, stopped));
        Ok(link)
    }

    /// Whether calls may still be written: the reader task has not met the end of the stream, and no
    /// close (FIN) or reset (RST) waits unread on the socket.
    fn is_open(&self) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return false;
        }
        // With calls in flight the reader task is reading and meets a close itself; an idle socket is
        // where a close (an idle timeout, CLIENT KILL) can wait unread, so only that one is peeked at.
        !self.waiting.lock().is_empty() || self.peer_is_open()
    }

    #[cfg(unix)]
    fn peer_is_open(&self) -> bool {
        // Bytes waiting are replies the reader task has not taken yet: still open.
        socket_peek::peek(self.fd) != Peeked::Closed
    }

    #[cfg(not(unix))]
    fn peer_is_open(&self) -> bool {
        true
    }

    /// Sends a call's bytes, its answer to come through `answer`; `Err` gives the bytes back when none
    /// of them left (the link is closed, or the write failed at once), for a fresh connection.
    ///
    /// A lone caller (nothing queued, being written or waiting for a reply) writes the bytes itself,
    /// with no wait; what the socket does not take at once goes to the writer task, which also takes
    /// every call made while others are in flight (so that those share writes).
    fn submit(
        &self,
        mut bytes: Vec<u8>,
        answer: oneshot::Sender<Answer>,
    ) -> std::result::Result<(), Vec<u8>> {
        let mut unwritten = self.unwritten.lock();
        let mut answer = Some(answer);
        if *unwritten == 0 {
            let mut waiting = self.waiting.lock();
            if self.closed.load(Ordering::Acquire) {
                // Closed since the caller took it (its reader may have failed every waiting call and
                // ended): nothing would answer this one.
                return Err(bytes);
            }
            if waiting.is_empty() {
                match self.writer.try_write(&bytes) {
                    Ok(sent) if sent == bytes.len() => {
                        waiting.extend(answer.take());
                        return Ok(());
                    }
                    Ok(sent) if sent > 0 => {
                        // The rest goes next, by the writer task; the answer waits for the reply now.
                        waiting.extend(answer.take());
                        bytes.drain(..sent);
                    }
                    Err(err) if err.kind() != std::io::ErrorKind::WouldBlock => {
                        self.close();
                        return Err(bytes);
                    }
                    _ => {}
                }
            }
        }
        let started = answer.is_none();
        match self.outgoing.send(Outgoing { bytes, answer }) {
            Ok(()) => {
                *unwritten += 1;
                Ok(())
            }
            Err(_) if started => {
                // No writer task to finish it (it ended): the call's first bytes left, so it may have run.
                drop(unwritten);
                self.fail_all(|| {
                    Error::StoreUnavailable(
                        "the connection closed while sending (the command may have run)".into(),
                    )
                });
                Ok(())
            }
            Err(refused) => Err(refused.0.bytes),
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// The reply that made the server close this link, once the reader task has read what the server
    /// sent before closing (waiting for it at most [`READER_GRACE`]): `None` when none came.
    async fn refusal_once_read(&self) -> Option<Error> {
        let ended = self.reader_end.notified();
        if !self.reader_ended.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(READER_GRACE, ended).await;
        }
        self.refusal.lock().clone()
    }

    /// Fails every waiting call with `refusal`, the server's answer to every call alike, and keeps it
    /// for the calls this link leaves unsent (see `refusal`).
    fn refuse_all(&self, refusal: Error) {
        *self.refusal.lock() = Some(refusal.clone());
        self.fail_all(|| refusal.clone());
    }

    /// Fails every waiting call with `error()` and marks the link closed.
    fn fail_all(&self, error: impl Fn() -> Error) {
        self.close();
        let waiting = std::mem::take(&mut *self.waiting.lock());
        for waiter in waiting {
            let _ = waiter.send(Answer::Reply(Err(error())));
        }
    }
}

/// How long a failed write waits for the reader task to read what the server sent before the
/// connection broke (a refusal, such as `ERR Protocol error`, is every waiting call's answer then).
const READER_GRACE: Duration = Duration::from_millis(100);

/// The most bytes gathered into one write.
const BATCH_BYTES: usize = 256 * 1024;

/// A link's writer task: takes every call queued so far, queues their answers for the reader in the
/// same order, and writes their bytes in one go.
///
/// While other calls of the link wait for replies (many callers at once), it first lets the tasks
/// already woken run once (one yield), so the calls they make in the same round go out in the same
/// write: a write per call costs the sender a system call and, on loopback, the receiver's network work
/// too. (A lone caller writes its call itself: see [`Link::submit`].)
///
/// A write that fails before any byte left answers its calls `Unsent` (they go out on a fresh
/// connection); after any byte left, it closes the link and the reader fails everything still waiting
/// (those calls may have run).
async fn write_calls(link: std::sync::Weak<Link>, mut queue: mpsc::UnboundedReceiver<Outgoing>) {
    let mut batch = Vec::new();
    let mut calls = Vec::new();
    while let Some(first) = queue.recv().await {
        calls.push(first);
        let mut size = calls[0].bytes.len();
        let mut yielded = false;
        loop {
            match queue.try_recv() {
                Ok(more) => {
                    size += more.bytes.len();
                    calls.push(more);
                    if size >= BATCH_BYTES {
                        break;
                    }
                }
                Err(_) => {
                    let busy = !yielded && link.upgrade().is_some_and(|open| !open.waiting.lock().is_empty());
                    if !busy {
                        break;
                    }
                    yielded = true;
                    tokio::task::yield_now().await;
                }
            }
        }
        let taken = calls.len();
        let open = link.upgrade();
        let Some(open) = open.filter(|link| !link.closed.load(Ordering::Acquire)) else {
            for call in calls.drain(..) {
                if let Some(answer) = call.answer {
                    let _ = answer.send(Answer::Unsent(call.bytes));
                }
            }
            if let Some(open) = link.upgrade() {
                *open.unwritten.lock() -= taken;
            }
            continue;
        };
        batch.clear();
        // A call its caller began to write has bytes on the wire already: a failure now may have run it.
        let mut begun = false;
        let mut answers = Vec::with_capacity(calls.len());
        for call in calls.drain(..) {
            batch.extend_from_slice(&call.bytes);
            match call.answer {
                Some(answer) => answers.push((answer, call.bytes)),
                None => begun = true,
            }
        }
        // The answers are queued before the bytes leave, so that the replies find them in order.
        let count = answers.len();
        let mut bytes_of = Vec::with_capacity(count);
        let closed_meanwhile = {
            let mut waiting = open.waiting.lock();
            // Checked again under the lock that failing every waiting call takes: a reader that has
            // done so since (and ended) would never answer calls queued now.
            let closed = open.closed.load(Ordering::Acquire);
            if !closed {
                for (answer, bytes) in answers.drain(..) {
                    waiting.push_back(answer);
                    bytes_of.push(bytes);
                }
            }
            closed
        };
        if closed_meanwhile {
            for (answer, bytes) in answers {
                let _ = answer.send(Answer::Unsent(bytes));
            }
            *open.unwritten.lock() -= taken;
            continue;
        }
        let (written, failed) = open.writer.write_counted(&batch).await;
        let failed = failed.map(|err| match err.kind() {
            std::io::ErrorKind::WriteZero => "the connection is closed".to_owned(),
            _ => format!("sending: {err}"),
        });
        let Some(why) = failed else {
            *open.unwritten.lock() -= taken;
            continue;
        };
        open.close();
        if written == 0 && !begun {
            // Nothing left: take this batch's answers back (the last ones queued) and say so.
            let taken_back: Vec<_> = {
                let mut waiting = open.waiting.lock();
                let keep = waiting.len().saturating_sub(count);
                waiting.split_off(keep).into_iter().collect()
            };
            for (answer, bytes) in taken_back.into_iter().zip(bytes_of) {
                let _ = answer.send(Answer::Unsent(bytes));
            }
        } else {
            // What the server answered before the connection broke is read first: a refusal it sent
            // then (and closed after) is the answer of every call still waiting.
            let _ = open.refusal_once_read().await;
            open.fail_all(|| Error::StoreUnavailable(format!("{why} (the command may have run)")));
        }
        *open.unwritten.lock() -= taken;
    }
}

/// A link's reader task ([`read_replies`]), then the news that it ended, for calls waiting to know
/// whether the server refused them before it closed the connection.
async fn read_until_the_end(
    reading: std::sync::Weak<Link>,
    reader: ReadHalf,
    stopped: oneshot::Receiver<()>,
) {
    tokio::select! {
        () = read_replies(&reading, reader) => {}
        // The link is gone (nothing waits on its calls any more): the reader and the socket go too.
        _ = stopped => return,
    }
    if let Some(link) = reading.upgrade() {
        link.reader_ended.store(true, Ordering::Release);
        link.reader_end.notify_waiters();
    }
}

/// Matches each reply to the oldest waiting call; at the end of the stream or an unreadable reply,
/// fails every call still waiting (they may have run).
async fn read_replies(reading: &std::sync::Weak<Link>, mut reader: ReadHalf) {
    let mut replies = ReplyReader::new();
    let mut chunk = vec![0u8; 16 * 1024];
    let why = loop {
        let read = match reader.read(&mut chunk).await {
            Ok(0) => break "the server closed the connection".to_owned(),
            Ok(read) => read,
            Err(err) => break format!("reading: {err}"),
        };
        let Some(link) = reading.upgrade() else { return };
        replies.push(&chunk[..read]);
        loop {
            match replies.next_reply() {
                Ok(Some(Reply(value))) => {
                    let closing = super::reply::closes_connection(&value).then(|| value.clone());
                    let waiter = link.waiting.lock().pop_front();
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(Answer::Reply(Ok(value)));
                    }
                    if let Some(reply) = closing {
                        // The server drops what it has not read and closes the connection: the calls
                        // behind this one never ran, and fail as it did (a password set since
                        // connecting refuses them all alike); new calls go out on a fresh connection.
                        let err = Reply(reply).into_result().err().unwrap_or_else(|| {
                            Error::Protocol("the server closes the connection after an error".into())
                        });
                        link.refuse_all(err);
                        return;
                    }
                }
                Ok(None) => break,
                Err(err) => {
                    link.fail_all(|| Error::Protocol(format!("unreadable reply stream: {err}")));
                    return;
                }
            }
        }
    };
    if let Some(link) = reading.upgrade() {
        // The server's TLS alert refusing a client without a certificate (nothing ran): every
        // connection meets it alike, so it is the calls' configuration error, never an outage.
        if let Some(refused) = crate::store::connection_core::client_refused(&why) {
            link.refuse_all(refused);
            return;
        }
        link.fail_all(|| {
            Error::StoreUnavailable(format!("{why} before the reply came (the command may have run)"))
        });
    }
}

fn closed_before_reply() -> Error {
    Error::StoreUnavailable("the connection closed before the reply came (the command may have run)".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpSocket;

    /// The value a call's answer carries.
    async fn reply_of(heard: oneshot::Receiver<Answer>) -> Value {
        match heard.await {
            Ok(Answer::Reply(reply)) => reply.unwrap(),
            _ => panic!("no reply"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_the_socket_takes_in_part_is_finished_before_the_next_goes_out() {
        // Small kernel buffers and a server that does not read yet: a lone caller's 1 MiB call leaves
        // only in part at once, and the writer task must send its rest before the next call's bytes.
        let listening = TcpSocket::new_v4().unwrap();
        listening.set_recv_buffer_size(4096).unwrap();
        listening.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = listening.listen(1).unwrap();
        let client = TcpSocket::new_v4().unwrap();
        client.set_send_buffer_size(4096).unwrap();
        let socket = client.connect(listener.local_addr().unwrap()).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let link = Link::start(Opened::tcp(socket), VecDeque::new(), &[])
            .await
            .unwrap();

        let (big, small) = (vec![b'a'; 1 << 20], b"bbbb".to_vec());
        let (first, first_heard) = oneshot::channel();
        link.submit(big.clone(), first).unwrap();
        assert_eq!(
            *link.unwritten.lock(),
            1,
            "the rest of the call went to the writer task"
        );
        let (second, second_heard) = oneshot::channel();
        link.submit(small.clone(), second).unwrap();

        let mut received = vec![0; big.len() + small.len()];
        let reading = tokio::time::timeout(Duration::from_secs(10), server.read_exact(&mut received));
        reading.await.expect("every byte arrives").unwrap();
        assert!(received[..big.len()] == big[..], "the first call whole, first");
        assert_eq!(&received[big.len()..], &small[..], "then the second");
        server.write_all(b":1\r\n:2\r\n").await.unwrap();
        assert_eq!(reply_of(first_heard).await, Value::Int(1));
        assert_eq!(reply_of(second_heard).await, Value::Int(2));
        // The writer task counts its bytes written once its write returns, which may come after the
        // replies did (another worker thread reads them): waited for, a few seconds at most.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while *link.unwritten.lock() != 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the writer task counted its bytes written"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}
