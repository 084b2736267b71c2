//! One store per URL (and timeout) per process, shared by every Limiter and lock that names it — so two
//! locks on the same name contend even on the memory store, and Redis gets one connection per URL.

use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::Duration;

use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::runtime::run;

static STORES: LazyLock<Mutex<HashMap<(String, Duration), ratelock::Store>>> =
    LazyLock::new(Default::default);

/// The process's store for `url` (`None`: the embedded memory store), connecting on first use.
pub(crate) fn shared(py: Python<'_>, url: Option<&str>, timeout: Duration) -> PyResult<ratelock::Store> {
    let url = url.map(str::to_owned);
    run(py, connect(url, timeout))
}

/// The same, for asyncio: connecting never blocks the event loop.
pub(crate) async fn connect(url: Option<String>, timeout: Duration) -> ratelock::Result<ratelock::Store> {
    let url = url.as_deref().unwrap_or("memory://").trim().to_owned();
    let key = (url.clone(), timeout);
    if let Some(store) = STORES.lock().get(&key) {
        return Ok(store.clone());
    }
    let options = ratelock::StoreOptions::default().with_timeout(timeout);
    let store = ratelock::Store::connect(&url, &options).await?;
    Ok(STORES.lock().entry(key).or_insert(store).clone())
}
