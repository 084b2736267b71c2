//! The byte stream under ratelock's own pipelined connection: TCP, a Unix socket (`redis+unix://`), or
//! TLS over TCP (`rediss://`: rustls, TLS 1.3 or 1.2, verifying the server's certificate against
//! `tls_root_ca` or the public roots, and its name against the URL's host, `#insecure` checks neither;
//! presenting `tls_client_cert` when the server asks), opened and split
//! into a read half and a write half. The socket's descriptor stays visible, so that an idle
//! connection can be peeked at for a close before a call is written to it, whatever runs over it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

#[cfg(feature = "tls")]
use tokio::io::AsyncWriteExt;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::{tcp, TcpStream};
#[cfg(unix)]
use tokio::net::{unix, UnixStream};

use super::endpoint::Endpoint;
use super::tls_settings::TlsSettings;
use crate::error::Result;
use crate::store::connection_core::transport_error;

#[cfg(feature = "tls")]
type TlsStream = tokio_rustls::client::TlsStream<TcpStream>;

/// A connection's read half.
pub(crate) enum ReadHalf {
    Tcp(tcp::OwnedReadHalf),
    #[cfg(unix)]
    Unix(unix::OwnedReadHalf),
    #[cfg(feature = "tls")]
    Tls(tokio::io::ReadHalf<TlsStream>),
}

/// A connection's write half. TCP and Unix sockets take a write without waiting (a lone caller writes
/// its own call); TLS writes go through the connection's writer task, one at a time.
pub(crate) enum WriteHalf {
    Tcp(tcp::OwnedWriteHalf),
    #[cfg(unix)]
    Unix(unix::OwnedWriteHalf),
    #[cfg(feature = "tls")]
    Tls(tokio::sync::Mutex<tokio::io::WriteHalf<TlsStream>>),
}

/// An open connection: its halves, and its socket's descriptor (for peeking at a close).
pub(crate) struct Opened {
    pub(crate) reader: ReadHalf,
    pub(crate) writer: WriteHalf,
    #[cfg(unix)]
    pub(crate) fd: std::os::fd::RawFd,
}

/// Opens a connection to `endpoint`; on `rediss://`, the handshake trusts and presents what
/// `tls_settings` say. A refused certificate is a configuration error; anything else that fails is an outage.
pub(crate) async fn open(endpoint: &Endpoint, tls_settings: &TlsSettings) -> Result<Opened> {
    #[cfg(unix)]
    if let Some(path) = endpoint.unix_path() {
        let socket = UnixStream::connect(path)
            .await
            .map_err(|err| transport_error(&err, "connecting"))?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
        let (reader, writer) = socket.into_split();
        return Ok(Opened {
            reader: ReadHalf::Unix(reader),
            writer: WriteHalf::Unix(writer),
            fd,
        });
    }
    let socket = TcpStream::connect((endpoint.host(), endpoint.port()))
        .await
        .map_err(|err| transport_error(&err, "connecting"))?;
    let _ = socket.set_nodelay(true);
    if endpoint.tls() {
        #[cfg(feature = "tls")]
        {
            #[cfg(unix)]
            let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
            let tls = tls::handshake(socket, endpoint, tls_settings).await?;
            let (reader, writer) = tokio::io::split(tls);
            return Ok(Opened {
                reader: ReadHalf::Tls(reader),
                writer: WriteHalf::Tls(tokio::sync::Mutex::new(writer)),
                #[cfg(unix)]
                fd,
            });
        }
        #[cfg(not(feature = "tls"))]
        return Err(crate::error::Error::invalid_argument(
            "url",
            "rediss:// needs ratelock's `tls` feature",
        ));
    }
    let _ = tls_settings;
    Ok(Opened::tcp(socket))
}

impl Opened {
    /// A plain TCP connection's halves.
    pub(crate) fn tcp(socket: TcpStream) -> Opened {
        #[cfg(unix)]
        let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
        let (reader, writer) = socket.into_split();
        Opened {
            reader: ReadHalf::Tcp(reader),
            writer: WriteHalf::Tcp(writer),
            #[cfg(unix)]
            fd,
        }
    }
}

impl AsyncRead for ReadHalf {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Tcp(reader) => Pin::new(reader).poll_read(cx, buf),
            #[cfg(unix)]
            ReadHalf::Unix(reader) => Pin::new(reader).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            ReadHalf::Tls(reader) => Pin::new(reader).poll_read(cx, buf),
        }
    }
}

impl WriteHalf {
    /// Writes what the socket takes now, without waiting; `WouldBlock` when it takes nothing now, and
    /// always on TLS (whose writes the writer task makes).
    pub(crate) fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            WriteHalf::Tcp(writer) => writer.try_write(bytes),
            #[cfg(unix)]
            WriteHalf::Unix(writer) => writer.try_write(bytes),
            #[cfg(feature = "tls")]
            WriteHalf::Tls(_) => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Writes all of `bytes`, waiting as needed: how many bytes left, and the failure that stopped it,
    /// if any (a TLS write is flushed to the socket before it counts as whole).
    pub(crate) async fn write_counted(&self, bytes: &[u8]) -> (usize, Option<io::Error>) {
        match self {
            WriteHalf::Tcp(writer) => {
                write_when_ready(bytes, |rest| writer.try_write(rest), || writer.writable()).await
            }
            #[cfg(unix)]
            WriteHalf::Unix(writer) => {
                write_when_ready(bytes, |rest| writer.try_write(rest), || writer.writable()).await
            }
            #[cfg(feature = "tls")]
            WriteHalf::Tls(writer) => {
                let mut written = 0;
                let mut writer = writer.lock().await;
                while written < bytes.len() {
                    match writer.write(&bytes[written..]).await {
                        Ok(0) => return (written, Some(io::ErrorKind::WriteZero.into())),
                        Ok(sent) => written += sent,
                        Err(err) => return (written, Some(err)),
                    }
                }
                // Bytes rustls took may still wait in its buffer: they count once they reach the socket
                // (a failure now may have sent some of them).
                if let Err(err) = writer.flush().await {
                    return (written, Some(err));
                }
                (written, None)
            }
        }
    }
}

/// Writes all of `bytes` through a socket half's `try_write`, waiting on its `writable` whenever it
/// takes nothing: how many bytes left, and the failure that stopped it, if any.
async fn write_when_ready<Ready: std::future::Future<Output = io::Result<()>>>(
    bytes: &[u8],
    try_write: impl Fn(&[u8]) -> io::Result<usize>,
    writable: impl Fn() -> Ready,
) -> (usize, Option<io::Error>) {
    let mut written = 0;
    while written < bytes.len() {
        match try_write(&bytes[written..]) {
            Ok(0) => return (written, Some(io::ErrorKind::WriteZero.into())),
            Ok(sent) => written += sent,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                if let Err(err) = writable().await {
                    return (written, Some(err));
                }
            }
            Err(err) => return (written, Some(err)),
        }
    }
    (written, None)
}

#[cfg(feature = "tls")]
mod tls {
    use std::sync::Arc;

    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::crypto::CryptoProvider;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{DigitallySignedStruct, SignatureScheme};
    use tokio::net::TcpStream;

    use super::{Endpoint, TlsSettings, TlsStream};
    use crate::error::{Error, Result};
    use crate::store::connection_core::{connection_failure, SETTING_TLS};
    use crate::store::tls_options::{read_certificates, read_client_certificate};
    use crate::store::TLS_OPTION_NAMES;

    /// The TLS handshake over `socket`, verifying the server's certificate for the endpoint's host
    /// (unless the endpoint is `#insecure`).
    pub(super) async fn handshake(
        socket: TcpStream,
        endpoint: &Endpoint,
        settings: &TlsSettings,
    ) -> Result<TlsStream> {
        let config = client_config(settings, endpoint.insecure())?;
        let host = endpoint.host();
        let name = ServerName::try_from(host.to_owned())
            .map_err(|err| Error::invalid_argument("url", format!("the host {host:?}: {err}")))?;
        tokio_rustls::TlsConnector::from(config)
            .connect(name, socket)
            .await
            .map_err(|err| connection_failure(&format!("connecting (TLS handshake): {err}")))
    }

    /// The client's TLS configuration (TLS 1.3 and 1.2): `settings`' CA as the only trusted roots (read
    /// as the store's options read them when they were made), else the public (webpki) ones, or, when
    /// `insecure`, any certificate for any name; and `settings`' client certificate, presented when the
    /// server asks for one.
    fn client_config(settings: &TlsSettings, insecure: bool) -> Result<Arc<rustls::ClientConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|err| Error::configuration(SETTING_TLS, err))?;
        let verified = if insecure {
            let verifier = Arc::new(AnyCertificate(provider));
            builder.dangerous().with_custom_certificate_verifier(verifier)
        } else {
            let [ca_name, _, _] = TLS_OPTION_NAMES;
            let roots = match &settings.root_ca {
                Some(pem) => read_certificates(pem, ca_name)?,
                None => rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            };
            builder.with_root_certificates(roots)
        };
        let config = match (&settings.client_cert, &settings.client_key) {
            (Some(certificate), Some(key)) => {
                let client = read_client_certificate(certificate, key, TLS_OPTION_NAMES)?;
                verified
                    .with_client_auth_cert(client.chain, client.key)
                    .map_err(|err| Error::invalid_argument(TLS_OPTION_NAMES[2], err))?
            }
            _ => verified.with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }

    /// `#insecure`'s verifier: any certificate, for any name, is taken; the handshake's signatures are
    /// still checked with the provider's algorithms (the server holds the key of the certificate it
    /// sent, whoever signed that certificate).
    #[derive(Debug)]
    struct AnyCertificate(Arc<CryptoProvider>);

    impl ServerCertVerifier for AnyCertificate {
        fn verify_server_cert(
            &self,
            _end_entity: &CertificateDer<'_>,
            _intermediates: &[CertificateDer<'_>],
            _server_name: &ServerName<'_>,
            _ocsp_response: &[u8],
            _now: UnixTime,
        ) -> std::result::Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }

        fn verify_tls12_signature(
            &self,
            message: &[u8],
            certificate: &CertificateDer<'_>,
            signed: &DigitallySignedStruct,
        ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
            let algorithms = &self.0.signature_verification_algorithms;
            rustls::crypto::verify_tls12_signature(message, certificate, signed, algorithms)
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            certificate: &CertificateDer<'_>,
            signed: &DigitallySignedStruct,
        ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
            let algorithms = &self.0.signature_verification_algorithms;
            rustls::crypto::verify_tls13_signature(message, certificate, signed, algorithms)
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }
}
