//! Finished asyncio calls (hits and peeks, the hot path, and every other `x_async`) handed back to their
//! event loop without the runtime thread ever taking the GIL. A finished call is queued here and, when
//! the queue was empty, one byte is written to a socket the loop watches (`loop.add_reader`); the loop
//! then drains every finished call at once, makes each answer a Python object and resolves its future.
//! Under load many completions share one wake-up, and a busy Python thread never stalls the runtime.

use std::future::Future;
use std::io::{Read, Write};
use std::panic::AssertUnwindSafe;
use std::task::Poll;

use futures_util::FutureExt;
use parking_lot::Mutex;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyWeakrefReference;

use crate::decision::PyDecision;
use crate::process_runtime::{poll_here, runtime, settle};
use crate::stale_answers::{Watch, Watched};

/// What a finished call delivers to its asyncio future: its answer, or its error.
pub(crate) type Answer = PyResult<Reply>;

/// A finished call's answer, made a Python object only on the loop's thread (under the GIL).
pub(crate) enum Reply {
    /// A limiter's decision (the hot path: no conversion to box).
    Decision(PyDecision),
    /// Any other answer, with its conversion.
    Value(Conversion),
}

/// How an answer becomes a Python object, run under the GIL.
pub(crate) type Conversion = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>> + Send>;

impl Reply {
    /// `value`, converted when its future resolves.
    pub(crate) fn value<T>(value: T) -> Reply
    where
        T: for<'py> IntoPyObject<'py> + Send + 'static,
    {
        Reply::Value(Box::new(move |py| {
            pyo3::IntoPyObjectExt::into_bound_py_any(value, py)
        }))
    }

    fn into_python(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        match self {
            Reply::Decision(decision) => Ok(Bound::new(py, decision)?.into_any()),
            Reply::Value(convert) => convert(py),
        }
    }
}

/// The finished-call queue of one asyncio event loop, made on the loop's first call
/// ([`Completions::of_running_loop`]).
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
    /// The loop, weakly, for the looks at an undrained queue ([`crate::stale_answers`]).
    event_loop: Py<PyWeakrefReference>,
    watch: Watch,
}

#[pymethods]
impl Completions {
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
        self.shared.watch.drained();
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
    /// The running event loop's queue, made (and its socket watched by the loop) on the loop's first
    /// call. Raises `RuntimeError` outside a running loop, as `asyncio.get_running_loop` does.
    pub(crate) fn of_running_loop(py: Python<'_>) -> PyResult<Bound<'_, Completions>> {
        // Each loop's queue, kept while the loop lives (a `WeakKeyDictionary`: the queue holds its loop
        // weakly, so the entry goes with the loop).
        static QUEUES: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        static RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let event_loop = RUNNING_LOOP.import(py, "asyncio", "get_running_loop")?.call0()?;
        let queues = QUEUES.get_or_try_init(py, || {
            let made = py.import("weakref")?.getattr("WeakKeyDictionary")?.call0()?;
            Ok::<_, PyErr>(made.unbind())
        })?;
        let queues = queues.bind(py);
        if let Ok(found) = queues
            .call_method1(intern!(py, "get"), (&event_loop,))?
            .cast_into::<Completions>()
        {
            return Ok(found);
        }
        let (wake_reader, wake_writer) = sockets::pair()?;
        let weak_loop = PyWeakrefReference::new(&event_loop)?.unbind();
        let made = Bound::new(
            py,
            Completions {
                shared: std::sync::Arc::new(Shared {
                    finished: Mutex::new(Vec::new()),
                    wake_writer,
                    event_loop: weak_loop.clone_ref(py),
                    watch: Watch::default(),
                }),
                wake_reader,
                event_loop: weak_loop,
            },
        )?;
        let descriptor = sockets::descriptor(&made.get().wake_reader);
        event_loop.call_method1(
            intern!(py, "add_reader"),
            (descriptor, made.getattr(intern!(py, "drain"))?),
        )?;
        queues.set_item(&event_loop, &made)?;
        Ok(made)
    }

    /// Starts `work` and returns an asyncio future of its answer. `work` is polled once right here, so a
    /// call that needs no I/O (the memory store) resolves at once and calls reach a connection in the
    /// order the loop made them; otherwise it goes on on the runtime. A hit goes on when its future is
    /// cancelled (its request may be on the wire already): see [`Completions::submit_cancellable`].
    pub(crate) fn submit<'py, F>(&self, py: Python<'py>, work: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: Future<Output = Answer> + Send + 'static,
    {
        self.start(py, work, false)
    }

    /// [`Completions::submit`] for a call that stops when its future is cancelled (an awaiting acquire
    /// gives up its place, a waiting `wait_lost` ends): `work` is dropped on the runtime, as a cancelled
    /// tokio task is, and a lock call gives back what it was granted meanwhile.
    pub(crate) fn submit_cancellable<'py, F>(&self, py: Python<'py>, work: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: Future<Output = Answer> + Send + 'static,
    {
        self.start(py, work, true)
    }

    fn start<'py, F>(&self, py: Python<'py>, work: F, cancellable: bool) -> PyResult<Bound<'py, PyAny>>
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
                if let Err(exiting) = crate::process_runtime::live() {
                    resolve(py, &future, Err(exiting))?;
                    return Ok(future);
                }
                let (shared, target) = (self.shared.clone(), future.clone().unbind());
                if !cancellable {
                    runtime().spawn(async move { shared.push(target, settle(work.await)) });
                    return Ok(future);
                }
                let (work, stop) = futures_util::future::abortable(work);
                runtime().spawn(async move {
                    // Aborted: the future was cancelled, and nothing waits for an answer.
                    if let Ok(outcome) = work.await {
                        shared.push(target, settle(outcome));
                    }
                });
                let on_done = Bound::new(py, StopOnCancel { stop })?;
                future.call_method1(intern!(py, "add_done_callback"), (on_done,))?;
            }
        }
        Ok(future)
    }
}

/// The done callback of a cancellable call's future: a cancelled future drops the call's work. (Done
/// with an answer, the work has ended, and stopping it changes nothing.)
#[pyclass(frozen)]
struct StopOnCancel {
    stop: futures_util::future::AbortHandle,
}

#[pymethods]
impl StopOnCancel {
    fn __call__(&self, _future: &Bound<'_, PyAny>) {
        self.stop.abort();
    }
}

impl Shared {
    /// Queues a finished call; the first one queued since the last drain wakes the loop, and one queued
    /// while no look is scheduled schedules one (a loop closed meanwhile never drains it).
    fn push(self: &std::sync::Arc<Self>, future: Py<PyAny>, answer: Answer) {
        let (first, look) = {
            let mut finished = self.finished.lock();
            finished.push((future, answer));
            (finished.len() == 1, self.watch.needs_look())
        };
        if first {
            // A full socket buffer (WouldBlock) means wake-ups are already pending.
            let _ = (&self.wake_writer).write(&[1]);
        }
        if look {
            crate::stale_answers::look_later(self.clone());
        }
    }
}

impl Watched for Shared {
    fn watch(&self) -> &Watch {
        &self.watch
    }

    fn still_waiting(&self) -> bool {
        let finished = self.finished.lock();
        if finished.is_empty() {
            self.watch.stop();
            return false;
        }
        true
    }

    fn stop_looks(&self) -> bool {
        let finished = self.finished.lock();
        self.watch.stop();
        !finished.is_empty()
    }

    /// A closed loop never runs its reader again, and a collected one is gone: what waits for it is
    /// dropped here, under the GIL (its futures with it; a lock's grant gives itself back).
    fn sweep(&self, py: Python<'_>) {
        let closed = match self.event_loop.bind(py).upgrade() {
            None => true,
            // A loop that cannot say is taken as open: its answers stay.
            Some(event_loop) => event_loop
                .call_method0(intern!(py, "is_closed"))
                .and_then(|closed| closed.is_truthy())
                .unwrap_or(false),
        };
        if !closed {
            return;
        }
        let stale = std::mem::take(&mut *self.finished.lock());
        drop(stale);
    }
}

fn resolve(py: Python<'_>, future: &Bound<'_, PyAny>, answer: Answer) -> PyResult<()> {
    if future.call_method0(intern!(py, "done"))?.is_truthy()? {
        return Ok(());
    }
    match answer.and_then(|reply| reply.into_python(py)) {
        Ok(value) => future.call_method1(intern!(py, "set_result"), (value,))?,
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
