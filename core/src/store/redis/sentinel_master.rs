//! The master the sentinels name (`redis+sentinel://a:p,b:p/mastername`, `rediss+sentinel://` over TLS;
//! see `sentinels.rs`), over ratelock's own pipelined connection (with the URL's credentials, and TLS),
//! so a Sentinel deployment keeps the single server's connection rules: a connection the
//! master closed while idle is found before a call is written to it (redis-rs's failed the next call),
//! and a call that may have run is never sent again. The sentinels are asked again after a failure that
//! may mean a failover (the master cannot be reached, or answers READONLY as a demoted master); a call
//! that never left goes to the master they name then, once. The whole call, asking the sentinels
//! included, keeps within the store's timeout.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use redis::{Cmd, Value};

use super::endpoint::Endpoint;
use super::pipelined::Pipelined;
use super::reply::{classify, Failure};
use super::sentinels::{unnamed, SentinelUrl, Sentinels};
use super::tls_settings::TlsSettings;
use crate::error::{Error, Result};

pub(crate) struct SentinelMaster {
    sentinels: tokio::sync::Mutex<Sentinels>,
    current: RwLock<Option<Pipelined>>,
    timeout: Duration,
    /// Bumped at every new socket to a master (see `Pipelined::new`).
    opened: Arc<AtomicU64>,
}

impl SentinelMaster {
    /// Finds the master the sentinels of `url` name and connects to it, with the store's TLS settings over
    /// TLS.
    pub(crate) async fn connect(
        url: SentinelUrl,
        tls: TlsSettings,
        timeout: Duration,
        opened: Arc<AtomicU64>,
    ) -> Result<Self> {
        let master = SentinelMaster {
            sentinels: tokio::sync::Mutex::new(Sentinels::new(url, tls)),
            current: RwLock::new(None),
            timeout,
            opened,
        };
        master.connection().await?.open().await?;
        Ok(master)
    }

    /// Sends one command to the master and reads its reply, as a value or a typed failure, within the
    /// timeout.
    pub(crate) async fn send(&self, cmd: &Cmd) -> Result<Value, Failure> {
        let deadline = Instant::now() + self.timeout;
        let mut asked_again = false;
        loop {
            let master = match tokio::time::timeout_at(deadline, self.connection()).await {
                Ok(master) => master.map_err(Failure::Other)?,
                Err(_) => return Err(Failure::Other(unnamed(self.timeout))),
            };
            let left = deadline.saturating_duration_since(Instant::now());
            // Packed per attempt: a resend is rare, a copy kept for it on every call would not be.
            let (reply, may_have_run) = master.send_within(super::packing::packed(cmd), left).await;
            match reply {
                Ok(Value::ServerError(err)) if err.code() == "READONLY" => {
                    // A demoted master: the next call asks the sentinels again (this one did not run).
                    self.forget(&master);
                    return classify(Ok(Value::ServerError(err)), self.timeout);
                }
                Ok(value) => return classify(Ok(value), self.timeout),
                Err(Error::Timeout(_)) => {
                    // A master that stopped answering may have been replaced (a frozen or cut-off master
                    // still accepts connections): the next call asks the sentinels. This one may have
                    // run, so it is not sent again.
                    self.forget(&master);
                    return Err(Failure::Other(Error::Timeout(self.timeout)));
                }
                Err(err) if err.is_store_failure() => {
                    self.forget(&master);
                    if may_have_run || asked_again || Instant::now() >= deadline {
                        return Err(Failure::Other(err));
                    }
                    // Nothing of it left: it goes to the master the sentinels name now, once.
                    asked_again = true;
                }
                Err(err) => return Err(Failure::Other(err)),
            }
        }
    }

    /// The current master's connection, asking the sentinels when there is none.
    async fn connection(&self) -> Result<Pipelined> {
        if let Some(master) = self.current() {
            return Ok(master);
        }
        let mut sentinels = self.sentinels.lock().await;
        // Another caller may have asked while this one waited for the sentinels.
        if let Some(master) = self.current() {
            return Ok(master);
        }
        let named = sentinels.master(self.timeout).await?;
        let endpoint = Endpoint::of_info(&named, Default::default())?.ok_or_else(|| {
            Error::configuration("url", "a master ratelock's connection cannot serve (RESP3)")
        })?;
        let master = Pipelined::new(
            endpoint,
            sentinels.tls().clone(),
            self.timeout,
            self.opened.clone(),
        );
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(master.clone());
        Ok(master)
    }

    fn current(&self) -> Option<Pipelined> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Forgets `master` (if still the current one): the next call asks the sentinels.
    fn forget(&self, master: &Pipelined) {
        let mut current = self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if current.as_ref().is_some_and(|now| now.same_as(master)) {
            *current = None;
        }
    }
}
