//! One pub/sub connection per Redis store, shared by every waiter of every lock in the process.
//! Waiters register interest in a channel and get a `Notify` that each message on it wakes; the
//! connection subscribes while a channel has waiters. If the connection drops, waiters are woken
//! (they retry) and the next registration reconnects: a missed message only costs a capped wait.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use futures_util::StreamExt;
use parking_lot::Mutex;
use redis::aio::PubSubSink;
use tokio::sync::Notify;

/// The shared subscriber of one Redis store.
pub(crate) struct Subscriber {
    client: redis::Client,
    sink: tokio::sync::Mutex<Option<PubSubSink>>,
    channels: Mutex<HashMap<Vec<u8>, Interest>>,
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
    pub(crate) fn new(client: redis::Client) -> Arc<Self> {
        Arc::new(Subscriber {
            client,
            sink: tokio::sync::Mutex::new(None),
            channels: Mutex::new(HashMap::new()),
        })
    }

    /// Registers interest in `channel` and makes sure the connection is subscribed to it. Never fails:
    /// without a subscription the waiter still retries at the lease's end.
    pub(crate) async fn register(self: &Arc<Self>, channel: &[u8]) -> Registration {
        let (notify, first) = {
            let mut channels = self.channels.lock();
            let interest = channels.entry(channel.to_vec()).or_insert_with(|| Interest {
                notify: Arc::new(Notify::new()),
                waiters: 0,
            });
            interest.waiters += 1;
            (interest.notify.clone(), interest.waiters == 1)
        };
        let mut sink = self.sink.lock().await;
        if sink.is_none() {
            *sink = self.connect().await;
        } else if first {
            if let Some(live) = sink.as_mut() {
                if live.subscribe(channel).await.is_err() {
                    *sink = None;
                }
            }
        }
        Registration {
            subscriber: self.clone(),
            channel: channel.to_vec(),
            notify,
        }
    }

    /// Opens the connection, subscribes to every channel with waiters and starts the reader task.
    async fn connect(self: &Arc<Self>) -> Option<PubSubSink> {
        let pubsub = self.client.get_async_pubsub().await.ok()?;
        let (mut sink, mut stream) = pubsub.split();
        let wanted: Vec<Vec<u8>> = self.channels.lock().keys().cloned().collect();
        for channel in &wanted {
            sink.subscribe(channel.as_slice()).await.ok()?;
        }
        let weak: Weak<Subscriber> = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(message) = stream.next().await {
                let Some(subscriber) = weak.upgrade() else { return };
                let Ok(channel) = message.get_channel::<Vec<u8>>() else {
                    continue;
                };
                let notify = subscriber.channels.lock().get(&channel).map(|i| i.notify.clone());
                if let Some(notify) = notify {
                    notify.notify_waiters();
                }
            }
            // The connection is gone: forget it and wake everyone so they retry (and reconnect).
            if let Some(subscriber) = weak.upgrade() {
                *subscriber.sink.lock().await = None;
                for interest in subscriber.channels.lock().values() {
                    interest.notify.notify_waiters();
                }
            }
        });
        Some(sink)
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
                // Decide under the sink lock: a registration that subscribes again also takes it, so it
                // either came first (and we see its waiter) or subscribes after this unsubscribe.
                let mut sink = subscriber.sink.lock().await;
                if subscriber.channels.lock().contains_key(&channel) {
                    return;
                }
                if let Some(sink) = sink.as_mut() {
                    let _ = sink.unsubscribe(channel.as_slice()).await;
                }
            });
        }
    }
}
