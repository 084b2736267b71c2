//! `StoreOptions`: what every store is opened with (each call's timeout, the memory store's bound and
//! what it does when full, the TLS options (see `tls_options.rs`), the sentinels' credentials (see
//! `sentinel_options.rs`), which server code runs Redis calls).

use std::time::Duration;

use crate::error::{Error, Result};

/// Options shared by the stores that talk to a server. Equal options (every field) make the same
/// shared store (`Store::shared`).
#[derive(Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct StoreOptions {
    /// Timeout of every call (and of connecting).
    pub timeout: Duration,
    /// Memory store: the most keys it keeps, or `None` (the default) for no bound but memory: expired
    /// keys are always reclaimed first, and a live limit is never forgotten unless `when_full` says so.
    pub max_keys: Option<usize>,
    /// Memory store: what a new key does when `max_keys` live keys are held ([`WhenFull`]).
    pub when_full: WhenFull,
    /// `rediss://`: PEM certificate(s) to trust instead of the public roots (webpki-roots, Mozilla's set;
    /// e.g. a private CA).
    pub tls_root_ca: Option<Vec<u8>>,
    /// `rediss://`: the client certificate to present (PEM chain, the client's own first), for a server
    /// that asks for one (mutual TLS); given with [`tls_client_key`](Self::tls_client_key).
    pub tls_client_cert: Option<Vec<u8>>,
    /// `rediss://`: the private key of [`tls_client_cert`](Self::tls_client_cert) (PEM).
    pub tls_client_key: Option<Vec<u8>>,
    /// `redis+sentinel://` and `rediss+sentinel://`: the sentinels' ACL user, given with
    /// [`sentinel_password`](Self::sentinel_password).
    pub sentinel_username: Option<String>,
    /// `redis+sentinel://` and `rediss+sentinel://`: the sentinels' password, when it differs from the
    /// master's (the URL's credentials then go to the master only).
    pub sentinel_password: Option<String>,
    /// Redis: which server code runs the calls ([`ServerCode::Auto`]: the ratelock module where the
    /// server has it, else the Lua scripts).
    pub server_code: ServerCode,
}

/// The shortest call timeout a store accepts: below a millisecond no call to a server can answer in
/// time, so a smaller one (`timeout=1e-12`, a unit slip) would fail every call instead of failing once.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// The longest timeout a store takes: 366 days ([`MAX_PERIOD`](crate::MAX_PERIOD)). A deadline is now
/// plus the timeout (or twice it), which a timeout near `Duration::MAX` made overflow: a panic.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(366 * 24 * 3600);

/// The memory store's bound and what a full store does, as Rust and Python spell them (the names a
/// binding passes to [`StoreOptions::with_memory_bound`] in its own spelling, and those a memory
/// store's configuration error names).
pub const MEMORY_OPTION_NAMES: [&str; 2] = ["max_keys", "when_full"];

impl StoreOptions {
    /// `Ok` for options a store can work with; else the invalid argument naming what is wrong (a
    /// timeout under [`MIN_TIMEOUT`] or over [`MAX_TIMEOUT`]). Every store checks its options when it
    /// is made.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = ratelock::StoreOptions::default().with_timeout(Duration::from_nanos(1));
    /// let err = ratelock::Store::new("memory://", &options).unwrap_err();
    /// assert!(err.to_string().contains("timeout"));
    /// let forever = ratelock::StoreOptions::default().with_timeout(Duration::MAX);
    /// assert!(forever.check().unwrap_err().is_invalid_argument());
    /// ```
    pub fn check(&self) -> Result<()> {
        if self.timeout < MIN_TIMEOUT || self.timeout > MAX_TIMEOUT {
            return Err(Error::invalid_argument(
                "timeout",
                format!("expected from 1 ms to 366 days, got {:?}", self.timeout),
            ));
        }
        self.check_tls()
    }

    /// Every check a store makes of its options when it is made for `url` ([`check`](Self::check),
    /// then whether that store reads the TLS and Sentinel options given), named as Rust spells them.
    pub(crate) fn check_for_store(&self, url: &str) -> Result<()> {
        self.check()?;
        self.check_for_url(url, super::TLS_OPTION_NAMES)?;
        self.check_sentinel_for_url(url, super::SENTINEL_OPTION_NAMES)
    }

    /// The same options with another timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same options bounding the memory store to `max_keys` keys, doing `when_full` past it.
    pub fn with_max_keys(mut self, max_keys: usize, when_full: WhenFull) -> Self {
        self.max_keys = Some(max_keys);
        self.when_full = when_full;
        self
    }

    /// The same options with the memory store's bound as a binding receives it: `max_keys` (an integer
    /// from 1 to 10^9, or `None` for no bound) and `when_full` (`"refuse"`, the default, or `"evict"`;
    /// refused without `max_keys`, since an unbounded store is never full and the choice would be
    /// ignored silently). `names` are the two options as the caller's language spells them, for the
    /// error naming a wrong one.
    ///
    /// ```
    /// use ratelock::store::{StoreOptions, WhenFull};
    /// let names = ["maxKeys", "whenFull"];
    /// let bounded = StoreOptions::default().with_memory_bound(Some(1000.0), Some("evict"), names)?;
    /// assert_eq!((bounded.max_keys, bounded.when_full), (Some(1000), WhenFull::Evict));
    /// let alone = StoreOptions::default().with_memory_bound(None, Some("evict"), names).unwrap_err();
    /// assert!(alone.to_string().contains("whenFull"));
    /// # Ok::<(), ratelock::Error>(())
    /// ```
    pub fn with_memory_bound(
        self,
        max_keys: Option<f64>,
        when_full: Option<&str>,
        names: [&'static str; 2],
    ) -> Result<Self> {
        let [keys_name, full_name] = names;
        let Some(keys) = max_keys else {
            return match when_full {
                None => Ok(self),
                Some(_) => Err(Error::invalid_argument(
                    full_name,
                    format!("applies only with `{keys_name}` (the store is unbounded without it)"),
                )),
            };
        };
        if keys.fract() != 0.0 || !(1.0..=1e9).contains(&keys) {
            return Err(Error::invalid_argument(
                keys_name,
                format!("expected an integer from 1 to 10^9, got {keys}"),
            ));
        }
        let when_full = match when_full {
            None => WhenFull::default(),
            Some(text) => text.parse().map_err(|_| {
                Error::invalid_argument(
                    full_name,
                    format!(
                        "expected \"refuse\" or \"evict\", got {:?}",
                        crate::excerpt::of(text)
                    ),
                )
            })?,
        };
        Ok(self.with_max_keys(keys as usize, when_full))
    }

    /// The same options with another choice of server code (module or Lua).
    pub fn with_server_code(mut self, server_code: ServerCode) -> Self {
        self.server_code = server_code;
        self
    }
}

/// Every field, with the client certificate's private key and the sentinels' password redacted (options
/// get logged).
impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreOptions")
            .field("timeout", &self.timeout)
            .field("max_keys", &self.max_keys)
            .field("when_full", &self.when_full)
            .field("tls_root_ca", &self.tls_root_ca.as_ref().map(|pem| pem.len()))
            .field(
                "tls_client_cert",
                &self.tls_client_cert.as_ref().map(|pem| pem.len()),
            )
            .field(
                "tls_client_key",
                &self.tls_client_key.as_ref().map(|_| "<redacted>"),
            )
            .field("sentinel_username", &self.sentinel_username)
            .field(
                "sentinel_password",
                &self.sentinel_password.as_ref().map(|_| "<redacted>"),
            )
            .field("server_code", &self.server_code)
            .finish()
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            timeout: Duration::from_secs(1),
            max_keys: None,
            when_full: WhenFull::Refuse,
            tls_root_ca: None,
            tls_client_cert: None,
            tls_client_key: None,
            sentinel_username: None,
            sentinel_password: None,
            server_code: ServerCode::Auto,
        }
    }
}

/// What a bounded memory store does with a new key once it holds its bound of live keys (expired keys
/// are reclaimed first, always). Each choice has a cost; neither is silent.
///
/// ```
/// use ratelock::store::{StoreOptions, WhenFull};
/// let options = StoreOptions::default().with_max_keys(100_000, WhenFull::Evict);
/// assert_eq!(options.max_keys, Some(100_000));
/// assert_eq!("refuse".parse::<WhenFull>()?, WhenFull::Refuse);
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum WhenFull {
    /// The call fails as an outage (`StoreUnavailable`, "memory store full"), which the limiter's failure
    /// policy answers: no live limit is ever forgotten, but while a flood of keys fills the store, new
    /// keys are not served until old ones expire. The default.
    #[default]
    Refuse,
    /// The live key closest to expiry (of a sample) makes room: calls keep being served, but a flood of
    /// new keys can make the store forget live limits, which then start over (more lenient).
    /// [`MemoryStore::evictions`](crate::store::MemoryStore::evictions) counts them.
    Evict,
}

impl std::str::FromStr for WhenFull {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "refuse" => Ok(WhenFull::Refuse),
            "evict" => Ok(WhenFull::Evict),
            other => Err(Error::invalid_argument(
                "when_full",
                format!(
                    "expected \"refuse\" or \"evict\", got {:?}",
                    crate::excerpt::of(other)
                ),
            )),
        }
    }
}

/// Which server code a Redis store's calls run: [`StoreOptions::server_code`].
///
/// ```
/// use ratelock::store::{ServerCode, StoreOptions};
/// let options = StoreOptions::default().with_server_code(ServerCode::Lua);
/// assert_eq!(options.server_code, ServerCode::Lua);
/// assert_eq!("module".parse::<ServerCode>()?, ServerCode::Module);
/// # Ok::<(), ratelock::Error>(())
/// ```
///
/// [`StoreOptions::server_code`]: StoreOptions::server_code
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ServerCode {
    /// The module's commands where the server has them (checked per connection), else Lua.
    #[default]
    Auto,
    /// The module's commands only: a server without them is a configuration error.
    Module,
    /// The Lua scripts only, even where the module is loaded: as Redis Functions where the server
    /// allows them, else by EVALSHA.
    Lua,
    /// The Lua scripts by EVALSHA only (no module, no Functions): for proxies that pass EVALSHA alone.
    Scripts,
}

impl std::str::FromStr for ServerCode {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "auto" => Ok(ServerCode::Auto),
            "module" => Ok(ServerCode::Module),
            "lua" => Ok(ServerCode::Lua),
            "scripts" => Ok(ServerCode::Scripts),
            other => Err(Error::invalid_argument(
                "server_code",
                format!("expected \"auto\", \"module\", \"lua\" or \"scripts\", got {other:?}"),
            )),
        }
    }
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    /// A real self-signed CA certificate (P-256, made with openssl for this test; valid until 2126).
    const CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----
MIIBljCCAT2gAwIBAgIUKdplE38ya/Mica9dgQNmQWmGBiYwCgYIKoZIzj0EAwIw
IDEeMBwGA1UEAwwVcmF0ZWxvY2sgdW5pdCB0ZXN0IENBMCAXDTI2MTEyODAwMjI0
NFoYDzIxMjYxMTA0MDAyMjQ0WjAgMR4wHAYDVQQDDBVyYXRlbG9jayB1bml0IHRl
c3QgQ0EwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASAmNn5sw/GIJOFM57894Iz
5q/UntPqz5mVXbJz6mTkwC42utf5iM1760HIqMrtX/diLsfanOsHELhTpROBlsrT
o1MwUTAdBgNVHQ4EFgQU6S2NrYMcwp+fzrVDnPEz/e45TEgwHwYDVR0jBBgwFoAU
6S2NrYMcwp+fzrVDnPEz/e45TEgwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQD
AgNHADBEAiAYXVNzLivjOliFCXHwWXXKt48bJrSsP9UnCsb6WhfZPAIgbG1xFpE1
TZ7LmbIYKNKg0M9xbzNBXTMv15PqOrCcvsA=
-----END CERTIFICATE-----
";

    #[test]
    fn a_root_ca_that_holds_no_certificate_is_named() {
        let no_certificate = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let framed_garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        for pem in ["not a certificate", "", no_certificate, framed_garbage] {
            let options = StoreOptions::default().with_tls_root_ca(pem.as_bytes().to_vec());
            let err = options.check().unwrap_err();
            assert!(err.to_string().contains("tls_root_ca"), "{pem:?}: {err}");
        }
        let options = StoreOptions::default().with_tls_root_ca(CERTIFICATE.as_bytes().to_vec());
        assert!(options.check().is_ok());
    }

    #[test]
    #[cfg(all(feature = "redis", feature = "tls"))]
    fn a_root_ca_is_refused_by_every_store_that_would_not_read_it() {
        let options = StoreOptions::default().with_tls_root_ca(CERTIFICATE.as_bytes().to_vec());
        for url in [
            "",
            " memory ",
            "memory://",
            "redis://h:6379/",
            "redis+unix:///tmp/redis.sock",
            "redis+cluster://a:1,b:2",
            "redis+sentinel://s:26379/mymaster",
            "redlock://a:1,b:2,c:3",
        ] {
            let refused = crate::AnyLockStore::new(url, &options).unwrap_err();
            assert!(refused.to_string().contains("tls_root_ca"), "{url:?}: {refused}");
            if !url.starts_with("redlock") {
                let refused = crate::Store::new(url, &options).unwrap_err();
                assert!(refused.to_string().contains("tls_root_ca"), "{url:?}: {refused}");
            }
        }
        assert!(crate::Store::new("rediss://h:6380/", &options).is_ok());
        // A URL of no known form is named as such, not blamed on the CA.
        let unknown = crate::Store::new("localhost:6380", &options).unwrap_err();
        assert!(unknown.to_string().contains("unsupported URL"), "{unknown}");
    }
}
