//! One pub/sub connection per Redis store, shared by every waiter of every lock in the process.
//! Waiters register interest in a channel and get a `Notify` that each message on it wakes; the
//! connection subscribes while a channel has waiters. If the connection drops, waiters are woken
//! (they retry) and the next registration reconnects: a missed message only costs a capped wait.
//! Registering is cancel-safe and bounded by the store's timeout; the reader task ends with the store.
//! An outage while subscribing is no error (the waiter still tries again at the holder's lease end),
//! but a refusal that no retry mends (credentials, an ACL without SUBSCRIBE or the channel) is returned
//! to the waiter: silently waiting whole leases for every release would hide it.
//! Behind Sentinel, every (re)connection asks the sentinels for the master first, so after a failover
//! the waiters' wake-ups come from the promoted master.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use parking_lot::Mutex;
use redis::aio::PubSubSink;
use tokio::sync::{watch, Notify};

use crate::error::{Error, Result};
use crate::store::connection_core::connect_error;

/// Where the subscriber connects: one fixed server, or whichever master the sentinels name now.
#[derive(Clone)]
pub(crate) enum Source {
    Fixed(redis::Client),
    /// The sentinels of a Sentinel URL and the store's TLS settings.
    #[cfg(feature = "sentinel")]
    Sentinel {
        url: super::sentinels::SentinelUrl,
        tls: super::tls_settings::TlsSettings,
    },
}

impl Source {
    #[cfg_attr(not(feature = "sentinel"), allow(unused_variables))]
    async fn client(&self, timeout: Duration) -> Result<redis::Client> {
        match self {
            Source::Fixed(client) => Ok(client.clone()),
            #[cfg(feature = "sentinel")]
            Source::Sentinel { url, tls } => {
                // Asked afresh at each (re)connection: the master may have changed since. The sentinels'
                // connections are not kept in the source, which a forked child shares with its parent:
                // so the credentials are found again too (at most two more asks when one side has none).
                let mut sentinels = super::sentinels::Sentinels::new(url.clone(), tls.clone());
                // The master's address comes with the URL's credentials, and over TLS the CA to trust.
                let named = sentinels.master(timeout).await?;
                redis::Client::open(named).map_err(|err| connect_failed(&err, timeout))
            }
        }
    }
}

/// The shared subscriber of one Redis store.
pub(crate) struct Subscriber {
    source: Source,
    timeout: Duration,
    connection: tokio::sync::Mutex<Option<Connection>>,
    generations: AtomicU64,
    channels: Mutex<HashMap<Vec<u8>, Interest>>,
    /// Dropped with the subscriber, which ends every reader task.
    _shutdown: watch::Sender<()>,
    shutdown: watch::Receiver<()>,
}

/// The live connection: its sink, which channels it is subscribed to, and its generation.
struct Connection {
    generation: u64,
    sink: PubSubSink,
    subscribed: HashSet<Vec<u8>>,
}

struct Interest {
    notify: Arc<Notify>,
    waiters: usize,
}

/// A waiter's registration; dropping it lets the channel be unsubscribed when nobody waits any more.
pub(crate) struct Registration {
    subscriber: Arc<Subscriber>,
    channel: Vec<u8>,
    /// Woken by every message on the channel (and when the connection drops).
    pub(crate) notify: Arc<Notify>,
}

impl Subscriber {
    pub(crate) fn new(source: Source, timeout: Duration) -> Arc<Self> {
        let (sender, receiver) = watch::channel(());
        Arc::new(Subscriber {
            source,
            timeout,
            connection: tokio::sync::Mutex::new(None),
            generations: AtomicU64::new(0),
            channels: Mutex::new(HashMap::new()),
            _shutdown: sender,
            shutdown: receiver,
        })
    }

    /// Registers interest in `channel` and makes sure the connection is subscribed to it, within the
    /// store's timeout. An outage is no error (without a subscription the waiter still retries at the
    /// lease's end); a refusal no retry mends (configuration, protocol) is.
    pub(crate) async fn register(self: &Arc<Self>, channel: &[u8]) -> Result<Registration> {
        let notify = {
            let mut channels = self.channels.lock();
            let interest = channels.entry(channel.to_vec()).or_insert_with(|| Interest {
                notify: Arc::new(Notify::new()),
                waiters: 0,
            });
            interest.waiters += 1;
            interest.notify.clone()
        };
        // Built before any await: if this future is cancelled, dropping it undoes the registration.
        let registration = Registration {
            subscriber: self.clone(),
            channel: channel.to_vec(),
            notify,
        };
        match tokio::time::timeout(self.timeout, self.subscribe(channel)).await {
            Ok(Err(refused)) if !refused.is_store_failure() => Err(refused),
            _ => Ok(registration),
        }
    }

    async fn subscribe(self: &Arc<Self>, channel: &[u8]) -> Result<()> {
        let mut connection = self.connection.lock().await;
        match connection.as_mut() {
            None => *connection = Some(self.connect().await?),
            Some(live) if !live.subscribed.contains(channel) => match live.sink.subscribe(channel).await {
                Ok(()) => {
                    live.subscribed.insert(channel.to_vec());
                }
                Err(failure) => {
                    *connection = None;
                    return Err(connect_failed(&failure, self.timeout));
                }
            },
            Some(_) => {}
        }
        Ok(())
    }

    /// Opens the connection, subscribes to every channel with waiters and starts the reader task.
    async fn connect(self: &Arc<Self>) -> Result<Connection> {
        let client = self.source.client(self.timeout).await?;
        let pubsub = client
            .get_async_pubsub()
            .await
            .map_err(|err| connect_failed(&err, self.timeout))?;
        let (mut sink, mut stream) = pubsub.split();
        let wanted: Vec<Vec<u8>> = self.channels.lock().keys().cloned().collect();
        for channel in &wanted {
            sink.subscribe(channel.as_slice())
                .await
                .map_err(|err| connect_failed(&err, self.timeout))?;
        }
        let generation = self.generations.fetch_add(1, Ordering::Relaxed);
        let weak: Weak<Subscriber> = Arc::downgrade(self);
        let mut shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    message = stream.next() => message,
                    _ = shutdown.changed() => return,
                };
                let Some(message) = message else { break };
                let Some(subscriber) = weak.upgrade() else { return };
                let Ok(channel) = message.get_channel::<Vec<u8>>() else {
                    continue;
                };
                let notify = subscriber.channels.lock().get(&channel).map(|i| i.notify.clone());
                if let Some(notify) = notify {
                    notify.notify_waiters();
                }
            }
            // This connection is gone: forget it (unless a newer one replaced it) and wake everyone.
            if let Some(subscriber) = weak.upgrade() {
                let mut connection = subscriber.connection.lock().await;
                if connection.as_ref().is_some_and(|c| c.generation == generation) {
                    *connection = None;
                }
                drop(connection);
                for interest in subscriber.channels.lock().values() {
                    interest.notify.notify_waiters();
                }
            }
        });
        Ok(Connection {
            generation,
            sink,
            subscribed: wanted.into_iter().collect(),
        })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let last = {
            let mut channels = self.subscriber.channels.lock();
            match channels.get_mut(&self.channel) {
                Some(interest) if interest.waiters <= 1 => {
                    channels.remove(&self.channel);
                    true
                }
                Some(interest) => {
                    interest.waiters -= 1;
                    false
                }
                None => false,
            }
        };
        if !last {
            return;
        }
        let subscriber = self.subscriber.clone();
        let channel = std::mem::take(&mut self.channel);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                // Decide under the connection lock: a registration that subscribes again also takes it,
                // so it either came first (and we see its waiter) or subscribes after this unsubscribe.
                let mut connection = subscriber.connection.lock().await;
                if subscriber.channels.lock().contains_key(&channel) {
                    return;
                }
                if let Some(live) = connection.as_mut() {
                    if live.subscribed.remove(&channel) {
                        let unsubscribe = live.sink.unsubscribe(channel.as_slice());
                        let _ = tokio::time::timeout(subscriber.timeout, unsubscribe).await;
                    }
                }
            });
        }
    }
}

/// A redis-rs failure while connecting or subscribing as a typed error (see the connection core's
/// error table): nothing this connection sends changes the data, so a timeout is a connect timeout.
fn connect_failed(err: &redis::RedisError, timeout: Duration) -> Error {
    connect_error(err, timeout, false)
}
