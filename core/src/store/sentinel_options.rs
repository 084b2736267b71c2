//! The Sentinel part of [`StoreOptions`]: the sentinels' own credentials, for deployments where the
//! sentinels and the master have different passwords (a URL holds one set of credentials), and the check
//! that refuses them on a store that would not read them.

use super::options::StoreOptions;
use crate::error::{Error, Result};

/// How the caller's language spells the two Sentinel options, for the errors that name one: the
/// sentinels' username, their password. Rust and Python spell them [`SENTINEL_OPTION_NAMES`].
pub type SentinelOptionNames = [&'static str; 2];

/// The Sentinel options as Rust and Python spell them.
pub const SENTINEL_OPTION_NAMES: SentinelOptionNames = ["sentinel_username", "sentinel_password"];

impl StoreOptions {
    /// The same options authenticating to the sentinels with `password` (and, with
    /// [`with_sentinel_username`](Self::with_sentinel_username), an ACL user), while the URL's
    /// credentials go to the master only. Without it, the URL's credentials serve both (as charts set
    /// them up), or whichever side turns out to have a password.
    ///
    /// ```
    /// let options = ratelock::StoreOptions::default().with_sentinel_password("s3ntinel");
    /// let store = ratelock::Store::new("redis+sentinel://:m4ster@127.0.0.1:26379/mymaster", &options);
    /// assert!(store.is_ok()); // lazy start: no I/O yet
    /// ```
    pub fn with_sentinel_password(mut self, password: impl Into<String>) -> Self {
        self.sentinel_password = Some(password.into());
        self
    }

    /// The same options naming the sentinels' ACL user (given with
    /// [`with_sentinel_password`](Self::with_sentinel_password)).
    pub fn with_sentinel_username(mut self, username: impl Into<String>) -> Self {
        self.sentinel_username = Some(username.into());
        self
    }

    /// `Ok` unless a Sentinel option is wrong or would be ignored by the store `url` names; then the
    /// invalid argument naming it as `names` spell it: a username without a password, an empty username
    /// or password, or either with a URL that is not `redis+sentinel://` or `rediss+sentinel://` (both
    /// named when both are given).
    /// [`Store::new`](crate::Store::new) checks this with [`SENTINEL_OPTION_NAMES`]; a binding checks
    /// first with its own names.
    ///
    /// ```
    /// let names = ["sentinelUsername", "sentinelPassword"];
    /// let options = ratelock::StoreOptions::default().with_sentinel_password("pw");
    /// let err = options.check_sentinel_for_url("redis://cache:6379/", names).unwrap_err();
    /// assert!(err.to_string().contains("sentinelPassword"));
    /// assert!(options.check_sentinel_for_url("redis+sentinel://a:26379/m", names).is_ok());
    /// let alone = ratelock::StoreOptions::default().with_sentinel_username("app");
    /// let err = alone.check_sentinel_for_url("redis+sentinel://a:26379/m", names).unwrap_err();
    /// assert!(err.to_string().contains("sentinelPassword"));
    /// ```
    pub fn check_sentinel_for_url(&self, url: &str, names: SentinelOptionNames) -> Result<()> {
        let [username_name, password_name] = names;
        match (&self.sentinel_username, &self.sentinel_password) {
            (None, None) => return Ok(()),
            (Some(_), None) => {
                return Err(Error::invalid_argument(
                    password_name,
                    format!("the sentinels' user ({username_name}) needs their password here too"),
                ))
            }
            (_, Some(password)) if password.is_empty() => {
                return Err(Error::invalid_argument(
                    password_name,
                    "expected the sentinels' password, got an empty one (leave it out when they have none)",
                ))
            }
            (Some(username), _) if username.is_empty() => {
                return Err(Error::invalid_argument(
                    username_name,
                    "expected the sentinels' ACL user, got an empty one (leave it out for the default user)",
                ))
            }
            _ => {}
        }
        let url = url.trim();
        if url.starts_with("redis+sentinel://") || url.starts_with("rediss+sentinel://") {
            return Ok(());
        }
        let (named, them) = match self.sentinel_username {
            Some(_) => (username_name, format!("it and {password_name}")),
            None => (password_name, "it".to_owned()),
        };
        Err(Error::invalid_argument(
            named,
            format!(
                "only a redis+sentinel:// or rediss+sentinel:// URL reads it (the URL's own credentials \
                 serve every other store); leave {them} out"
            ),
        ))
    }
}
