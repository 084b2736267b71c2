//! The Redis store's shared async connection: one reconnecting multiplexed connection to a server
//! (`redis://`, `rediss://`), or redis-rs's cluster connection (`redis+cluster://a:p,b:p`), which routes
//! each command by its first key's slot and follows MOVED/ASK. Every script call keeps all its keys in
//! one slot (the key layout's hash tag), so no public operation can meet CROSSSLOT.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, RedisResult, Value};

/// The `redis+cluster://` scheme (seeds after it, comma-separated).
pub(crate) const CLUSTER_SCHEME: &str = "redis+cluster://";

#[derive(Clone)]
pub(crate) enum SharedConnection {
    Single(ConnectionManager),
    #[cfg(feature = "cluster")]
    Cluster(redis::cluster_async::ClusterConnection),
}

impl SharedConnection {
    /// Connects to one server through `client`.
    pub(crate) async fn single(client: redis::Client, timeout: Duration) -> RedisResult<Self> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        Ok(SharedConnection::Single(
            ConnectionManager::new_with_config(client, config).await?,
        ))
    }

    /// Connects to the cluster whose seed nodes `url` lists (`redis+cluster://a:p,b:p`).
    #[cfg(feature = "cluster")]
    pub(crate) async fn cluster(url: &str, timeout: Duration) -> RedisResult<Self> {
        let client = redis::cluster::ClusterClient::builder(cluster_seeds(url))
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .retries(3)
            .build()?;
        Ok(SharedConnection::Cluster(client.get_async_connection().await?))
    }

    /// Sends one command and reads its reply.
    pub(crate) async fn send(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        match self {
            SharedConnection::Single(connection) => connection.send_packed_command(cmd).await,
            #[cfg(feature = "cluster")]
            SharedConnection::Cluster(connection) => {
                redis::aio::ConnectionLike::req_packed_command(connection, cmd).await
            }
        }
    }
}

/// The seed URLs of `redis+cluster://[user:password@]host:port,host:port`, each as `redis://...`
/// with the credentials of the first.
pub(crate) fn cluster_seeds(url: &str) -> Vec<String> {
    let rest = url
        .strip_prefix(CLUSTER_SCHEME)
        .unwrap_or(url)
        .trim_end_matches('/');
    let (credentials, hosts) = match rest.rsplit_once('@') {
        Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
        None => (String::new(), rest),
    };
    hosts
        .split(',')
        .map(str::trim)
        .filter(|host| !host.is_empty())
        .map(|host| format!("redis://{credentials}{host}"))
        .collect()
}

/// A plain client for one node of the cluster (for pub/sub, which the cluster broadcasts to every
/// node, and for the first seed's URL checks).
pub(crate) fn first_seed(url: &str) -> Option<String> {
    cluster_seeds(url).into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_split_and_keep_the_credentials() {
        assert_eq!(
            cluster_seeds("redis+cluster://u:p@10.0.0.1:7000,10.0.0.2:7001/"),
            ["redis://u:p@10.0.0.1:7000", "redis://u:p@10.0.0.2:7001"]
        );
        assert_eq!(cluster_seeds("redis+cluster://a:1"), ["redis://a:1"]);
        assert!(cluster_seeds("redis+cluster://").is_empty());
    }
}
