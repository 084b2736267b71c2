//! Where limiters and locks keep their state. By default, the core's shared store per URL (and
//! timeout) per process (`AnyLockStore::shared_now`), shared by every Limiter and lock that names it — so two locks
//! on the same name contend even on the memory store, and Redis gets one connection per URL. A
//! `ratelock.Client` is a store of its own that the caller hands to any number of limiters and locks
//! instead of a URL.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::convert;
use crate::errors::{to_py, InvalidArgument};
use crate::runtime::{run, spawn};

/// A connection of its own (or a memory store of its own) to pass to limiters, locks and semaphores in
/// place of a URL; they then share it and its timeout.
#[pyclass(name = "Client", module = "ratelock._native", frozen)]
pub(crate) struct PyClient {
    store: ratelock::AnyLockStore,
    url: String,
    /// Each call's timeout.
    timeout: Duration,
    /// The memory bound it was given (`max_keys`, `when_full`): a limiter on this client bounds its
    /// local fallback by it.
    bound: MemoryBound,
}

/// A memory store's bound as a store's options hold it: the most keys, and what a full store does.
#[derive(Clone, Copy)]
pub(crate) struct MemoryBound {
    max_keys: Option<usize>,
    when_full: ratelock::store::WhenFull,
}

#[pymethods]
impl PyClient {
    /// A client for `url` (as for `Limiter`; `None` for a memory store of its own). Nothing is opened
    /// until the first call (lazy start); `ping()` reaches the store now, to fail at boot.
    /// `tls_root_ca`: for `rediss://`, `rediss+cluster://` or `rediss+sentinel://` (refused with any
    /// other URL), the PEM certificate(s) to trust instead of the public roots (a private CA).
    /// `tls_client_cert` and `tls_client_key`: there too, a client certificate (PEM chain) and its key
    /// to present to a server that asks for one (mutual TLS; both or neither).
    /// `sentinel_password` (and `sentinel_username`): for `redis+sentinel://` or `rediss+sentinel://`
    /// (refused with any other URL), the sentinels' own credentials when they differ from the master's;
    /// the URL's credentials then go to the master only.
    /// `max_keys`: a memory store's bound (none by default), and `when_full` what a new key past it does: `"refuse"` (an outage the
    /// failure policy answers; the default) or `"evict"`. With a Redis URL, they bound the local
    /// fallback of a limiter given this client (`on_error="local"`).
    #[new]
    #[pyo3(signature = (
        url=None, *, timeout=1.0, tls_root_ca=None, tls_client_cert=None, tls_client_key=None,
        sentinel_username=None, sentinel_password=None, max_keys=None, when_full=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        url: Option<&str>,
        timeout: f64,
        tls_root_ca: Option<Pem>,
        tls_client_cert: Option<Pem>,
        tls_client_key: Option<Pem>,
        sentinel_username: Option<String>,
        sentinel_password: Option<String>,
        max_keys: Option<i64>,
        when_full: Option<&str>,
    ) -> PyResult<Self> {
        let url = normalized(url);
        let tls = [tls_root_ca, tls_client_cert, tls_client_key];
        let mut options = client_options(&url, timeout, tls, max_keys, when_full)?;
        options.sentinel_username = sentinel_username;
        options.sentinel_password = sentinel_password;
        let store = ratelock::AnyLockStore::new(&url, &options).map_err(to_py)?;
        let bound = MemoryBound {
            max_keys: options.max_keys,
            when_full: options.when_full,
        };
        Ok(PyClient {
            store,
            url,
            timeout: options.timeout,
            bound,
        })
    }

    /// Reaches the store now (blocking, the GIL released): raises configuration errors and outages.
    fn ping(&self, py: Python<'_>) -> PyResult<()> {
        let store = self.store.clone();
        run(py, async move { ratelock::LockStore::ping(&store).await })
    }

    /// Makes a `Client` (the same arguments) without blocking the event loop; awaits to it.
    #[staticmethod]
    #[pyo3(signature = (*args, **kwargs))]
    fn connect_async<'py>(
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = py.get_type::<PyClient>().call(args, kwargs)?.unbind();
        spawn(py, async move { Ok(client) })
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

/// What a constructor was given: a `Client`'s store (and its memory bound), or a URL (`None`: memory)
/// to share per process.
pub(crate) enum Target {
    Store(ratelock::AnyLockStore, MemoryBound),
    Url(Option<String>),
}

impl Target {
    /// Reads the `url` argument: a str, a `Client`, or `None`.
    pub(crate) fn of(value: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let Some(value) = value else {
            return Ok(Target::Url(None));
        };
        if let Ok(client) = value.cast::<PyClient>() {
            let client = client.get();
            return Ok(Target::Store(client.store.clone(), client.bound));
        }
        if let Ok(text) = value.cast::<PyString>() {
            return Ok(Target::Url(Some(text.to_cow()?.into_owned())));
        }
        Err(InvalidArgument::new_err(format!(
            "invalid argument `url`: expected a URL (str), a ratelock.Client or None, got {}",
            value.get_type().name()?
        )))
    }

    /// `options` bounding their local fallback as this target's client bounds its memory store
    /// (`max_keys`, `when_full`); a URL leaves them as they are.
    pub(crate) fn bound_fallback(&self, mut options: ratelock::LimiterOptions) -> ratelock::LimiterOptions {
        if let Target::Store(_, bound) = self {
            options.store.max_keys = bound.max_keys;
            options.store.when_full = bound.when_full;
        }
        options
    }

    /// The store of every role: the client's own, or the process's shared store for the URL (made on
    /// first use, with `timeout`; no I/O). A Redlock URL or client is refused: it holds locks only.
    pub(crate) fn store(self, timeout: Duration) -> PyResult<ratelock::Store> {
        self.store_now(timeout).map_err(to_py)
    }

    /// This target with the timeout of the calls of the handle it is for.
    pub(crate) fn with_timeout(self, timeout: Duration) -> StoreChoice {
        StoreChoice {
            target: self,
            timeout,
        }
    }

    /// The store a `DistributedLock` runs on: as [`store`](Self::store), and Redlock too.
    pub(crate) fn lock_store(self, timeout: Duration) -> PyResult<ratelock::AnyLockStore> {
        match self {
            Target::Store(store, _) => Ok(store),
            Target::Url(url) => {
                ratelock::AnyLockStore::shared_now(url.as_deref(), &options(timeout)).map_err(to_py)
            }
        }
    }

    pub(crate) fn store_now(self, timeout: Duration) -> ratelock::Result<ratelock::Store> {
        match self {
            Target::Store(store, _) => store.into_store(),
            Target::Url(url) => ratelock::Store::shared_now(url.as_deref(), &options(timeout)),
        }
    }
}

/// A lock handle's store, not yet chosen by role: a `Target` and the timeout its calls take.
pub(crate) struct StoreChoice {
    target: Target,
    timeout: Duration,
}

impl StoreChoice {
    /// The store of every role (what a semaphore, fair or read-write lock runs on).
    pub(crate) fn store(self) -> PyResult<ratelock::Store> {
        self.target.store_now(self.timeout).map_err(to_py)
    }

    /// The store a `DistributedLock` runs on (Redlock too).
    pub(crate) fn lock_store(self) -> PyResult<ratelock::AnyLockStore> {
        self.target.lock_store(self.timeout)
    }
}

fn options(timeout: Duration) -> ratelock::StoreOptions {
    ratelock::StoreOptions::default().with_timeout(timeout)
}

/// PEM text as Python gives it: `str` or `bytes`.
#[derive(FromPyObject)]
pub(crate) enum Pem {
    Text(String),
    Bytes(Vec<u8>),
}

impl Pem {
    fn into_bytes(self) -> Vec<u8> {
        match self {
            Pem::Text(text) => text.into_bytes(),
            Pem::Bytes(bytes) => bytes,
        }
    }
}

/// The store options of a client of `url`: the core's defaults, with what was given, checked.
fn client_options(
    url: &str,
    timeout: f64,
    tls: [Option<Pem>; 3],
    max_keys: Option<i64>,
    when_full: Option<&str>,
) -> PyResult<ratelock::StoreOptions> {
    let pems = tls.map(|pem| pem.map(Pem::into_bytes));
    options(convert::seconds("timeout", timeout)?)
        .with_tls_for_url(pems, url, ratelock::store::TLS_OPTION_NAMES)
        .map_err(to_py)?
        .with_memory_bound(
            max_keys.map(|keys| keys as f64),
            when_full,
            ratelock::store::MEMORY_OPTION_NAMES,
        )
        .map_err(to_py)
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
