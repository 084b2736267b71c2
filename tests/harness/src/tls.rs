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
        // A directory an earlier process of the same id left holds certificates of another CA.
        match std::fs::remove_dir_all(&dir) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                panic!(
                    "remove the stale certificates' directory {}: {error}",
                    dir.display()
                )
            }
            _ => {}
        }
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
        self.sign("server.csr", "san.ext", "cert.pem");
    }

    /// Signs the request `csr` with the CA, adding the extensions in `ext`, into `out` (valid one day).
    fn sign(&self, csr: &str, ext: &str, out: &str) {
        self.run(&[
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            ext,
            "-out",
            out,
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

    /// A client certificate the CA signed (for `ratelock client`), with its key, in PEM (`tls_client_cert`,
    /// `tls_client_key`): made on the first ask.
    pub fn client_pem(&self) -> (Vec<u8>, Vec<u8>) {
        self.client_pem_keyed("client", &["-newkey", "rsa:2048"])
    }

    /// [`client_pem`](Self::client_pem) with a key of another kind, as `openssl req` makes it from
    /// `key_args` (e.g. `["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-521"]`), in files named
    /// after `stem` (one stem, one kind of key: the files are made on the stem's first ask).
    pub fn client_pem_keyed(&self, stem: &str, key_args: &[&str]) -> (Vec<u8>, Vec<u8>) {
        let (pem, key, csr, ext) = (
            format!("{stem}.pem"),
            format!("{stem}.key"),
            format!("{stem}.csr"),
            format!("{stem}.ext"),
        );
        if !self.dir.join(&pem).exists() {
            let mut args = vec!["req"];
            args.extend_from_slice(key_args);
            args.extend([
                "-nodes",
                "-subj",
                "/CN=ratelock client",
                "-keyout",
                &key,
                "-out",
                &csr,
            ]);
            self.run(&args);
            std::fs::write(
                self.dir.join(&ext),
                "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
            )
            .expect("write the client certificate's extensions");
            self.sign(&csr, &ext, &pem);
        }
        let read = |file: &str| std::fs::read(self.dir.join(file)).expect("read the client certificate");
        (read(&pem), read(&key))
    }

    /// [`server_args`](Self::server_args) for a server that asks every client for a certificate its CA
    /// signed (`tls-auth-clients yes`, Redis's default), speaking only the TLS `versions` given
    /// (`tls-protocols`, such as `"TLSv1.2"`; every version Redis speaks when empty).
    pub fn server_args_asking_clients(&self, tls_port: u16, versions: &str) -> Vec<String> {
        let mut args = self.server_args(tls_port);
        let asks = args.len() - 1;
        args[asks] = "yes".into();
        if !versions.is_empty() {
            args.extend(["--tls-protocols".into(), versions.into()]);
        }
        args
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
