//! Finished limiter checks (`check_async`: hits and peeks, the hot path) handed back to an asyncio event
//! loop without the runtime thread ever taking the GIL. A finished check is queued here and, when the
//! queue was empty, one byte is written to a socket the loop watches (`loop.add_reader`); the loop then
//! drains every finished check at once and resolves their futures. Under load many completions share one
//! wake-up and the GIL stays with the loop. (The limiter's other calls are awaitables of the runtime.)

use std::future::Future;
use std::io::{Read, Write};
use std::panic::AssertUnwindSafe;
use std::task::Poll;

use futures_util::FutureExt;
use parking_lot::Mutex;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;

use crate::decision::PyDecision;
use crate::runtime::{poll_here, runtime, settle};

/// What a finished call delivers to its asyncio future: the limiter's decision, or its error.
pub(crate) type Answer = PyResult<PyDecision>;

/// The finished-call queue of one asyncio event loop (`ratelock.asyncio` makes one per loop).
#[pyclass(name = "Completions", module = "ratelock._native", frozen)]
pub(crate) struct Completions {
    shared: std::sync::Arc<Shared>,
    wake_reader: sockets::Socket,
    /// The loop, weakly: `ratelock.asyncio` keeps each loop's queue in a `WeakKeyDictionary`, whose
    /// entry (with this queue's sockets) goes with the loop only if its value does not keep the loop.
    event_loop: Py<PyWeakrefReference>,
}

/// The half the runtime thread uses.
struct Shared {
    finished: Mutex<Vec<(Py<PyAny>, Answer)>>,
    wake_writer: sockets::Socket,
}

#[pymethods]
impl Completions {
    /// A queue whose futures belong to `event_loop`; register `fileno()` with `add_reader(fd, drain)`.
    #[new]
    fn new(event_loop: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (wake_reader, wake_writer) = sockets::pair()?;
        Ok(Completions {
            shared: std::sync::Arc::new(Shared {
                finished: Mutex::new(Vec::new()),
                wake_writer,
            }),
            wake_reader,
            event_loop: PyWeakrefReference::new(event_loop)?.unbind(),
        })
    }

    /// The descriptor that becomes readable when finished calls wait to be drained.
    fn fileno(&self) -> i64 {
        sockets::descriptor(&self.wake_reader)
    }

    /// Resolves the future of every finished call (the loop's reader callback). A future cancelled
    /// meanwhile is skipped; the first failure to resolve one is raised after all others are resolved.
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        let mut sink = [0u8; 64];
        while let Ok(read) = (&self.wake_reader).read(&mut sink) {
            if read < sink.len() {
                break;
            }
        }
        let batch = std::mem::take(&mut *self.shared.finished.lock());
        // The checks' measurements (made on the runtime's thread) are recorded before their futures
        // resolve.
        crate::metrics_queue::drain(py);
        let mut first_failure = None;
        for (future, answer) in batch {
            if let Err(failure) = resolve(py, future.bind(py), answer) {
                first_failure.get_or_insert(failure);
            }
        }
        first_failure.map_or(Ok(()), Err)
    }
}

impl Completions {
    /// Starts `work` and returns an asyncio future of its answer. `work` is polled once right here, so a
    /// call that needs no I/O (the memory store) resolves at once; otherwise it goes on on the runtime.
    pub(crate) fn submit<'py, F>(&self, py: Python<'py>, work: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: Future<Output = Answer> + Send + 'static,
    {
        let Some(event_loop) = self.event_loop.bind(py).upgrade() else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the event loop of this call is gone",
            ));
        };
        let future = event_loop.call_method0(intern!(py, "create_future"))?;
        let mut work = Box::pin(AssertUnwindSafe(work).catch_unwind());
        match poll_here(work.as_mut()) {
            Poll::Ready(outcome) => resolve(py, &future, settle(outcome))?,
            Poll::Pending => {
                if let Err(exiting) = crate::runtime::live() {
                    resolve(py, &future, Err(exiting))?;
                    return Ok(future);
                }
                let (shared, target) = (self.shared.clone(), future.clone().unbind());
                runtime().spawn(async move {
                    let answer = settle(work.await);
                    shared.push(target, answer);
                });
            }
        }
        Ok(future)
    }
}

impl Shared {
    /// Queues a finished call; the first one queued since the last drain wakes the loop.
    fn push(&self, future: Py<PyAny>, answer: Answer) {
        let first = {
            let mut finished = self.finished.lock();
            finished.push((future, answer));
            finished.len() == 1
        };
        if first {
            // A full socket buffer (WouldBlock) means wake-ups are already pending.
            let _ = (&self.wake_writer).write(&[1]);
        }
    }
}

fn resolve(py: Python<'_>, future: &Bound<'_, PyAny>, answer: Answer) -> PyResult<()> {
    if future.call_method0(intern!(py, "done"))?.is_truthy()? {
        return Ok(());
    }
    match answer {
        Ok(decision) => future.call_method1(intern!(py, "set_result"), (Py::new(py, decision)?,))?,
        Err(error) => future.call_method1(intern!(py, "set_exception"), (error.into_value(py),))?,
    };
    Ok(())
}

/// A connected, non-blocking socket pair for the wake-ups: a Unix socket pair where there is one,
/// otherwise two loopback TCP sockets (what an asyncio selector loop can watch on Windows).
mod sockets {
    use pyo3::PyResult;

    #[cfg(unix)]
    pub(super) type Socket = std::os::unix::net::UnixStream;
    #[cfg(not(unix))]
    pub(super) type Socket = std::net::TcpStream;

    pub(super) fn pair() -> PyResult<(Socket, Socket)> {
        #[cfg(unix)]
        let (reader, writer) = Socket::pair()?;
        #[cfg(not(unix))]
        let (reader, writer) = {
            let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
            let writer = Socket::connect(listener.local_addr()?)?;
            (listener.accept()?.0, writer)
        };
        reader.set_nonblocking(true)?;
        writer.set_nonblocking(true)?;
        Ok((reader, writer))
    }

    pub(super) fn descriptor(socket: &Socket) -> i64 {
        #[cfg(unix)]
        return i64::from(std::os::fd::AsRawFd::as_raw_fd(socket));
        #[cfg(not(unix))]
        return std::os::windows::io::AsRawSocket::as_raw_socket(socket) as i64;
    }
}
