//! The Redis URL forms that name several hosts: a cluster's seeds (`redis+cluster://`, and
//! `rediss+cluster://` over TLS), the sentinels and the master's name (`redis+sentinel://`,
//! `rediss+sentinel://`), and Redlock's servers (`redlock://`): their schemes and host lists, each host
//! with the list's credentials.

/// The `redis+cluster://` scheme (seeds after it, comma-separated).
pub(crate) const CLUSTER_SCHEME: &str = "redis+cluster://";
/// The same over TLS: `rediss+cluster://`, with `#insecure` at the end to check no certificate.
pub(crate) const TLS_CLUSTER_SCHEME: &str = "rediss+cluster://";
/// The `redis+sentinel://` scheme (sentinels after it, comma-separated, then `/mastername`).
pub(crate) const SENTINEL_SCHEME: &str = "redis+sentinel://";
/// The same over TLS: `rediss+sentinel://`, with `#insecure` at the end to check no certificate.
pub(crate) const TLS_SENTINEL_SCHEME: &str = "rediss+sentinel://";

/// Whether `url` names a Sentinel deployment (`redis+sentinel://` or `rediss+sentinel://`).
pub(crate) fn is_sentinel_url(url: &str) -> bool {
    url.starts_with(SENTINEL_SCHEME) || url.starts_with(TLS_SENTINEL_SCHEME)
}

/// Whether `url` names a Redis Cluster (`redis+cluster://` or `rediss+cluster://`).
pub(crate) fn is_cluster_url(url: &str) -> bool {
    url.starts_with(CLUSTER_SCHEME) || url.starts_with(TLS_CLUSTER_SCHEME)
}

/// The seed URLs of `redis+cluster://[user:password@]host:port,host:port` (`redis://` each), or of
/// `rediss+cluster://...[#insecure]` (`rediss://...[#insecure]` each).
pub(crate) fn cluster_seeds(url: &str) -> Vec<String> {
    if let Some(list) = url.strip_prefix(TLS_CLUSTER_SCHEME) {
        let (list, fragment) = match list.strip_suffix("#insecure") {
            Some(list) => (list, "#insecure"),
            None => (list, ""),
        };
        return node_urls_with("rediss://", list)
            .into_iter()
            .map(|seed| seed + fragment)
            .collect();
    }
    node_urls(url.strip_prefix(CLUSTER_SCHEME).unwrap_or(url))
}

/// `redis://[user:password@]host:port` for each host of `[user:password@]host:port,host:port[/]` (the
/// host lists of cluster, Sentinel and Redlock URLs), every one with the list's credentials.
pub(crate) fn node_urls(list: &str) -> Vec<String> {
    node_urls_with("redis://", list)
}

/// [`node_urls`] under `scheme`.
pub(crate) fn node_urls_with(scheme: &str, list: &str) -> Vec<String> {
    let list = list.trim_end_matches('/');
    let (credentials, hosts) = match list.rsplit_once('@') {
        Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
        None => (String::new(), list),
    };
    hosts
        .split(',')
        .map(str::trim)
        .filter(|host| !host.is_empty())
        .map(|host| format!("{scheme}{credentials}{host}"))
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
    fn sentinel_urls_are_told_by_their_scheme() {
        assert!(is_sentinel_url("rediss+sentinel://a:1/m") && is_sentinel_url("redis+sentinel://a:1/m"));
        assert!(!is_sentinel_url("rediss://a:1") && !is_sentinel_url("redis+cluster://a:1"));
    }

    #[test]
    fn seeds_are_split_and_keep_the_credentials() {
        assert_eq!(
            cluster_seeds("redis+cluster://u:p@10.0.0.1:7000,10.0.0.2:7001/"),
            ["redis://u:p@10.0.0.1:7000", "redis://u:p@10.0.0.2:7001"]
        );
        assert_eq!(cluster_seeds("redis+cluster://a:1"), ["redis://a:1"]);
        assert!(cluster_seeds("redis+cluster://").is_empty());
        assert_eq!(
            cluster_seeds("rediss+cluster://u:p@a:1,b:2/#insecure"),
            ["rediss://u:p@a:1#insecure", "rediss://u:p@b:2#insecure"]
        );
        assert_eq!(cluster_seeds("rediss+cluster://a:1"), ["rediss://a:1"]);
        assert!(is_cluster_url("rediss+cluster://a:1") && is_cluster_url("redis+cluster://a:1"));
        assert!(!is_cluster_url("rediss://a:1"));
    }
}
