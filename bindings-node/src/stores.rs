//! One store per URL (and timeout) per process, shared by every Limiter, lock and semaphore that names
//! it: two locks on the same name contend even on the memory store, and Redis gets one connection.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

type Stores = Mutex<HashMap<(String, Duration), ratelock::Store>>;

static STORES: LazyLock<Stores> = LazyLock::new(Default::default);

/// The process's store for `url` (`None`: the embedded memory store), connecting on first use.
pub(crate) async fn shared(url: Option<String>, timeout: Duration) -> ratelock::Result<ratelock::Store> {
    let url = url.as_deref().unwrap_or("memory://").trim().to_owned();
    let key = (url, timeout);
    if let Some(store) = lock(&STORES).get(&key) {
        return Ok(store.clone());
    }
    let options = ratelock::StoreOptions::default().with_timeout(timeout);
    let store = ratelock::Store::connect(&key.0, &options).await?;
    Ok(lock(&STORES).entry(key).or_insert(store).clone())
}

fn lock(stores: &Stores) -> std::sync::MutexGuard<'_, HashMap<(String, Duration), ratelock::Store>> {
    stores.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
