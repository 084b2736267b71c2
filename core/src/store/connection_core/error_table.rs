//! The one table that sorts every failure met on the way to Redis into an outage, a configuration
//! error or a bug. Every path (the async connections, the blocking lane, Node's wire client) turns
//! server errors and transport failures into typed errors here and nowhere else.
//!
//! | what | kind | error |
//! |---|---|---|
//! | refused, reset or closed connection; a call that timed out (it may have run) | outage | `StoreUnavailable` / `Timeout` |
//! | a connection that did not open in time (nothing was sent) | outage | `StoreUnavailable` ([`connect_timed_out`]) |
//! | `LOADING`, `BUSY`, `MASTERDOWN`, `CLUSTERDOWN`, `TRYAGAIN`, `READONLY`, `OOM`, `MISCONF`, `NOREPLICAS`, `ERR max number of clients reached` | outage | `StoreUnavailable` |
//! | `NOAUTH`, `WRONGPASS`, a failed `AUTH` (also after a password rotation), `ERR Protocol error: unauthenticated ...` (a password set since connecting) | configuration | `Configuration { setting: "url (user and password)" }` |
//! | the same behind Sentinel, when the store gives the sentinels credentials of their own (`sentinel_password`) | configuration | `Configuration { setting: "url (the master's user and password) or sentinel_username, sentinel_password (the sentinels')" }` |
//! | `NOPERM` | configuration | `Configuration { setting: "the ACL permissions of the URL's user" }` |
//! | `NOPERM` while the sentinels are asked for the master, when they have credentials of their own | configuration | `Configuration { setting: "the ACL permissions of the URL's user (the master's) or of the sentinels' user (sentinel_username, else default)" }` |
//! | `ERR DB index is out of range`, `ERR invalid DB index` | configuration | `Configuration { setting: "url (db index)" }` |
//! | `ERR unknown command` (a renamed or disabled `EVALSHA`, `SCRIPT`) | configuration | `Configuration { setting: "the server's command set" }` |
//! | a TLS certificate the client does not trust | configuration | `Configuration { setting: "the CA to trust (tls_root_ca)" }` |
//! | a TLS alert by which the server refuses the client for its certificate (`tls-auth-clients yes`, Redis's default: none given, or one its CA did not sign) | configuration | `Configuration { setting: "the client certificate (tls_client_cert, tls_client_key) or the server's tls-auth-clients" }` ([`SETTING_CLIENT_CERTIFICATE`]) |
//! | a TLS alert for want of a shared version or cipher (`protocol_version`, `handshake_failure`, `insufficient_security`; over TLS 1.2 also a missing client certificate) | configuration | `Configuration { setting: "the server's tls-protocols, or the client certificate (tls_client_cert, tls_client_key)" }` |
//! | a proxy's word for a server it cannot reach: one of [`PROXY_OUTAGES`], exactly (twemproxy, Envoy) | outage | `StoreUnavailable` |
//! | `MOVED` or `ASK` on a plain `redis://` URL (it names one node of a Cluster) | configuration | `Configuration { setting: "url (a Redis Cluster needs redis+cluster://, or rediss+cluster://)" }` |
//! | `NOSCRIPT` right after `SCRIPT LOAD` (a proxy that loads and calls on different servers, scripts flushed again and again) | configuration | `Configuration { setting: "the server's script cache" }` |
//! | a script's own `ERR ratelock: ...`, a Lua runtime error, `WRONGTYPE`, any other `ERR`, an error code ratelock does not know, a malformed reply | bug | `Protocol` |
//!
//! Outages follow the failure policy; configuration errors and bugs always raise. A `NOPERM` met by a
//! capability probe is not sorted here: the probe takes it to mean "use the fallback path".

use crate::error::{Error, NOTHING_SENT};

/// Server error codes that mean the server cannot serve now but will (an outage).
const OUTAGE_CODES: &[&str] = &[
    "LOADING",
    "BUSY",
    "MASTERDOWN",
    "CLUSTERDOWN",
    "TRYAGAIN",
    "READONLY",
    "OOM",
    "MISCONF",
    "NOREPLICAS",
];

/// The setting a user fixes for an authentication failure.
pub const SETTING_CREDENTIALS: &str = "url (user and password)";
/// The setting a user fixes for an authentication failure behind Sentinel when the sentinels have
/// credentials of their own (redis-rs does not say which side refused).
pub const SETTING_SENTINEL_CREDENTIALS: &str =
    "url (the master's user and password) or sentinel_username, sentinel_password (the sentinels')";
/// The setting a user fixes for a missing ACL permission.
pub const SETTING_ACL: &str = "the ACL permissions of the URL's user";
/// The setting a user fixes for a missing ACL permission met while the sentinels are asked for the
/// master, when the sentinels have credentials of their own: redis-rs checks each side with `ROLE` and
/// does not say which side refused.
pub const SETTING_SENTINEL_ACL: &str =
    "the ACL permissions of the URL's user (the master's) or of the sentinels' user (sentinel_username, else default)";
/// The setting a user fixes for a database index the server does not have.
pub const SETTING_DB: &str = "url (db index)";
/// The setting a user fixes when the server's TLS certificate is not trusted.
pub const SETTING_TLS: &str = "the CA to trust (tls_root_ca)";
/// The setting a user fixes when the server refuses the client's certificate, or the lack of one.
pub const SETTING_CLIENT_CERTIFICATE: &str =
    "the client certificate (tls_client_cert, tls_client_key) or the server's tls-auth-clients";
/// The setting a user fixes when the server's TLS handshake finds no version or cipher ratelock speaks
/// (or, over TLS 1.2, no client certificate it accepts).
pub const SETTING_TLS_VERSIONS: &str =
    "the server's tls-protocols, or the client certificate (tls_client_cert, tls_client_key)";
/// The setting a user fixes when the server refuses a command ratelock must run.
pub const SETTING_COMMANDS: &str = "the server's command set";
/// The setting a user fixes when a plain URL names one node of a Redis Cluster.
pub const SETTING_CLUSTER_URL: &str =
    "url (a Redis Cluster needs redis+cluster://host:port,..., or rediss+cluster:// over TLS)";
/// The setting a user fixes when loaded scripts do not stay loaded.
pub const SETTING_SCRIPT_CACHE: &str =
    "the server's script cache (a proxy that loads and runs scripts on different servers?)";

/// The setting constant whose text is `text` (as an error that crossed a text-only channel names it);
/// the URL for a text no setting has.
#[cfg(feature = "cluster")]
pub(crate) fn setting_named(text: &str) -> &'static str {
    [
        SETTING_CREDENTIALS,
        SETTING_SENTINEL_CREDENTIALS,
        SETTING_ACL,
        SETTING_SENTINEL_ACL,
        SETTING_DB,
        SETTING_TLS,
        SETTING_CLIENT_CERTIFICATE,
        SETTING_TLS_VERSIONS,
        SETTING_COMMANDS,
        SETTING_CLUSTER_URL,
        SETTING_SCRIPT_CACHE,
    ]
    .into_iter()
    .find(|setting| *setting == text)
    .unwrap_or("url")
}

/// The error replies of proxies in front of Redis that mean "the server behind me cannot be reached"
/// (an outage), as whole texts: twemproxy forwards the socket error (`ERR Connection refused`, ...);
/// Envoy's Redis proxy answers `no upstream host` and `upstream failure`. Nothing else is read as an
/// outage: an error reply ratelock does not know is a bug (a protocol error), never a reason to let
/// traffic through under `on_error="allow"`.
pub const PROXY_OUTAGES: &[&str] = &[
    "ERR Connection refused",
    "ERR Connection timed out",
    "ERR Connection reset by peer",
    "ERR Broken pipe",
    "ERR Host is unreachable",
    "ERR No route to host",
    "no upstream host",
    "upstream failure",
    "upstream connection failure",
];

/// A server's error reply (`code` is its first word, `details` the rest) as a typed error.
///
/// ```
/// use ratelock::store::connection_core::server_error;
/// assert!(server_error("LOADING", "Redis is loading the dataset in memory").is_store_failure());
/// assert!(server_error("WRONGPASS", "invalid username-password pair").is_configuration());
/// assert!(server_error("NOPERM", "this user has no permissions to run the 'evalsha' command").is_configuration());
/// assert!(server_error("ERR", "DB index is out of range").is_configuration());
/// assert!(server_error("ERR", "ratelock: cost exceeds capacity of rule 1").is_protocol());
/// assert!(server_error("WRONGTYPE", "Operation against a key holding the wrong kind of value").is_protocol());
/// ```
pub fn server_error(code: &str, details: &str) -> Error {
    let text = || format!("{code} {details}");
    if OUTAGE_CODES.contains(&code) || (code == "ERR" && details.starts_with("max number of clients")) {
        return Error::StoreUnavailable(text());
    }
    // `ERR Protocol error: unauthenticated multibulk length` (or `bulk length`) is how Redis answers a
    // long command from a client that must authenticate and has not: a password set since connecting.
    let credentials = code == "NOAUTH"
        || code == "WRONGPASS"
        || (code == "ERR"
            && (details.starts_with("invalid password")
                || details.starts_with("AUTH ")
                || details.starts_with("Protocol error: unauthenticated")));
    if credentials {
        return Error::configuration(SETTING_CREDENTIALS, text());
    }
    if code == "NOPERM" {
        return Error::configuration(SETTING_ACL, text());
    }
    if code == "ERR"
        && (details.starts_with("DB index is out of range") || details.starts_with("invalid DB index"))
    {
        return Error::configuration(SETTING_DB, text());
    }
    if code == "ERR" && details.starts_with("unknown command") {
        return Error::configuration(SETTING_COMMANDS, text());
    }
    if code == "MOVED" || code == "ASK" {
        return Error::configuration(SETTING_CLUSTER_URL, text());
    }
    if PROXY_OUTAGES.contains(&text().as_str()) {
        return Error::StoreUnavailable(text());
    }
    // `ERR` and `WRONGTYPE` from ratelock's own scripts, and any code ratelock does not know: a bug or
    // a state nobody planned for, which raises whatever the failure policy says.
    Error::Protocol(text())
}

/// Whether the server closes the connection after this error reply: Redis does after every `ERR
/// Protocol error: ...` (a request it cannot read, or too long a command from a client that has not
/// authenticated). A call written on that connection before the close shows would fail as an outage,
/// so the connection is not used again.
///
/// ```
/// use ratelock::store::connection_core::server_closes_after;
/// assert!(server_closes_after("ERR", "Protocol error: unauthenticated multibulk length"));
/// assert!(!server_closes_after("ERR", "unknown command 'FCALL'"));
/// ```
pub fn server_closes_after(code: &str, details: &str) -> bool {
    code == "ERR" && details.starts_with("Protocol error")
}

/// `NOSCRIPT` in answer to a call made right after its `SCRIPT LOAD`: scripts do not stay loaded on
/// this server, which no retry mends.
pub fn noscript_after_load() -> Error {
    Error::configuration(
        SETTING_SCRIPT_CACHE,
        "NOSCRIPT right after SCRIPT LOAD: the script did not stay loaded",
    )
}

/// A failure reported by redis-rs's connections as a typed error (`timeout` names the call's limit).
#[cfg(feature = "redis")]
pub(crate) fn redis_error(err: &redis::RedisError, timeout: std::time::Duration) -> Error {
    use redis::ErrorKind;
    if err.is_timeout() {
        return Error::Timeout(timeout);
    }
    if let Some(code) = err.code() {
        return server_error(code, err.detail().unwrap_or_default());
    }
    match err.kind() {
        // redis-rs reports any error reply to AUTH as an authentication failure, a full server too.
        ErrorKind::AuthenticationFailed if err.to_string().contains("max number of clients") => {
            Error::StoreUnavailable(err.to_string())
        }
        ErrorKind::AuthenticationFailed => Error::configuration(SETTING_CREDENTIALS, err.to_string()),
        ErrorKind::InvalidClientConfig => Error::configuration("url", err.to_string()),
        ErrorKind::Parse | ErrorKind::UnexpectedReturnType => Error::Protocol(err.to_string()),
        _ => connection_failure(&err.to_string()),
    }
}

/// A connection that failed for the reason `why` (a socket's or a TLS handshake's words): an outage,
/// unless the server's TLS alert refused the client ([`client_refused`]) or the handshake refused the
/// server's certificate (not signed by a trusted root, expired, or not naming the host), each of which
/// fails every connection until a setting changes: a configuration error. The TLS stacks ratelock runs
/// on (rustls here, Node's OpenSSL on the wire path) all say "certificate" in the latter case.
///
/// ```
/// use ratelock::store::connection_core::connection_failure;
/// assert!(connection_failure("unable to verify the first certificate").is_configuration());
/// assert!(connection_failure("connect ECONNREFUSED 127.0.0.1:6379").is_store_failure());
/// ```
pub fn connection_failure(why: &str) -> Error {
    if let Some(refused) = client_refused(why) {
        return refused;
    }
    if why.contains("certificate") {
        return Error::configuration(SETTING_TLS, why);
    }
    Error::StoreUnavailable(why.to_owned())
}

/// The configuration error a broken TLS connection stands for when `why` (a socket's or a TLS stack's
/// words) carries the server's alert refusing the client, which every connection meets alike:
/// - for its certificate: Redis asks clients for one by default (`tls-auth-clients yes`), and the store
///   was given none (`tls_client_cert`) or one the server's CA did not sign. Over TLS 1.3 the alert
///   comes after the handshake, so the first call's bytes went out (nothing ran); over TLS 1.2 the
///   server says `handshake_failure` during the handshake;
/// - for want of a shared TLS version or cipher (`protocol_version`, `insufficient_security`,
///   `handshake_failure`): ratelock's own TLS speaks TLS 1.3 and 1.2.
///
/// The alert is read by its name, after "alert": rustls's ("received fatal alert: CertificateRequired")
/// or OpenSSL's (Node's wire path: "tlsv13 alert certificate required", "sslv3 alert handshake
/// failure"); any other text is `None`.
///
/// ```
/// use ratelock::store::connection_core::client_refused;
/// let refused = client_refused("reading: received fatal alert: CertificateRequired").unwrap();
/// assert!(refused.is_configuration());
/// assert!(refused.to_string().contains("tls-auth-clients"));
/// assert!(client_refused("error:0A00045C:SSL routines::tlsv13 alert certificate required:rec_layer.c").is_some());
/// let versions = client_refused("received fatal alert: ProtocolVersion").unwrap();
/// assert!(versions.to_string().contains("tls-protocols"));
/// assert!(client_refused("connection reset by peer").is_none());
/// // An "alert" that names no alert (here in a host name) is not one.
/// assert!(client_refused(r#"certificate not valid for name "redis-alerts.internal""#).is_none());
/// ```
pub fn client_refused(why: &str) -> Option<Error> {
    let named = alert_name(why)?;
    let about_the_certificate = [
        "certificaterequired",
        "badcertificate",
        "unsupportedcertificate",
        "certificaterevoked",
        "certificateexpired",
        "certificateunknown",
        "unknownca",
        "accessdenied",
    ];
    let about_the_versions = ["handshakefailure", "protocolversion", "insufficientsecurity"];
    if about_the_certificate.contains(&named.as_str()) {
        return Some(Error::configuration(
            SETTING_CLIENT_CERTIFICATE,
            format!(
                "the server refused the TLS connection for the client's certificate ({why}): give the \
                 store a client certificate the server's tls-ca-cert-file signed (tls_client_cert and \
                 tls_client_key), or set the server's tls-auth-clients to no or optional"
            ),
        ));
    }
    about_the_versions.contains(&named.as_str()).then(|| {
        Error::configuration(
            SETTING_TLS_VERSIONS,
            format!(
                "the server refused the TLS handshake ({why}): it shares no TLS version or cipher with \
                 ratelock (whose own TLS speaks TLS 1.3 and 1.2), or over TLS 1.2 it asks for a client \
                 certificate the store did not give or the server's CA did not sign: allow TLSv1.2 or \
                 TLSv1.3 in the server's tls-protocols, give the store a client certificate \
                 (tls_client_cert and tls_client_key), or set its tls-auth-clients to no or optional"
            ),
        )
    })
}

/// The alert's name in `why`, in lower case without spaces or punctuation (`certificaterequired`): the
/// words after the first "alert" that ends a word, up to a colon, parenthesis or comma.
fn alert_name(why: &str) -> Option<String> {
    let lower = why.to_ascii_lowercase();
    let (_, after) = lower
        .match_indices("alert")
        .map(|(at, word)| (at, &lower[at + word.len()..]))
        .find(|(_, after)| after.starts_with([' ', ':']))?;
    let named: String = after
        .trim_start_matches([' ', ':'])
        .split([':', '(', ',', ';'])
        .next()?
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    (!named.is_empty()).then_some(named)
}

/// A connection that did not open (TCP, TLS, the preamble) within `timeout`: an outage, and never
/// "the command may have run", since nothing was sent. On `rediss://` (`tls`) it names the usual cause
/// on a reachable host: a port that serves plain Redis reads the TLS hello as a command and waits.
///
/// ```
/// use std::time::Duration;
/// let err = ratelock::store::connection_core::connect_timed_out(Duration::from_millis(300), true);
/// assert!(err.is_store_failure());
/// assert!(err.to_string().contains("connecting timed out after 300 ms; nothing was sent"));
/// ```
pub fn connect_timed_out(timeout: std::time::Duration, tls: bool) -> Error {
    let hint = if tls {
        " (rediss://: a port that serves plain Redis never answers the TLS handshake; does this port serve TLS?)"
    } else {
        ""
    };
    Error::StoreUnavailable(format!(
        "connecting timed out after {} ms; {NOTHING_SENT}{hint}",
        timeout.as_millis()
    ))
}

/// A connection that failed (`why`, or a close when `None`) before the server answered its preamble
/// (AUTH, SELECT): an outage, and nothing but the preamble was sent, so no call may have run.
///
/// ```
/// let err = ratelock::store::connection_core::preamble_unanswered(None);
/// assert!(err.is_store_failure() && err.to_string().contains("nothing else was sent"));
/// ```
pub fn preamble_unanswered(why: Option<&str>) -> Error {
    let why = why.unwrap_or("the connection closed");
    Error::StoreUnavailable(format!(
        "connecting: {why} before the server answered AUTH or SELECT; nothing else was sent"
    ))
}

/// A failure of redis-rs while connecting (a connect timeout is [`connect_timed_out`], not a call's
/// timeout).
#[cfg(feature = "redis")]
pub(crate) fn connect_error(err: &redis::RedisError, timeout: std::time::Duration, tls: bool) -> Error {
    if err.is_timeout() {
        return connect_timed_out(timeout, tls);
    }
    redis_error(err, timeout)
}

/// A transport failure while `doing` something (connecting, sending, reading): always an outage.
#[cfg(feature = "redis")]
pub(crate) fn transport_error(err: &std::io::Error, doing: &str) -> Error {
    Error::StoreUnavailable(format!("{doing}: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outage_code_follows_the_policy_and_nothing_unknown_does() {
        for code in OUTAGE_CODES {
            assert!(server_error(code, "x").is_store_failure(), "{code}");
        }
        assert!(server_error("ERR", "max number of clients reached").is_store_failure());
        for (code, details) in [
            ("ERR", "Error running script (call to f_1): @user_script:1: boom"),
            ("ERR", "something new"),
            (
                "WRONGTYPE",
                "Operation against a key holding the wrong kind of value",
            ),
        ] {
            assert!(server_error(code, details).is_protocol(), "{code} {details}");
        }
        for (code, details) in [
            ("no", "upstream host"),
            ("upstream", "failure"),
            ("ERR", "Connection refused"),
            ("ERR", "Connection timed out"),
        ] {
            assert!(server_error(code, details).is_store_failure(), "{code} {details}");
        }
        // Not outages: a code nobody listed, and an ERR that merely mentions a timeout or an upstream.
        for (code, details) in [
            ("NEWCODE", "never seen"),
            ("ERR", "upstream failure while decoding your argument"),
            ("ERR", "script timeout parameter must be positive"),
            ("ERR", "upstream failure"),
        ] {
            assert!(server_error(code, details).is_protocol(), "{code} {details}");
        }
    }

    #[test]
    fn configuration_errors_name_the_setting_to_fix() {
        let cases = [
            ("NOAUTH", "Authentication required.", SETTING_CREDENTIALS),
            (
                "WRONGPASS",
                "invalid username-password pair or user is disabled.",
                SETTING_CREDENTIALS,
            ),
            (
                "ERR",
                "AUTH <password> called without any password configured for the default user.",
                SETTING_CREDENTIALS,
            ),
            (
                "NOPERM",
                "User app has no permissions to run the 'evalsha' command",
                SETTING_ACL,
            ),
            ("ERR", "DB index is out of range", SETTING_DB),
            (
                "ERR",
                "unknown command 'EVALSHA', with args beginning with: ",
                SETTING_COMMANDS,
            ),
            ("MOVED", "3999 127.0.0.1:6381", SETTING_CLUSTER_URL),
            ("ASK", "3999 127.0.0.1:6381", SETTING_CLUSTER_URL),
        ];
        for (code, details, setting) in cases {
            match server_error(code, details) {
                Error::Configuration { setting: named, .. } => assert_eq!(named, setting),
                other => panic!("{code} {details}: {other:?}"),
            }
        }
        assert!(server_error("WRONGPASS", "invalid").is_configuration());
    }
}
