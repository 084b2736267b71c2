//! What one store's TLS connections trust and present, as its options gave them (PEM): the CA its
//! servers' certificates are checked against (else the public roots) and the client certificate with its
//! key (mutual TLS). Every connection of the store takes these: its own, the cluster nodes', the
//! sentinels', the subscriber's and Node's wire socket.

use crate::store::StoreOptions;

/// A store's TLS trust and identity (cheap enough to clone per connection: connections are few).
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct TlsSettings {
    /// PEM certificate(s) trusted in place of the public roots.
    pub(crate) root_ca: Option<Vec<u8>>,
    /// The client certificate (PEM chain) presented to a server that asks for one.
    pub(crate) client_cert: Option<Vec<u8>>,
    /// Its private key (PEM).
    pub(crate) client_key: Option<Vec<u8>>,
}

/// Which parts are given, never the private key's bytes.
impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("root_ca", &self.root_ca.is_some())
            .field("client_cert", &self.client_cert.is_some())
            .field("client_key", &self.client_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl TlsSettings {
    /// The TLS settings `options` give (checked by [`StoreOptions::check`] when the store was made).
    pub(crate) fn of(options: &StoreOptions) -> Self {
        TlsSettings {
            root_ca: options.tls_root_ca.clone(),
            client_cert: options.tls_client_cert.clone(),
            client_key: options.tls_client_key.clone(),
        }
    }

    /// The same settings as redis-rs takes them for the connections it opens (the subscriber's, the
    /// sentinels'), or `None` when they name nothing (the public roots, no client certificate).
    #[cfg(feature = "tls")]
    pub(crate) fn for_redis_rs(&self) -> Option<redis::TlsCertificates> {
        let client_tls = match (&self.client_cert, &self.client_key) {
            (Some(certificate), Some(key)) => Some(redis::ClientTlsConfig {
                client_cert: certificate.clone(),
                client_key: key.clone(),
            }),
            _ => None,
        };
        (client_tls.is_some() || self.root_ca.is_some()).then(|| redis::TlsCertificates {
            client_tls,
            root_cert: self.root_ca.clone(),
        })
    }
}
