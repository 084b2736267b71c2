//! The async connection to one plain `redis://` server: one socket shared by every call of the process,
//! calls pipelined (written in order under one lock, replies matched to calls in the same order by one
//! reader task), replacing redis-rs's reconnecting manager there so that the connection lifecycle is
//! ratelock's own:
//! - a connection the server or a proxy closed (FIN or RST: an idle timeout, `CLIENT KILL`) is found
//!   before a call is written to it, and the call goes out on a fresh connection;
//! - a write that left no byte is tried once more on a fresh connection;
//! - a call that may have reached the server is never sent again: a close while waiting fails it;
//! - a timed-out call's reply is still read, in order, and dropped.
//!
//! TLS, Unix sockets, cluster and Sentinel stay on redis-rs's connections.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use redis::{Cmd, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use super::wire::Endpoint;
use super::wire_reader::{Reply, ReplyReader};
use crate::error::{Error, Result};

/// The shared connection of one plain server (cheap to clone).
#[derive(Clone)]
pub(crate) struct Pipelined {
    shared: Arc<Shared>,
}

struct Shared {
    endpoint: Endpoint,
    timeout: Duration,
    /// The open link, read without waiting by every call.
    current: Mutex<Option<Arc<Link>>>,
    /// Held while a link is replaced (by whoever finds it closed), so one caller connects.
    link: tokio::sync::Mutex<()>,
}

/// One socket: its write half (one writer at a time), the calls waiting for replies in write order,
/// and whether the reader task met the end of the stream.
struct Link {
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    waiting: Mutex<VecDeque<oneshot::Sender<Result<Value>>>>,
    closed: AtomicBool,
    #[cfg(unix)]
    fd: std::os::fd::RawFd,
}

/// How a write ended.
enum Sent {
    All,
    /// No byte left: safe to send on a fresh connection.
    Nothing(Error),
    /// Some bytes may have left: the command may run.
    Partly(Error),
}

impl Pipelined {
    /// A connection to `url` when it is one plain `redis://` server; nothing is opened yet.
    pub(crate) fn for_url(url: &str, timeout: Duration) -> Option<Self> {
        let endpoint = Endpoint::from_url(url).ok()??;
        Some(Pipelined {
            shared: Arc::new(Shared {
                endpoint,
                timeout,
                current: Mutex::new(None),
                link: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// Opens the connection now (for a store that connects eagerly).
    pub(crate) async fn open(&self) -> Result<()> {
        self.link(None).await.map(drop)
    }

    /// Sends one command and reads its reply, within the timeout.
    pub(crate) async fn send(&self, cmd: &Cmd) -> Result<Value> {
        let timeout = self.shared.timeout;
        let call = async {
            let bytes = cmd.get_packed_command();
            let mut link = self.link(None).await?;
            let mut tried_fresh = false;
            let reply = loop {
                let (sender, reply) = oneshot::channel();
                match link.write(&bytes, sender).await {
                    Sent::All => break reply,
                    Sent::Nothing(_) if !tried_fresh => {
                        tried_fresh = true;
                        link = self.link(Some(&link)).await?;
                    }
                    Sent::Nothing(err) | Sent::Partly(err) => return Err(err),
                }
            };
            reply.await.unwrap_or_else(|_| {
                Err(Error::StoreUnavailable(
                    "the connection closed before the reply came (the command may have run)".into(),
                ))
            })
        };
        tokio::time::timeout(timeout, call)
            .await
            .map_err(|_| Error::Timeout(timeout))?
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
        let link = self.connect().await?;
        *self.shared.current.lock() = Some(link.clone());
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
        let socket = TcpStream::connect((endpoint.host(), endpoint.port()))
            .await
            .map_err(|err| Error::StoreUnavailable(format!("connecting: {err}")))?;
        let _ = socket.set_nodelay(true);
        #[cfg(unix)]
        let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
        let (mut reader, writer) = socket.into_split();
        let link = Arc::new(Link {
            writer: tokio::sync::Mutex::new(writer),
            waiting: Mutex::new(VecDeque::new()),
            closed: AtomicBool::new(false),
            #[cfg(unix)]
            fd,
        });
        let mut setup = Vec::new();
        for _ in 0..endpoint.preamble_replies() {
            let (sender, reply) = oneshot::channel();
            link.waiting.lock().push_back(sender);
            setup.push(reply);
        }
        let reading = Arc::downgrade(&link);
        tokio::spawn(async move {
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
                            let waiter = link.waiting.lock().pop_front();
                            if let Some(waiter) = waiter {
                                let _ = waiter.send(Ok(value));
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
                link.fail_all(|| {
                    Error::StoreUnavailable(format!("{why} before the reply came (the command may have run)"))
                });
            }
        });
        if !setup.is_empty() {
            let mut writer = link.writer.lock().await;
            writer
                .write_all(endpoint.preamble())
                .await
                .map_err(|err| Error::StoreUnavailable(format!("connecting: {err}")))?;
            drop(writer);
            for reply in setup {
                let value = reply
                    .await
                    .unwrap_or_else(|_| Err(Error::StoreUnavailable("closed while connecting".into())))?;
                Reply(value).into_result()?;
            }
        }
        Ok(link)
    }
}

impl Link {
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
        let mut byte = 0u8;
        // SAFETY: a one-byte peek into a local buffer; the descriptor lives as long as the link's
        // write half, which `self` owns.
        let read = unsafe {
            libc::recv(
                self.fd,
                (&mut byte as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        // Bytes waiting are replies the reader task has not taken yet: still open.
        read > 0
            || (read < 0
                && matches!(
                    std::io::Error::last_os_error().kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ))
    }

    #[cfg(not(unix))]
    fn peer_is_open(&self) -> bool {
        true
    }

    /// Queues `reply` for the next reply and writes `bytes`, in one step under the writer lock (so the
    /// queue order is the write order).
    async fn write(&self, bytes: &[u8], reply: oneshot::Sender<Result<Value>>) -> Sent {
        let mut writer = self.writer.lock().await;
        if self.closed.load(Ordering::Acquire) {
            return Sent::Nothing(Error::StoreUnavailable("the connection is closed".into()));
        }
        self.waiting.lock().push_back(reply);
        let mut written = 0;
        while written < bytes.len() {
            match writer.write(&bytes[written..]).await {
                Ok(0) => {
                    return self.write_failed(written, "the connection is closed".into());
                }
                Ok(n) => written += n,
                Err(err) => return self.write_failed(written, format!("sending: {err}")),
            }
        }
        Sent::All
    }

    /// A write that failed: if no byte left, this call's place in the queue is taken back (it is the
    /// last one: the writer lock is held); either way the link is done.
    fn write_failed(&self, written: usize, why: String) -> Sent {
        self.close();
        if written == 0 {
            self.waiting.lock().pop_back();
            return Sent::Nothing(Error::StoreUnavailable(why));
        }
        Sent::Partly(Error::StoreUnavailable(why))
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Fails every waiting call with `error()` and marks the link closed.
    fn fail_all(&self, error: impl Fn() -> Error) {
        self.close();
        let waiting = std::mem::take(&mut *self.waiting.lock());
        for waiter in waiting {
            let _ = waiter.send(Err(error()));
        }
    }
}
