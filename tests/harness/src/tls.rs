//! Certificates for servers that speak TLS in tests: a private CA and a server certificate signed by it
//! (for `localhost` and `127.0.0.1` unless told otherwise), made with the openssl CLI in a directory of
//! their own.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A private CA and a server certificate signed by it, in `dir` (removed when dropped).
pub struct TestCertificates {
    dir: PathBuf,
}

impl TestCertificates {
    /// Makes them in a fresh directory named after `name` and this process.
    pub fn make(name: &str) -> Self {
        let certificates = Self::empty(name);
        certificates.run(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=ratelock test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ]);
        certificates.issue("DNS:localhost,IP:127.0.0.1");
        certificates
    }

    /// Another server certificate from the same CA, naming only `names` (a subjectAltName list, such as
    /// `DNS:localhost`), in a directory of its own named after `name`.
    pub fn sibling(&self, name: &str, names: &str) -> Self {
        let sibling = Self::empty(name);
        for file in ["ca.pem", "ca.key"] {
            std::fs::copy(self.dir.join(file), sibling.dir.join(file)).expect("copy the CA");
        }
        sibling.issue(names);
        sibling
    }

    fn empty(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("ratelock-tls-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the certificates' directory");
        TestCertificates { dir }
    }

    /// A server key and a certificate for `names` signed by the CA.
    fn issue(&self, names: &str) {
        self.run(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "key.pem",
            "-out",
            "server.csr",
        ]);
        std::fs::write(
            self.dir.join("san.ext"),
            format!("subjectAltName={names}\nbasicConstraints=CA:FALSE\n"),
        )
        .expect("write the certificate's extensions");
        self.run(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "san.ext",
            "-out",
            "cert.pem",
        ]);
    }

    fn run(&self, args: &[&str]) {
        let status = Command::new("openssl")
            .current_dir(&self.dir)
            .args(args)
            .stderr(Stdio::null())
            .status()
            .expect("openssl is needed to make test certificates: apt-get install -y openssl");
        assert!(status.success(), "openssl {args:?} failed");
    }

    /// The CA's certificate (PEM), as a client trusts it (`tls_root_ca`).
    pub fn ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.dir.join("ca.pem")).expect("read the CA's certificate")
    }

    /// The server's certificate file.
    pub fn cert(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    /// The server's key file.
    pub fn key(&self) -> PathBuf {
        self.dir.join("key.pem")
    }

    /// The CA's certificate file.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// `redis-server` arguments that serve TLS on `tls_port` with these certificates (clients are not
    /// asked for certificates of their own).
    pub fn server_args(&self, tls_port: u16) -> Vec<String> {
        let path = |p: PathBuf| p.to_string_lossy().into_owned();
        vec![
            "--tls-port".into(),
            tls_port.to_string(),
            "--tls-cert-file".into(),
            path(self.cert()),
            "--tls-key-file".into(),
            path(self.key()),
            "--tls-ca-cert-file".into(),
            path(self.ca()),
            "--tls-auth-clients".into(),
            "no".into(),
        ]
    }
}

impl Drop for TestCertificates {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
