//! `AnsweringProxy`: a proxy on loopback in front of one redis-server that passes every command through
//! but answers each script call (EVALSHA, EVAL, FCALL and the module's RATELOCK.* commands) itself,
//! with one fixed error reply: what twemproxy or Envoy answer when the server behind them is gone, a
//! code nobody knows, a MOVED from a Cluster node. It stands in for such proxies, to show how every
//! client sorts their replies (outage, configuration, bug).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The reply that makes the proxy answer with an earlier call's reply: the first script call it would
/// answer goes to the server and its reply is kept; every later one is answered with that reply, a
/// well-formed answer to another call (a crossed reply on a live connection).
pub const REPLAY_EARLIER_REPLY: &str = "REPLAY";

/// A running proxy; it stops with the process (tests are short-lived).
pub struct AnsweringProxy {
    port: u16,
    /// While false, every call passes through (see [`set_answering`](Self::set_answering)).
    answering: Arc<AtomicBool>,
}

impl AnsweringProxy {
    /// Listens on a free loopback port, forwards to `127.0.0.1:upstream`, answers script calls with
    /// `reply` (a RESP error line without its CRLF, e.g. `-no upstream host`).
    pub fn start(upstream: u16, reply: &str) -> Self {
        Self::start_matching(upstream, reply, "")
    }

    /// As [`start`](Self::start), but answers only the script calls that have an argument equal to
    /// `argument` (e.g. `withdraw`: one operation of a lock script); every other call passes through.
    /// An empty `argument` matches every script call.
    pub fn start_matching(upstream: u16, reply: &str, argument: &str) -> Self {
        let reply = format!("{reply}\r\n").into_bytes();
        let argument = if argument.is_empty() {
            Vec::new()
        } else {
            format!("\r\n{argument}\r\n").into_bytes()
        };
        let (ready, port) = std::sync::mpsc::channel();
        let answering = Arc::new(AtomicBool::new(true));
        let switch = answering.clone();
        let earlier: Arc<std::sync::Mutex<Option<Vec<u8>>>> = Arc::default();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                ready.send(listener.local_addr().unwrap().port()).unwrap();
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        return;
                    };
                    let answer = Answer {
                        reply: reply.clone(),
                        argument: argument.clone(),
                        answering: switch.clone(),
                        earlier: earlier.clone(),
                    };
                    tokio::spawn(async move {
                        let _ = serve(client, upstream, &answer).await;
                    });
                }
            });
        });
        AnsweringProxy {
            port: port.recv_timeout(Duration::from_secs(5)).unwrap(),
            answering,
        }
    }

    /// Turns the answering on or off (off: the proxy passes every call through, on every connection).
    pub fn set_answering(&self, on: bool) {
        self.answering.store(on, Ordering::SeqCst);
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A `redis://` URL of the proxy.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

/// Whether `name` (upper case) is a script call the proxy answers itself.
fn answered(name: &[u8]) -> bool {
    matches!(
        name,
        b"EVALSHA" | b"EVAL" | b"EVALSHA_RO" | b"EVAL_RO" | b"FCALL" | b"FCALL_RO"
    ) || name.starts_with(b"RATELOCK.")
}

/// Whether the whole command `sent` has `argument` (CRLF-framed) among its arguments; empty: any.
fn has_argument(sent: &[u8], argument: &[u8]) -> bool {
    argument.is_empty() || sent.windows(argument.len()).any(|window| window == argument)
}

/// What the proxy answers, to which calls, and whether it answers at all just now.
struct Answer {
    reply: Vec<u8>,
    argument: Vec<u8>,
    answering: Arc<AtomicBool>,
    /// Under [`REPLAY_EARLIER_REPLY`]: the reply kept from the first call.
    earlier: Arc<std::sync::Mutex<Option<Vec<u8>>>>,
}

impl Answer {
    fn replays(&self) -> bool {
        self.reply == format!("{REPLAY_EARLIER_REPLY}\r\n").as_bytes()
    }
}

async fn serve(mut client: TcpStream, upstream: u16, answer: &Answer) -> std::io::Result<()> {
    let mut server = TcpStream::connect(("127.0.0.1", upstream)).await?;
    let (mut from_client, mut from_server) = (Vec::new(), Vec::new());
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // One whole command at a time: answered here, or forwarded and its one reply relayed.
        let (length, name) = loop {
            if let Some(found) = command(&from_client) {
                break found;
            }
            let read = client.read(&mut chunk).await?;
            if read == 0 {
                return Ok(());
            }
            from_client.extend_from_slice(&chunk[..read]);
        };
        let sent: Vec<u8> = from_client.drain(..length).collect();
        let answers_it = answer.answering.load(Ordering::SeqCst)
            && answered(&name.to_ascii_uppercase())
            && has_argument(&sent, &answer.argument);
        if answers_it && !answer.replays() {
            client.write_all(&answer.reply).await?;
            continue;
        }
        let kept = answer.earlier.lock().unwrap().clone();
        if let (true, Some(earlier)) = (answers_it, kept) {
            client.write_all(&earlier).await?;
            continue;
        }
        server.write_all(&sent).await?;
        let length = loop {
            if let Some(length) = frame(&from_server, 0) {
                break length;
            }
            let read = server.read(&mut chunk).await?;
            if read == 0 {
                return Ok(());
            }
            from_server.extend_from_slice(&chunk[..read]);
        };
        let relayed: Vec<u8> = from_server.drain(..length).collect();
        if answers_it && relayed.first() == Some(&b'*') {
            answer
                .earlier
                .lock()
                .unwrap()
                .get_or_insert_with(|| relayed.clone());
        }
        client.write_all(&relayed).await?;
    }
}

/// The length of the command at the start of `buffer` (an array of bulk strings) and its name.
fn command(buffer: &[u8]) -> Option<(usize, Vec<u8>)> {
    let length = frame(buffer, 0)?;
    let (header, mut at) = line(buffer, 0)?;
    let count: usize = std::str::from_utf8(&header[1..]).ok()?.parse().ok()?;
    if count == 0 {
        return Some((length, Vec::new()));
    }
    let (size, next) = line(buffer, at)?;
    at = next;
    let size: usize = std::str::from_utf8(&size[1..]).ok()?.parse().ok()?;
    Some((length, buffer[at..at + size].to_vec()))
}

/// The line starting at `at` (without CRLF) and where the next one starts.
fn line(buffer: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let end = buffer[at..].windows(2).position(|pair| pair == b"\r\n")? + at;
    Some((&buffer[at..end], end + 2))
}

/// The end of the whole RESP2/RESP3 value starting at `at`, if all of it is in `buffer`.
fn frame(buffer: &[u8], at: usize) -> Option<usize> {
    let (header, next) = line(buffer, at)?;
    let (kind, number) = (header.first()?, std::str::from_utf8(&header[1..]).ok()?);
    match kind {
        b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => Some(next),
        b'$' | b'=' | b'!' => {
            let size: i64 = number.parse().ok()?;
            if size < 0 {
                return Some(next);
            }
            let end = next + size as usize + 2;
            (buffer.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let count: i64 = number.parse().ok()?;
            let items = if matches!(kind, b'%' | b'|') {
                count * 2
            } else {
                count
            };
            let mut end = next;
            for _ in 0..items.max(0) {
                end = frame(buffer, end)?;
            }
            Some(end)
        }
        _ => None,
    }
}
