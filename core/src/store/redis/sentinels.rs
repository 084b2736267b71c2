//! Asking Redis Sentinel which server is the master, for the store's connection (`sentinel_master.rs`)
//! and its pub/sub connection (`subscriber.rs`). A `redis+sentinel://[user:password@]a:p,b:p/name` URL
//! (`rediss+sentinel://...[#insecure]` over TLS) names the sentinels and the master; its credentials
//! are the master's and the sentinels', as charts set them up (one password for both). A server with no
//! password of its own refuses an AUTH, so when the credentials are refused the sentinels are asked again
//! with them for the master only, then for the sentinels only; the first way that works is kept. When
//! the store's options give the sentinels credentials of their own (`sentinel_password`), the URL's go
//! to the master only and nothing is tried.
//! Over TLS the sentinels and the master are both checked against `tls_root_ca` (or the public roots);
//! `#insecure` checks neither.

use std::time::Duration;

use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo, RedisResult, TlsMode};

use super::multi_host_urls::{node_urls_with, SENTINEL_SCHEME, TLS_SENTINEL_SCHEME};
use super::tls_settings::TlsSettings;
use crate::error::{Error, Result};
use crate::store::connection_core::{
    connect_error, SETTING_ACL, SETTING_CREDENTIALS, SETTING_SENTINEL_ACL, SETTING_SENTINEL_CREDENTIALS,
};

/// What a Sentinel URL says: where the sentinels are, the master's name, the credentials and TLS.
#[derive(Clone, PartialEq)]
pub(crate) struct SentinelUrl {
    sentinels: Vec<ConnectionAddr>,
    /// The name the sentinels know the master by.
    pub(crate) master: String,
    username: Option<String>,
    password: Option<String>,
    tls: Option<TlsMode>,
    /// The sentinels' own credentials (the store's `sentinel_username`, `sentinel_password`).
    sentinel_username: Option<String>,
    sentinel_password: Option<String>,
}

/// Every field, with the passwords redacted.
impl std::fmt::Debug for SentinelUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |password: &Option<String>| password.as_ref().map(|_| "<redacted>");
        f.debug_struct("SentinelUrl")
            .field("sentinels", &self.sentinels)
            .field("master", &self.master)
            .field("username", &self.username)
            .field("password", &redacted(&self.password))
            .field("tls", &self.tls)
            .field("sentinel_username", &self.sentinel_username)
            .field("sentinel_password", &redacted(&self.sentinel_password))
            .finish()
    }
}

impl SentinelUrl {
    /// Reads `redis+sentinel://[user:password@]host:port[,host:port...]/mastername` or its TLS form.
    pub(crate) fn parse(url: &str) -> Result<Self> {
        let malformed = || {
            Error::invalid_argument(
                "url",
                "expected redis+sentinel:// or rediss+sentinel://[user:password@]host:port[,host:port...]/mastername",
            )
        };
        let (rest, tls) = match url.strip_prefix(TLS_SENTINEL_SCHEME) {
            Some(rest) => match rest.strip_suffix("#insecure") {
                Some(rest) => (rest, Some(TlsMode::Insecure)),
                None => (rest, Some(TlsMode::Secure)),
            },
            None => (url.strip_prefix(SENTINEL_SCHEME).ok_or_else(malformed)?, None),
        };
        let (hosts, master) = rest.split_once('/').unwrap_or((rest, ""));
        let master = master.trim_matches('/');
        // Each sentinel as a `redis://` URL that redis-rs reads (credentials percent-decoded); the TLS
        // mode is set on the builder.
        let infos = node_urls_with("redis://", hosts)
            .into_iter()
            .map(|node| node.into_connection_info())
            .collect::<RedisResult<Vec<ConnectionInfo>>>()
            .map_err(|err| Error::invalid_argument("url", err))?;
        let (Some(first), false) = (infos.first(), master.is_empty()) else {
            return Err(malformed());
        };
        let settings = first.redis_settings();
        let (username, password) = (
            settings.username().map(String::from),
            settings.password().map(String::from),
        );
        let sentinels = infos
            .iter()
            .map(|info| match (info.addr(), tls) {
                (ConnectionAddr::Tcp(host, port), Some(mode)) => ConnectionAddr::TcpTls {
                    host: host.clone(),
                    port: *port,
                    insecure: mode == TlsMode::Insecure,
                    tls_params: None,
                },
                (addr, _) => addr.clone(),
            })
            .collect();
        Ok(SentinelUrl {
            sentinels,
            master: master.to_owned(),
            username,
            password,
            tls,
            sentinel_username: None,
            sentinel_password: None,
        })
    }

    /// The same URL with the sentinels' own credentials from the store's options, if given.
    pub(crate) fn with_sentinel_credentials(mut self, options: &crate::StoreOptions) -> Self {
        self.sentinel_username = options.sentinel_username.clone();
        self.sentinel_password = options.sentinel_password.clone();
        self
    }

    /// Whether the master and the sentinels are reached over TLS.
    pub(crate) fn tls(&self) -> bool {
        self.tls.is_some()
    }
}

/// The outage of a call whose `timeout` ran out before a master was named and reached.
pub(crate) fn unnamed(timeout: Duration) -> Error {
    Error::StoreUnavailable(format!("no master was named and reached within {timeout:?}"))
}

/// The sentinels of one URL, asked for the master (the connections to them are kept between asks).
pub(crate) struct Sentinels {
    url: SentinelUrl,
    tls: TlsSettings,
    client: Option<SentinelClient>,
    /// Who gets the URL's credentials.
    credentials: Credentials,
}

/// Who gets the URL's credentials: both (the default), or one side, when the other has no password.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Credentials {
    Both,
    MasterOnly,
    SentinelsOnly,
}

impl Credentials {
    fn master(self) -> bool {
        self != Credentials::SentinelsOnly
    }

    fn sentinels(self) -> bool {
        self != Credentials::MasterOnly
    }
}

impl Sentinels {
    /// The sentinels `url` names, with the store's TLS settings. No I/O.
    pub(crate) fn new(url: SentinelUrl, tls: TlsSettings) -> Self {
        Sentinels {
            url,
            tls,
            client: None,
            credentials: Credentials::Both,
        }
    }

    /// How to reach the master the sentinels name now (its address, the URL's credentials, TLS), within
    /// `timeout`. redis-rs checks the master they name answers as a master before it is returned.
    pub(crate) async fn master(&mut self, timeout: Duration) -> Result<ConnectionInfo> {
        let asked = tokio::time::timeout(timeout, self.ask_with_credentials_that_work(timeout)).await;
        match asked {
            Ok(answer) => {
                answer.map_err(|err| self.naming_credentials(connect_error(&err, timeout, self.url.tls())))
            }
            Err(_) => Err(unnamed(timeout)),
        }
    }

    /// `err`, naming the sentinels' own credentials beside the URL's when they were given and a side
    /// refused its credentials or lacked a permission (redis-rs does not say which side it was).
    fn naming_credentials(&self, err: Error) -> Error {
        match err {
            Error::Configuration { setting, reason } if self.url.sentinel_password.is_some() => {
                let named = match setting {
                    SETTING_CREDENTIALS => SETTING_SENTINEL_CREDENTIALS,
                    SETTING_ACL => SETTING_SENTINEL_ACL,
                    other => other,
                };
                Error::Configuration {
                    setting: named,
                    reason,
                }
            }
            other => other,
        }
    }

    /// Asks; when the credentials were refused, asks again giving them to the master only, then to the
    /// sentinels only (one side may have no password: redis-rs does not say which refused). The first
    /// way that works is kept. If none does, a way that failed other than by a refusal (the master
    /// down, a sentinel unreachable) is the answer: that way got past the credentials, so the outage is
    /// what stands in the way. Else the first refusal is.
    async fn ask_with_credentials_that_work(&mut self, timeout: Duration) -> RedisResult<ConnectionInfo> {
        let first = self.ask().await;
        let refused = match first {
            Err(refused)
                if refused.kind() == ErrorKind::AuthenticationFailed
                    && self.credentials == Credentials::Both
                    && self.url.password.is_some()
                    && self.url.sentinel_password.is_none() =>
            {
                refused
            }
            answer => return answer,
        };
        let mut outage = None;
        for credentials in [Credentials::MasterOnly, Credentials::SentinelsOnly] {
            self.credentials = credentials;
            self.client = None;
            match self.ask().await {
                Ok(named) => return Ok(named),
                // An outage only, as the error table files it: a NOAUTH (another refusal, which
                // redis-rs does not file as one) must not stand in for the first refusal.
                Err(err) if connect_error(&err, timeout, self.url.tls()).is_store_failure() => {
                    outage.get_or_insert(err);
                }
                Err(_) => {}
            }
        }
        self.credentials = Credentials::Both;
        self.client = None;
        Err(outage.unwrap_or(refused))
    }

    async fn ask(&mut self) -> RedisResult<ConnectionInfo> {
        if self.client.is_none() {
            self.client = Some(self.build()?);
        }
        let client = self.client.as_mut().expect("built above");
        Ok(client.async_get_client().await?.get_connection_info().clone())
    }

    fn build(&self) -> RedisResult<SentinelClient> {
        #[cfg(feature = "tls")]
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = &self.url;
        let mut builder =
            SentinelClientBuilder::new(url.sentinels.clone(), &url.master, SentinelServerType::Master)?;
        if self.credentials.master() {
            if let Some(username) = &url.username {
                builder = builder.set_client_to_redis_username(username);
            }
            if let Some(password) = &url.password {
                builder = builder.set_client_to_redis_password(password);
            }
        }
        if let Some(password) = &url.sentinel_password {
            if let Some(username) = &url.sentinel_username {
                builder = builder.set_client_to_sentinel_username(username);
            }
            builder = builder.set_client_to_sentinel_password(password);
        } else if self.credentials.sentinels() {
            if let Some(username) = &url.username {
                builder = builder.set_client_to_sentinel_username(username);
            }
            if let Some(password) = &url.password {
                builder = builder.set_client_to_sentinel_password(password);
            }
        }
        if let Some(mode) = url.tls {
            builder = builder
                .set_client_to_redis_tls_mode(mode)
                .set_client_to_sentinel_tls_mode(mode);
            #[cfg(feature = "tls")]
            if let (Some(certificates), TlsMode::Secure) = (self.tls.for_redis_rs(), mode) {
                builder = builder
                    .set_client_to_redis_certificates(certificates.clone())
                    .set_client_to_sentinel_certificates(certificates);
            }
        }
        builder.build()
    }

    /// What the master's own connections trust and present over TLS: the store's settings.
    pub(crate) fn tls(&self) -> &TlsSettings {
        &self.tls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_debug_form_shows_no_password() {
        let options = crate::StoreOptions::default().with_sentinel_password("s3ntinel");
        let url = SentinelUrl::parse("redis+sentinel://app:m4ster@a:1/m")
            .unwrap()
            .with_sentinel_credentials(&options);
        let shown = format!("{url:?}");
        assert!(
            !shown.contains("m4ster") && !shown.contains("s3ntinel"),
            "{shown}"
        );
        assert!(shown.contains("app"), "{shown}");
    }

    #[test]
    fn urls_name_the_sentinels_the_master_the_credentials_and_tls() {
        let url = SentinelUrl::parse("redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster").unwrap();
        assert_eq!(
            url.sentinels,
            [
                ConnectionAddr::Tcp("127.0.0.1".into(), 26379),
                ConnectionAddr::Tcp("127.0.0.1".into(), 26380)
            ]
        );
        assert_eq!(
            (url.master.as_str(), url.password.as_deref(), url.tls),
            ("mymaster", None, None)
        );

        let url = SentinelUrl::parse("rediss+sentinel://app:p%40ss@a:1,b:2/main/#insecure").unwrap();
        assert_eq!(url.master, "main");
        assert_eq!(
            (url.username.as_deref(), url.password.as_deref()),
            (Some("app"), Some("p@ss"))
        );
        assert_eq!(url.tls, Some(TlsMode::Insecure));
        assert!(
            matches!(&url.sentinels[1], ConnectionAddr::TcpTls { host, port: 2, insecure: true, .. } if host == "b")
        );
        assert_eq!(
            SentinelUrl::parse("rediss+sentinel://:pw@a:1/m").unwrap().tls,
            Some(TlsMode::Secure)
        );

        for malformed in [
            "redis+sentinel://h:1",
            "redis+sentinel:///m",
            "rediss+sentinel://h:1/",
        ] {
            let err = SentinelUrl::parse(malformed).unwrap_err();
            assert!(err.to_string().contains("mastername"), "{malformed}: {err}");
        }
    }
}
