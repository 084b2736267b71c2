//! The store options as JavaScript spells them, for the errors that name one: the checks at
//! construction pass these names, and a configuration error from the core has its names (Rust's,
//! `tls_root_ca`) replaced by them.

/// The TLS options as JavaScript spells them.
pub(crate) const TLS_OPTION_NAMES: ratelock::store::TlsOptionNames =
    ["tlsRootCa", "tlsClientCert", "tlsClientKey"];

/// The Sentinel options as JavaScript spells them.
pub(crate) const SENTINEL_OPTION_NAMES: ratelock::store::SentinelOptionNames =
    ["sentinelUsername", "sentinelPassword"];

/// The memory store's bound options as JavaScript spells them.
pub(crate) const MEMORY_OPTION_NAMES: [&str; 2] = ["maxKeys", "whenFull"];

/// `message` with each store option Rust names spelled as JavaScript does.
pub(crate) fn in_javascript_names(message: &str) -> String {
    let rust = ratelock::store::TLS_OPTION_NAMES
        .iter()
        .chain(&ratelock::store::SENTINEL_OPTION_NAMES)
        .chain(&ratelock::store::MEMORY_OPTION_NAMES);
    let javascript = TLS_OPTION_NAMES
        .iter()
        .chain(&SENTINEL_OPTION_NAMES)
        .chain(&MEMORY_OPTION_NAMES);
    rust.zip(javascript)
        .fold(message.to_owned(), |message, (rust, javascript)| {
            message.replace(rust, javascript)
        })
}
