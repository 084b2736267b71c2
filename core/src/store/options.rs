//! `StoreOptions`: what every store is opened with (each call's timeout, the memory store's bound, the
//! certificates to trust for TLS, which server code runs Redis calls: the module or Lua).

use std::time::Duration;

use crate::error::{Error, Result};

/// Options shared by the stores that talk to a server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StoreOptions {
    /// Timeout of every call (and of connecting).
    pub timeout: Duration,
    /// Memory store: the most keys kept before the ones closest to expiry are evicted.
    pub max_keys: usize,
    /// `rediss://`: PEM certificate(s) to trust instead of the system's roots (e.g. a private CA).
    pub tls_root_ca: Option<Vec<u8>>,
    /// Redis: which server code runs the calls ([`ServerCode::Auto`]: the ratelock module where the
    /// server has it, else the Lua scripts).
    pub server_code: ServerCode,
}

impl StoreOptions {
    /// The same options with another timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same options with another memory-store bound.
    pub fn with_max_keys(mut self, max_keys: usize) -> Self {
        self.max_keys = max_keys;
        self
    }

    /// The same options with another choice of server code (module or Lua).
    pub fn with_server_code(mut self, server_code: ServerCode) -> Self {
        self.server_code = server_code;
        self
    }

    /// The same options trusting these PEM certificates for `rediss://`.
    pub fn with_tls_root_ca(mut self, pem: Vec<u8>) -> Self {
        self.tls_root_ca = Some(pem);
        self
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            timeout: Duration::from_secs(1),
            max_keys: 1_000_000,
            tls_root_ca: None,
            server_code: ServerCode::Auto,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
