//! The one tokio runtime of the Python process, and `run`: the GIL is released for the whole call and
//! a panic becomes a Python exception instead of crossing into the interpreter.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::LazyLock;

use pyo3::prelude::*;

use crate::errors::{internal_error, to_py};

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("ratelock")
        .enable_all()
        .build()
        .expect("ratelock cannot start its tokio runtime")
});

/// Runs `future` to completion on the shared runtime with the GIL released.
pub(crate) fn run<T, F>(py: Python<'_>, future: F) -> PyResult<T>
where
    T: Send,
    F: Future<Output = ratelock::Result<T>> + Send,
{
    let outcome = py.detach(|| std::panic::catch_unwind(AssertUnwindSafe(|| RUNTIME.block_on(future))));
    match outcome {
        Ok(result) => result.map_err(to_py),
        Err(panic) => Err(internal_error(panic)),
    }
}
