//! The TLS part of [`StoreOptions`]: the CA a `rediss://` store trusts and the client certificate it
//! presents, how a binding hands them over (read at once, named as its language spells them), and the
//! check that refuses them on a store that would not read them.

use super::options::StoreOptions;
use crate::error::{Error, Result};

/// How the caller's language spells the three TLS options, for the errors that name one: the CA, the
/// client certificate, its key. Rust and Python spell them [`TLS_OPTION_NAMES`].
pub type TlsOptionNames = [&'static str; 3];

/// The TLS options as Rust and Python spell them.
pub const TLS_OPTION_NAMES: TlsOptionNames = ["tls_root_ca", "tls_client_cert", "tls_client_key"];

impl StoreOptions {
    /// The same options trusting these PEM certificates for `rediss://`.
    pub fn with_tls_root_ca(mut self, pem: Vec<u8>) -> Self {
        self.tls_root_ca = Some(pem);
        self
    }

    /// [`with_tls_root_ca`](Self::with_tls_root_ca) as a binding receives it: the certificates are read
    /// now, and `name` (the option as the caller's language spells it) names a PEM that holds none or
    /// one that does not read. (A store checks them again when it is made, naming `tls_root_ca`.)
    ///
    /// ```
    /// let err = ratelock::StoreOptions::default()
    ///     .with_tls_root_ca_read(b"not a certificate".to_vec(), "tlsRootCa")
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("tlsRootCa"));
    /// ```
    pub fn with_tls_root_ca_read(self, pem: Vec<u8>, name: &'static str) -> Result<Self> {
        #[cfg(feature = "tls")]
        read_certificates(&pem, name)?;
        #[cfg(not(feature = "tls"))]
        let _ = name;
        Ok(self.with_tls_root_ca(pem))
    }

    /// The same options presenting a client certificate on `rediss://` (mutual TLS, which a Redis with
    /// `tls-auth-clients yes`, its default, asks for): `certificate` is its PEM chain (the client's own
    /// certificate first, then any intermediates), `key` its private key in PEM (PKCS#8, PKCS#1 or SEC1).
    pub fn with_tls_client_cert(mut self, certificate: Vec<u8>, key: Vec<u8>) -> Self {
        self.tls_client_cert = Some(certificate);
        self.tls_client_key = Some(key);
        self
    }

    /// [`with_tls_client_cert`](Self::with_tls_client_cert) as a binding receives it: either both or
    /// neither (one alone is refused, naming the other), read now; a certificate that does not read, a
    /// key that does not read, or a key that is not the certificate's is an invalid argument naming it as
    /// `names` spell it.
    ///
    /// ```
    /// use ratelock::store::TLS_OPTION_NAMES;
    /// let options = ratelock::StoreOptions::default();
    /// let alone = options.clone().with_tls_client_cert_read(Some(b"...".to_vec()), None, TLS_OPTION_NAMES);
    /// assert!(alone.unwrap_err().to_string().contains("tls_client_key"));
    /// assert!(options.with_tls_client_cert_read(None, None, TLS_OPTION_NAMES).is_ok());
    /// ```
    pub fn with_tls_client_cert_read(
        self,
        certificate: Option<Vec<u8>>,
        key: Option<Vec<u8>>,
        names: TlsOptionNames,
    ) -> Result<Self> {
        let [_, certificate_name, key_name] = names;
        match (certificate, key) {
            (None, None) => Ok(self),
            (Some(_), None) => Err(Error::invalid_argument(
                key_name,
                format!("the client certificate ({certificate_name}) needs its private key here too"),
            )),
            (None, Some(_)) => Err(Error::invalid_argument(
                certificate_name,
                format!("the private key ({key_name}) needs its client certificate here too"),
            )),
            (Some(certificate), Some(key)) => {
                #[cfg(feature = "tls")]
                read_client_certificate(&certificate, &key, names)?;
                Ok(self.with_tls_client_cert(certificate, key))
            }
        }
    }

    /// The three TLS options as a binding receives them (`[CA, client certificate, its key]`, PEM, each
    /// optional) for a store of `url`: first whether that store reads them at all (a PEM given with
    /// `redis://` is told to use `rediss://`, whatever it holds; see
    /// [`check_for_url`](Self::check_for_url)), then what they hold, as
    /// [`with_tls_root_ca_read`](Self::with_tls_root_ca_read) and
    /// [`with_tls_client_cert_read`](Self::with_tls_client_cert_read) read it, named as `names` spell
    /// them.
    ///
    /// ```
    /// let names = ["tlsRootCa", "tlsClientCert", "tlsClientKey"];
    /// let garbage = [Some(b"not a certificate".to_vec()), None, None];
    /// let options = ratelock::StoreOptions::default();
    /// let plain = options.clone().with_tls_for_url(garbage.clone(), "redis://cache:6379/", names);
    /// assert!(plain.unwrap_err().to_string().contains("rediss://"));
    /// let secure = options.with_tls_for_url(garbage, "rediss://cache:6380/", names);
    /// assert!(secure.unwrap_err().to_string().contains("tlsRootCa"));
    /// ```
    pub fn with_tls_for_url(
        mut self,
        pems: [Option<Vec<u8>>; 3],
        url: &str,
        names: TlsOptionNames,
    ) -> Result<Self> {
        let [root_ca, certificate, key] = pems;
        (self.tls_root_ca, self.tls_client_cert, self.tls_client_key) = (root_ca, certificate, key);
        self.check_for_url(url, names)?;
        let root_ca = self.tls_root_ca.take();
        let (certificate, key) = (self.tls_client_cert.take(), self.tls_client_key.take());
        let [ca_name, _, _] = names;
        if let Some(pem) = root_ca {
            self = self.with_tls_root_ca_read(pem, ca_name)?;
        }
        self.with_tls_client_cert_read(certificate, key, names)
    }

    /// `Ok` when the TLS options given read as what they are (see
    /// [`with_tls_client_cert_read`](Self::with_tls_client_cert_read)), named as Rust spells them.
    pub(crate) fn check_tls(&self) -> Result<()> {
        let [ca_name, _, _] = TLS_OPTION_NAMES;
        #[cfg(feature = "tls")]
        if let Some(pem) = &self.tls_root_ca {
            read_certificates(pem, ca_name)?;
        }
        #[cfg(not(feature = "tls"))]
        let _ = ca_name;
        let (certificate, key) = (self.tls_client_cert.clone(), self.tls_client_key.clone());
        StoreOptions::default()
            .with_tls_client_cert_read(certificate, key, TLS_OPTION_NAMES)
            .map(drop)
    }

    /// `Ok` unless a TLS option given would be ignored by the store `url` names; then the invalid
    /// argument naming it as `names` spell it: any TLS option with the memory store or a `redis://`,
    /// `redis+unix://`, `redis+cluster://`, `redis+sentinel://` or `redlock://` URL, since only
    /// `rediss://`, `rediss+cluster://` and `rediss+sentinel://` connect with TLS. A URL of no known form
    /// passes here, for the store to refuse as such. [`Store::new`](crate::Store::new) checks this with
    /// [`TLS_OPTION_NAMES`]; a binding checks first with its own names.
    ///
    /// ```
    /// let options = ratelock::StoreOptions::default().with_tls_root_ca(b"...".to_vec());
    /// let names = ["tlsRootCa", "tlsClientCert", "tlsClientKey"];
    /// let err = options.check_for_url("redis://cache:6379/", names).unwrap_err();
    /// assert!(err.to_string().contains("tlsRootCa"));
    /// assert!(options.check_for_url("rediss://cache:6380/", names).is_ok());
    /// assert!(options.check_for_url("", names).is_err()); // the memory store
    /// let mutual = ratelock::StoreOptions::default().with_tls_client_cert(b"...".to_vec(), b"...".to_vec());
    /// assert!(mutual.check_for_url("rediss+cluster://a:1,b:2#insecure", names).is_err());
    /// ```
    pub fn check_for_url(&self, url: &str, names: TlsOptionNames) -> Result<()> {
        const WITHOUT_TLS: [&str; 6] = [
            "memory://",
            "redis://",
            "redis+unix://",
            "redis+cluster://",
            "redis+sentinel://",
            "redlock://",
        ];
        let url = url.trim();
        let [_, certificate_name, _] = names;
        let routed = url.starts_with("rediss+cluster://") || url.starts_with("rediss+sentinel://");
        if routed && url.ends_with("#insecure") && self.tls_client_cert.is_some() {
            // The cluster's nodes and the master the sentinels name are reached over connections that
            // would not present it with #insecure: refused rather than left out.
            return Err(Error::invalid_argument(
                certificate_name,
                "a rediss+cluster:// or rediss+sentinel:// URL ending in #insecure does not present a \
                 client certificate on every connection: drop #insecure and give the servers' CA \
                 (tls_root_ca)",
            ));
        }
        let memory = matches!(url, "" | "memory");
        let Some(scheme) = WITHOUT_TLS
            .iter()
            .find(|scheme| memory || url.starts_with(**scheme))
        else {
            return Ok(());
        };
        let given = [&self.tls_root_ca, &self.tls_client_cert, &self.tls_client_key];
        let Some(named) = names
            .iter()
            .zip(given)
            .find_map(|(name, pem)| pem.is_some().then_some(*name))
        else {
            return Ok(());
        };
        Err(Error::invalid_argument(
            named,
            format!(
                "only a rediss://, rediss+cluster:// or rediss+sentinel:// URL (TLS) reads it, and this \
                 store is {scheme}; leave it out, or use rediss:// (rediss+cluster:// for a cluster, \
                 rediss+sentinel:// behind Sentinel)"
            ),
        ))
    }
}

/// The trust anchors `pem` holds (what a TLS handshake checks the server's chain against), when it holds
/// at least one certificate and every one reads as such: a CA given as anything else would trust
/// nothing, and every connection would fail later with a less clear error. `name` is the option's name
/// in errors.
#[cfg(feature = "tls")]
pub(crate) fn read_certificates(pem: &[u8], name: &'static str) -> Result<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    for certificate in certificate_chain(pem, name)? {
        roots.add(certificate).map_err(|err| {
            Error::invalid_argument(name, format!("a certificate in it does not read: {err}"))
        })?;
    }
    Ok(roots)
}

/// The client certificate's chain and its private key, when the chain holds at least one certificate,
/// the key reads, and the key is the first certificate's (a mismatch would only show as the server's
/// refusal of every connection). `names` name the options in errors.
#[cfg(feature = "tls")]
pub(crate) fn read_client_certificate(
    certificate: &[u8],
    key: &[u8],
    names: TlsOptionNames,
) -> Result<ClientCertificate> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::PrivateKeyDer;
    let [_, certificate_name, key_name] = names;
    let chain = certificate_chain(certificate, certificate_name)?;
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|err| {
        Error::invalid_argument(
            key_name,
            format!("holds no private key that reads (PEM: PKCS#8, PKCS#1 or SEC1): {err}"),
        )
    })?;
    let provider = rustls::crypto::ring::default_provider();
    // Loaded on its own first: a key that reads as PEM but that ring cannot load (ECDSA P-521, RSA
    // under 2048 bits, say) would otherwise be reported as the wrong key for the certificate.
    let signing_key = provider
        .key_provider
        .load_private_key(key.clone_key())
        .map_err(|err| {
            Error::invalid_argument(
                key_name,
                format!(
                    "holds a private key TLS here cannot load (it signs with RSA of 2048 to 4096 bits, \
                     ECDSA P-256 or P-384, or Ed25519; not P-521, Ed448 or RSA-PSS): {err}"
                ),
            )
        })?;
    let certified = rustls::sign::CertifiedKey::new(chain.clone(), signing_key);
    match certified.keys_match() {
        // A key whose public half cannot be told is taken, as rustls's own `from_der` takes it.
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => Ok(()),
        Err(err) => Err(err),
    }
    .map_err(|err| match err {
        rustls::Error::InvalidCertificate(why) => Error::invalid_argument(
            certificate_name,
            format!("its first certificate does not read: {why:?}"),
        ),
        other => Error::invalid_argument(
            key_name,
            format!("is not the private key of the client certificate ({certificate_name}): {other}"),
        ),
    })?;
    Ok(ClientCertificate { chain, key })
}

/// A client certificate as a TLS handshake presents it: the chain and its private key.
#[cfg(feature = "tls")]
pub(crate) struct ClientCertificate {
    pub(crate) chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    pub(crate) key: rustls::pki_types::PrivateKeyDer<'static>,
}

/// The certificates `pem` holds, at least one, each a PEM block that reads; `name` names the option.
#[cfg(feature = "tls")]
fn certificate_chain(
    pem: &[u8],
    name: &'static str,
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|err| Error::invalid_argument(name, format!("a PEM block in it does not read: {err}")))?;
    if chain.is_empty() {
        return Err(Error::invalid_argument(
            name,
            "holds no PEM certificate (a block from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----)",
        ));
    }
    Ok(chain)
}
