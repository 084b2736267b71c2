//! Where a single-server `redis://` URL points (for the wire path, `rediss://` too; for the pipelined
//! connection, also `rediss://` and `redis+unix://`), and the preamble (`AUTH`, `SELECT`) every new
//! connection to it sends first: shared by the pipelined connection, the blocking lane, the breaker's
//! probe and the wire path.

use redis::{ConnectionAddr, IntoConnectionInfo, ProtocolVersion};

use super::server_code::take_from_url;
use crate::error::{Error, Result};
use crate::store::ServerCode;

/// Where a plain single-server `redis://` URL points, and what to send first on a new connection.
///
/// ```
/// use ratelock::store::wire::Endpoint;
/// let endpoint = Endpoint::from_url("redis://app:s3cret@10.0.0.5:6380/2")?.expect("served");
/// assert_eq!((endpoint.host(), endpoint.port()), ("10.0.0.5", 6380));
/// assert_eq!(endpoint.preamble_replies(), 2); // AUTH app s3cret, SELECT 2
/// assert!(Endpoint::from_url("rediss://10.0.0.5/")?.is_none()); // TLS: not on a plain socket
/// assert!(Endpoint::for_wire("rediss://10.0.0.5/")?.expect("served").tls()); // the wire path's TLS socket
/// let forced = Endpoint::from_url("redis://10.0.0.5/?server_code=scripts")?.expect("served");
/// assert_eq!(forced.server_code(), ratelock::store::ServerCode::Scripts);
/// # Ok::<(), ratelock::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Endpoint {
    host: String,
    port: u16,
    preamble: Vec<u8>,
    preamble_replies: usize,
    server_code: ServerCode,
    tls: bool,
    /// TLS with the server's certificate and name left unchecked (`rediss://...#insecure`).
    insecure: bool,
    /// The Unix socket's path (`redis+unix://`), in place of the host and port.
    unix: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the preamble: it holds the password.
        f.debug_struct("Endpoint")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("preamble_replies", &self.preamble_replies)
            .field("server_code", &self.server_code)
            .field("tls", &self.tls)
            .field("insecure", &self.insecure)
            .field("unix", &self.unix)
            .finish()
    }
}

impl Endpoint {
    /// The endpoint of `redis://[user:password@]host[:port][/db]`. `Ok(None)` for every URL the wire
    /// path does not serve, which keeps the store's own connection: `rediss://` (TLS),
    /// `redis+cluster://`, `redis+sentinel://`, `redis+unix://`, `?protocol=resp3`, `memory://`,
    /// `redlock://`. An unparsable `redis://` URL is an invalid argument, and so is a `server_code`
    /// query parameter other than `auto`, `module`, `lua` or `scripts` (read as the Redis store reads
    /// it: see [`server_code`](Self::server_code)).
    pub fn from_url(url: &str) -> Result<Option<Endpoint>> {
        Ok(Self::for_wire(url)?.filter(|endpoint| !endpoint.tls))
    }

    /// The endpoint the wire path serves: as [`from_url`](Self::from_url), and `rediss://` too, whose TLS
    /// the wire path's own socket does (verifying the server's certificate and name; a `rediss://` URL
    /// that turns verification off, `#insecure`, keeps the store's connection).
    pub fn for_wire(url: &str) -> Result<Option<Endpoint>> {
        let url = url.trim();
        if !url.starts_with("redis://") && !url.starts_with("rediss://") {
            return Ok(None);
        }
        Ok(Self::parsed(url)?.filter(|endpoint| !endpoint.insecure))
    }

    /// The endpoint of ratelock's own pipelined connection: as [`for_wire`](Self::for_wire), and
    /// `rediss://...#insecure` (TLS that checks neither the certificate nor the name) and
    /// `redis+unix://PATH` (or `unix://PATH`, a Unix socket) too.
    pub(crate) fn for_pipelined(url: &str) -> Result<Option<Endpoint>> {
        let url = url.trim();
        let schemes = ["redis://", "rediss://", "redis+unix://", "unix://"];
        if !schemes.iter().any(|scheme| url.starts_with(scheme)) {
            return Ok(None);
        }
        Self::parsed(url)
    }

    /// The endpoint of a URL whose scheme was checked: `None` for what no own socket serves (RESP3).
    fn parsed(url: &str) -> Result<Option<Endpoint>> {
        let (url, server_code) = take_from_url(url)?;
        let info = url
            .as_str()
            .into_connection_info()
            .map_err(|err| Error::invalid_argument("url", err))?;
        Self::of_info(&info, server_code.unwrap_or_default())
    }

    /// The endpoint of a parsed connection's settings (a cluster node's, as redis-rs hands them): `None`
    /// for what no own socket serves (RESP3).
    pub(crate) fn of_info(info: &redis::ConnectionInfo, server_code: ServerCode) -> Result<Option<Endpoint>> {
        let (host, port, tls, insecure, unix) = match info.addr() {
            ConnectionAddr::Tcp(host, port) => (host.clone(), *port, false, false, None),
            ConnectionAddr::TcpTls {
                host, port, insecure, ..
            } => (host.clone(), *port, true, *insecure, None),
            ConnectionAddr::Unix(path) => (path.display().to_string(), 0, false, false, Some(path.clone())),
            _ => return Ok(None),
        };
        let settings = info.redis_settings();
        if settings.protocol() != ProtocolVersion::RESP2 {
            return Ok(None);
        }
        let mut preamble = Vec::new();
        let mut preamble_replies = 0;
        // As redis-rs connects: AUTH with the password (and the user, if any), then SELECT.
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            auth.arg(password);
            preamble.extend(auth.get_packed_command());
            preamble_replies += 1;
        }
        if settings.db() != 0 {
            preamble.extend(redis::cmd("SELECT").arg(settings.db()).get_packed_command());
            preamble_replies += 1;
        }
        Ok(Some(Endpoint {
            host,
            port,
            preamble,
            preamble_replies,
            server_code,
            tls,
            insecure,
            unix,
        }))
    }

    /// The host to connect to (a name or an address; a Unix socket's path for `redis+unix://`).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The TCP port (0 for a Unix socket).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the connection is TLS (`rediss://`): the socket verifies the server's certificate against
    /// the store's trusted roots (`tls_root_ca`, else the public ones) and its name against
    /// [`host`](Self::host).
    pub fn tls(&self) -> bool {
        self.tls
    }

    /// Whether TLS leaves the server's certificate and name unchecked (`rediss://...#insecure`; only
    /// the pipelined connection serves such an endpoint).
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    pub(crate) fn insecure(&self) -> bool {
        self.insecure
    }

    /// The Unix socket's path, for a `redis+unix://` endpoint ([`host`](Self::host) is the same path).
    pub(crate) fn unix_path(&self) -> Option<&std::path::Path> {
        self.unix.as_deref()
    }

    /// The commands to write first on every new connection (`AUTH`, `SELECT`; empty when none).
    pub fn preamble(&self) -> &[u8] {
        &self.preamble
    }

    /// How many replies the preamble gets (each one `OK`, or an error that fails the connection).
    pub fn preamble_replies(&self) -> usize {
        self.preamble_replies
    }

    /// Which server code the URL's `server_code` query parameter asks for ([`ServerCode::Auto`] when it
    /// has none): the choice a [`WireConnection`](super::wire::WireConnection) to this endpoint starts from.
    pub fn server_code(&self) -> ServerCode {
        self.server_code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_that_are_not_one_plain_server_keep_the_store_connection() {
        for url in [
            "rediss://h/",
            "redis+cluster://a:1,b:2",
            "redis+sentinel://a:1/m",
            "redis+unix:///tmp/r.sock",
            "memory://",
            "redis://h/?protocol=resp3",
        ] {
            assert_eq!(Endpoint::from_url(url).unwrap(), None, "{url}");
        }
        assert!(Endpoint::from_url("redis://h:notaport/").is_err());
    }

    #[test]
    fn the_wire_path_serves_rediss_with_verification_on() {
        let tls = Endpoint::for_wire("rediss://app:pw@cache.example:6380/1")
            .unwrap()
            .unwrap();
        assert!(tls.tls());
        assert_eq!(
            (tls.host(), tls.port(), tls.preamble_replies()),
            ("cache.example", 6380, 2)
        );
        assert!(!Endpoint::for_wire("redis://h/").unwrap().unwrap().tls());
        // Verification off is not the wire path's (Node's socket always verifies): the store's
        // connection takes it.
        assert_eq!(Endpoint::for_wire("rediss://h/#insecure").unwrap(), None);
    }

    #[test]
    fn the_pipelined_connection_serves_unix_sockets_and_tls() {
        let unix = Endpoint::for_pipelined("redis+unix:///tmp/r.sock?pass=pw&db=3")
            .unwrap()
            .unwrap();
        assert_eq!(unix.unix_path(), Some(std::path::Path::new("/tmp/r.sock")));
        assert_eq!((unix.host(), unix.preamble_replies()), ("/tmp/r.sock", 2));
        assert!(!unix.tls());
        let tls = Endpoint::for_pipelined("rediss://h:6380/").unwrap().unwrap();
        assert!(tls.tls() && !tls.insecure() && tls.unix_path().is_none());
        let insecure = Endpoint::for_pipelined("rediss://h/#insecure").unwrap().unwrap();
        assert!(insecure.tls() && insecure.insecure());
        for url in [
            "redis+cluster://a:1,b:2",
            "redis+sentinel://a:1/m",
            "redis+unix:///tmp/r.sock?protocol=resp3",
        ] {
            assert_eq!(Endpoint::for_pipelined(url).unwrap(), None, "{url}");
        }
    }

    #[test]
    fn the_preamble_authenticates_and_selects_like_redis_rs() {
        let plain = Endpoint::from_url("redis://127.0.0.1:7000/").unwrap().unwrap();
        assert_eq!((plain.preamble(), plain.preamble_replies()), (&b""[..], 0));
        let password = Endpoint::from_url("redis://:p%40ss@h/3").unwrap().unwrap();
        assert_eq!(
            password.preamble(),
            b"*2\r\n$4\r\nAUTH\r\n$4\r\np@ss\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n"
        );
        let user = Endpoint::from_url("redis://u:p@h").unwrap().unwrap();
        assert_eq!(user.preamble(), b"*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$1\r\np\r\n");
        assert_eq!((user.host(), user.port()), ("h", 6379));
        assert!(!format!("{user:?}").contains("AUTH"), "no password in Debug");
    }

    #[test]
    fn the_url_may_choose_the_server_code() {
        let forced = Endpoint::from_url("redis://:pw@h:7/2?server_code=module")
            .unwrap()
            .unwrap();
        assert_eq!(forced.server_code(), ServerCode::Module);
        assert_eq!((forced.port(), forced.preamble_replies()), (7, 2));
        let plain = Endpoint::from_url("redis://h/").unwrap().unwrap();
        assert_eq!(plain.server_code(), ServerCode::Auto);
        assert!(Endpoint::from_url("redis://h/?server_code=fast").is_err());
    }
}
