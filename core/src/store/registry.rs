//! One store per URL and options per process, shared by every limiter and lock that names it: two
//! locks on the same name contend even on the memory store, and Redis gets one connection per URL.
//! The bindings hand out stores from here instead of keeping registries of their own. A Redis store
//! is fork-safe on its own (see `crate::process`), so a forked child keeps using the same entries.

use std::collections::HashMap;
use std::sync::LazyLock;

use parking_lot::Mutex;

use super::{AnyLockStore, Store, StoreOptions};
use crate::error::Result;

/// What tells two shared stores apart: the URL as given (trimmed; empty means memory) and every option.
type Entry = (String, StoreOptions);

static SHARED: LazyLock<Mutex<HashMap<Entry, AnyLockStore>>> = LazyLock::new(Default::default);

impl Store {
    /// The process's shared store for `url` (`None` or `memory://`: the embedded memory store) and
    /// `options`, connecting on first use. Later calls with the same URL and options get the same store.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use ratelock::{Limiter, Rules, Store, StoreOptions};
    /// let options = StoreOptions::default();
    /// let a = Limiter::with_store(Store::shared(None, &options).await?, Default::default())?;
    /// let b = Limiter::with_store(Store::shared(Some("memory://"), &options).await?, Default::default())?;
    /// let rules: Rules = "1/minute".parse()?;
    /// assert!(a.hit("shared-doc", &rules, 1).await?.allowed);
    /// assert!(!b.hit("shared-doc", &rules, 1).await?.allowed); // the same store
    /// # Ok::<(), ratelock::Error>(()) });
    /// ```
    pub async fn shared(url: Option<&str>, options: &StoreOptions) -> Result<Store> {
        Store::shared_now(url, options)
    }

    /// [`shared`](Self::shared) without the `async`: no store does I/O when it is made.
    pub fn shared_now(url: Option<&str>, options: &StoreOptions) -> Result<Store> {
        AnyLockStore::shared_now(url, options)?.into_store()
    }
}

impl AnyLockStore {
    /// The process's shared lock store for `url`: as [`Store::shared`], and `redlock://` URLs too. A
    /// lock and a limiter naming the same Redis URL share one store.
    pub fn shared_now(url: Option<&str>, options: &StoreOptions) -> Result<AnyLockStore> {
        let url = match url.map(str::trim) {
            None | Some("") | Some("memory") => "memory://",
            Some(url) => url,
        };
        let entry: Entry = (url.to_owned(), options.clone());
        if let Some(store) = SHARED.lock().get(&entry) {
            return Ok(store.clone());
        }
        let store = AnyLockStore::new(url, options)?;
        Ok(SHARED.lock().entry(entry).or_insert(store).clone())
    }
}
