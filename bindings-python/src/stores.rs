//! Where limiters and locks keep their state. By default, the core's shared store per URL (and
//! timeout) per process (`Store::shared`), shared by every Limiter and lock that names it — so two locks
//! on the same name contend even on the memory store, and Redis gets one connection per URL. A
//! `ratelock.Client` is a store of its own that the caller hands to any number of limiters and locks
//! instead of a URL.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::convert;
use crate::errors::{to_py, InvalidArgument};
use crate::runtime::{run, spawn};

/// A connection of its own (or a memory store of its own) to pass to limiters, locks and semaphores in
/// place of a URL; they then share it and its timeout.
#[pyclass(name = "Client", module = "ratelock._native", frozen)]
pub(crate) struct PyClient {
    store: ratelock::Store,
    url: String,
    timeout: Duration,
}

#[pymethods]
impl PyClient {
    /// A client for `url` (as for `Limiter`; `None` for a memory store of its own). Nothing is opened
    /// until the first call (lazy start); `ping()` reaches the store now, to fail at boot.
    #[new]
    #[pyo3(signature = (url=None, *, timeout=1.0))]
    fn new(py: Python<'_>, url: Option<&str>, timeout: f64) -> PyResult<Self> {
        let (url, timeout) = (normalized(url), convert::seconds("timeout", timeout)?);
        let store = run(py, open(url.clone(), timeout))?;
        Ok(PyClient { store, url, timeout })
    }

    /// Reaches the store now (blocking, the GIL released): raises configuration errors and outages.
    fn ping(&self, py: Python<'_>) -> PyResult<()> {
        let store = self.store.clone();
        run(py, async move { store.ping().await })
    }

    /// Makes a `Client` without blocking the event loop; awaits to it.
    #[staticmethod]
    #[pyo3(signature = (url=None, *, timeout=1.0))]
    fn connect_async<'py>(py: Python<'py>, url: Option<&str>, timeout: f64) -> PyResult<Bound<'py, PyAny>> {
        let (url, timeout) = (normalized(url), convert::seconds("timeout", timeout)?);
        spawn(py, async move {
            let store = open(url.clone(), timeout).await.map_err(to_py)?;
            Ok(PyClient { store, url, timeout })
        })
    }

    /// The URL connected to (`memory://` for a memory store).
    #[getter]
    fn url(&self) -> &str {
        &self.url
    }

    /// Each call's timeout, in seconds.
    #[getter]
    fn timeout(&self) -> f64 {
        self.timeout.as_secs_f64()
    }

    fn __repr__(&self) -> String {
        format!(
            "Client('{}', timeout={:?})",
            redacted(&self.url),
            self.timeout.as_secs_f64()
        )
    }
}

/// What a constructor was given: a `Client`'s store, or a URL (`None`: memory) to share per process.
pub(crate) enum Target {
    Store(ratelock::Store),
    Url(Option<String>),
}

impl Target {
    /// Reads the `url` argument: a str, a `Client`, or `None`.
    pub(crate) fn of(value: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let Some(value) = value else {
            return Ok(Target::Url(None));
        };
        if let Ok(client) = value.cast::<PyClient>() {
            return Ok(Target::Store(client.get().store.clone()));
        }
        if let Ok(text) = value.cast::<PyString>() {
            return Ok(Target::Url(Some(text.to_cow()?.into_owned())));
        }
        Err(InvalidArgument::new_err(format!(
            "invalid argument `url`: expected a URL (str), a ratelock.Client or None, got {}",
            value.get_type().name()?
        )))
    }

    /// The store: the client's own, or the process's shared store for the URL (connecting on first
    /// use, with `timeout`).
    pub(crate) async fn store(self, timeout: Duration) -> ratelock::Result<ratelock::Store> {
        match self {
            Target::Store(store) => Ok(store),
            Target::Url(url) => shared(url, timeout).await,
        }
    }

    /// [`store`](Self::store) for the blocking API.
    pub(crate) fn store_blocking(self, py: Python<'_>, timeout: Duration) -> PyResult<ratelock::Store> {
        match self {
            Target::Store(store) => Ok(store),
            Target::Url(url) => run(py, shared(url, timeout)),
        }
    }
}

/// The process's store for `url`, connecting on first use.
async fn shared(url: Option<String>, timeout: Duration) -> ratelock::Result<ratelock::Store> {
    let options = ratelock::StoreOptions::default().with_timeout(timeout);
    ratelock::Store::shared(url.as_deref(), &options).await
}

async fn open(url: String, timeout: Duration) -> ratelock::Result<ratelock::Store> {
    let options = ratelock::StoreOptions::default().with_timeout(timeout);
    ratelock::Store::connect(&url, &options).await
}

fn normalized(url: Option<&str>) -> String {
    url.unwrap_or("memory://").trim().to_owned()
}

/// The URL without its password, for display.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}
