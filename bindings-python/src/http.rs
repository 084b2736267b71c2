//! The adapter core for Python (`ratelock.http` re-exports it): `HttpOptions` renders a decision's
//! answer, `ClientAddress` finds the client key, `scoped_key` joins a scope and a key. Each is the
//! core's pure function with Python types at the edges; the framework adapters only call them.

use std::time::{SystemTime, UNIX_EPOCH};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyString};
use ratelock::http::{ClientAddress, HttpAnswer, HttpOptions, TrustedProxies};

use crate::convert;
use crate::decision::PyDecision;
use crate::errors::{to_py, InvalidArgument};

/// How an adapter answers: rate-limit headers, the denial's body and status.
#[pyclass(name = "HttpOptions", module = "ratelock._native", frozen)]
pub(crate) struct PyHttpOptions {
    inner: HttpOptions,
}

#[pymethods]
impl PyHttpOptions {
    /// `standard_headers`: `"draft-6"`, `"draft-7"`, `"draft-8"`, `"draft-11"` (the default; also
    /// `"latest"` or True) or False; `legacy_headers`: `X-RateLimit-*`; `partition_key`: a `pk`
    /// parameter (drafts 8 and 11); `denied_body`: `"text"`, `"json"` or `"problem"`; `status_code`:
    /// the denial's status.
    #[new]
    #[pyo3(signature = (*, standard_headers=None, legacy_headers=false, partition_key=false, denied_body="text", status_code=429))]
    fn new(
        standard_headers: Option<&Bound<'_, PyAny>>,
        legacy_headers: bool,
        partition_key: bool,
        denied_body: &str,
        status_code: u16,
    ) -> PyResult<Self> {
        let mut inner = HttpOptions::default().with_status(status_code).map_err(to_py)?;
        inner.headers.standard = match standard_headers {
            None => Some(ratelock::http::HeaderStyle::LATEST),
            Some(value) if value.is_instance_of::<PyBool>() => value
                .extract::<bool>()?
                .then_some(ratelock::http::HeaderStyle::LATEST),
            Some(value) => Some(
                value
                    .extract::<String>()
                    .map_err(|_| {
                        InvalidArgument::new_err(
                            "invalid argument `standard_headers`: expected a draft's name, True or False",
                        )
                    })?
                    .parse()
                    .map_err(to_py)?,
            ),
        };
        inner.headers.legacy = legacy_headers;
        inner.headers.partition_key = partition_key;
        inner.denied_body = denied_body.parse().map_err(to_py)?;
        Ok(PyHttpOptions { inner })
    }

    /// The answer to `decision` for the request keyed `key`: proceed with headers, or a denial.
    /// `now_ms` (Unix ms) defaults to the wall clock.
    #[pyo3(signature = (decision, key, now_ms=None))]
    fn answer(
        &self,
        decision: &PyDecision,
        key: &Bound<'_, PyAny>,
        now_ms: Option<u64>,
    ) -> PyResult<PyHttpAnswer> {
        let key = convert::key_bytes(key)?;
        let now_ms = now_ms.unwrap_or_else(wall_clock_ms);
        let (core, rules) = decision.core();
        Ok(self.inner.answer(&core, rules, key.as_bytes(), now_ms).into())
    }

    /// The answer when the limiter raised the error whose `code` is given: 503 for an outage, None
    /// for anything else (which the adapter must raise).
    fn failure(&self, code: &str) -> Option<PyHttpAnswer> {
        self.inner.failure(code).map(Into::into)
    }

    /// The answer to a request with no usable key: 400.
    fn bad_key(&self) -> PyHttpAnswer {
        self.inner.bad_key().into()
    }

    /// The header style's name, or None.
    #[getter]
    fn standard_headers(&self) -> Option<&'static str> {
        self.inner.headers.standard.map(|style| style.as_str())
    }
}

/// What an adapter sends: whether the request proceeds, and the status, headers and body otherwise.
#[pyclass(name = "HttpAnswer", module = "ratelock._native", frozen)]
pub(crate) struct PyHttpAnswer {
    #[pyo3(get)]
    proceed: bool,
    #[pyo3(get)]
    status: u16,
    #[pyo3(get)]
    headers: Vec<(&'static str, String)>,
    #[pyo3(get)]
    content_type: &'static str,
    #[pyo3(get)]
    body: String,
}

impl From<HttpAnswer> for PyHttpAnswer {
    fn from(answer: HttpAnswer) -> Self {
        PyHttpAnswer {
            proceed: answer.proceed,
            status: answer.status,
            headers: answer.headers,
            content_type: answer.content_type,
            body: answer.body,
        }
    }
}

#[pymethods]
impl PyHttpAnswer {
    fn __repr__(&self) -> String {
        format!(
            "HttpAnswer(proceed={}, status={}, headers={:?})",
            self.proceed, self.status, self.headers
        )
    }
}

/// How the client address of a request becomes its key.
#[pyclass(name = "ClientAddress", module = "ratelock._native", frozen)]
pub(crate) struct PyClientAddress {
    inner: ClientAddress,
}

#[pymethods]
impl PyClientAddress {
    /// `ipv6_subnet`: IPv6 addresses sharing this many leading bits share a key (1 to 128, default
    /// 56); `trusted_proxies`: None (proxy headers ignored), a hop count, or networks
    /// (`"10.0.0.0/8"`, `"loopback"`, `"private"`, `"linklocal"`); `proxy_header`:
    /// `"x-forwarded-for"` or `"forwarded"`.
    #[new]
    #[pyo3(signature = (*, ipv6_subnet=56, trusted_proxies=None, proxy_header="x-forwarded-for"))]
    fn new(
        ipv6_subnet: u8,
        trusted_proxies: Option<&Bound<'_, PyAny>>,
        proxy_header: &str,
    ) -> PyResult<Self> {
        let mut inner = ClientAddress::default()
            .with_ipv6_subnet(ipv6_subnet)
            .map_err(to_py)?
            .with_header(proxy_header.parse().map_err(to_py)?);
        match trusted_proxies {
            None => {}
            Some(value) if value.is_instance_of::<PyBool>() => {
                return Err(InvalidArgument::new_err(
                    "invalid argument `trusted_proxies`: expected None, a hop count or a list of networks, got a bool",
                ))
            }
            Some(value) => {
                if let Ok(hops) = value.extract::<u32>() {
                    inner = inner.with_trusted(TrustedProxies::Hops(hops));
                } else if let Ok(networks) = value.extract::<Vec<String>>() {
                    inner = inner
                        .trust_networks(networks.iter().map(String::as_str))
                        .map_err(to_py)?;
                } else {
                    return Err(InvalidArgument::new_err(
                        "invalid argument `trusted_proxies`: expected None, a hop count or a list of networks",
                    ));
                }
            }
        }
        Ok(PyClientAddress { inner })
    }

    /// The key of a request from `peer` (the connection's address) with the proxy header `forwarded`.
    #[pyo3(signature = (peer, forwarded=None))]
    fn key(&self, peer: Option<&str>, forwarded: Option<&str>) -> String {
        self.inner.key(peer.unwrap_or(""), forwarded)
    }

    /// The header a trusted proxy writes, lower case (`x-forwarded-for` or `forwarded`).
    #[getter]
    fn proxy_header(&self) -> &'static str {
        self.inner.header.name()
    }
}

/// `<scope>:<key>` with the scope's `%` and `:` escaped, so no two (scope, key) pairs meet; `str`
/// for a `str` key, `bytes` for a `bytes` key.
#[pyfunction]
pub(crate) fn scoped_key<'py>(scope: &str, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = key.py();
    let bytes = convert::key_bytes(key)?;
    let joined = ratelock::http::scoped_key(scope, bytes.as_bytes()).map_err(to_py)?;
    if key.is_instance_of::<PyString>() {
        // Both halves are UTF-8, and escaping only writes ASCII.
        let text = String::from_utf8(joined).expect("a joined text key is UTF-8");
        Ok(PyString::new(py, &text).into_any())
    } else {
        Ok(PyBytes::new(py, &joined).into_any())
    }
}

fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// The canonical text of each rule in `text` (`"10/s; 1000/hour"` → `["10/second", "1000/hour"]`);
/// raises `InvalidRule` naming the bad part. For checking rules when an app starts.
#[pyfunction]
pub(crate) fn parse_rules(text: &str) -> PyResult<Vec<String>> {
    let rules: ratelock::Rules = text.parse().map_err(to_py)?;
    Ok(rules.iter().map(ToString::to_string).collect())
}
