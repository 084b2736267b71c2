"""Test harness for the Python package: a real redis-server on a free loopback port for the session,
stopped by PID at the end; never a mock, never skipped."""

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _listens(pid: int, port: int) -> bool:
    """Whether process `pid` listens on 127.0.0.1:`port`, as the kernel says (/proc/net/tcp against the
    process's sockets). A connect is no proof: a port picked free can be taken by another server before
    ours binds it (ours exits, and a connect reaches the other), and a connect to a port nobody listens
    on yet can connect to itself."""
    address = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as table:
        # Columns: sl, local_address, rem_address, st (0A: listening), ..., inode (the tenth).
        rows = [line.split() for line in table.readlines()[1:]]
    sockets = {f"socket:[{row[9]}]" for row in rows if len(row) > 9 and row[1] == address and row[3] == "0A"}
    if not sockets:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in sockets:
                return True
        except OSError:
            continue
    return False


class RedisServer:
    def __init__(self, *extra_args: str) -> None:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is required: apt-get install -y redis-server")
        self.extra_args = extra_args
        self.dir = tempfile.mkdtemp(prefix="ratelock-py-redis-")
        for _attempt in range(5):
            self.port = _free_port()
            if self._spawn():
                return
            # Another server took the port before ours bound it: a new port.
        shutil.rmtree(self.dir, ignore_errors=True)
        raise RuntimeError("could not start redis-server on a free port after 5 attempts")

    def _spawn(self) -> bool:
        """Starts the server on its port: False when it exited (the port was taken)."""
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--enable-debug-command", "yes", "--dir", self.dir, *self.extra_args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if _listens(self.process.pid, self.port):
                return True
            if self.process.poll() is not None:
                return False
            time.sleep(0.01)
        self.stop()
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/"

    def command(self, *words: str) -> "subprocess.Popen[bytes]":
        """Sends one command with redis-cli without waiting for its answer (e.g. DEBUG SLEEP)."""
        return subprocess.Popen(
            ["redis-cli", "-p", str(self.port), *words], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def halt(self, how: signal.Signals = signal.SIGTERM) -> None:
        """Stops the server by PID (``how``: SIGTERM lets it finish the calls in flight; SIGKILL cuts them
        off), keeping its port and directory for ``start_again``."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
            os.kill(self.process.pid, how)
            self.process.wait(timeout=10)

    def start_again(self) -> None:
        """Starts the server again on its port after ``halt`` (empty: no persistence). The
        port may be held for a moment (a client's connection to itself on a freed port): it tries for
        10 s, as the Rust test kit does."""
        deadline = time.monotonic() + 10
        while not self._spawn():
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server could not start again on port {self.port}")
            time.sleep(0.05)

    def pause(self) -> None:
        """Freezes the server (SIGSTOP): connections stay open, nothing is answered."""
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.halt()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer()
    yield server
    server.stop()


def _make_certificates() -> pathlib.Path:
    """A private CA and a server certificate for localhost and 127.0.0.1 signed by it (openssl), in a
    fresh directory: ``ca.pem``, ``cert.pem``, ``key.pem``; and a client certificate the CA signed,
    ``client.pem`` and ``client.key``."""
    certs = pathlib.Path(tempfile.mkdtemp(prefix="ratelock-py-tls-"))

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=certs, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=ratelock test CA",
            "-keyout", "ca.key", "-out", "ca.pem")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "key.pem",
            "-out", "server.csr")
    (certs / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "1", "-extfile", "san.ext", "-out", "cert.pem")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=ratelock client", "-keyout", "client.key",
            "-out", "client.csr")
    (certs / "client.ext").write_text("basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
    openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "1", "-extfile", "client.ext", "-out", "client.pem")
    return certs


def _tls_args(certs: pathlib.Path, tls_port: int, ask_clients: bool = False) -> list[str]:
    """redis-server arguments that serve TLS on ``tls_port`` with the certificates in ``certs``; with
    ``ask_clients``, every client must present a certificate of its own (Redis's default)."""
    return ["--tls-port", str(tls_port), "--tls-cert-file", str(certs / "cert.pem"),
            "--tls-key-file", str(certs / "key.pem"), "--tls-ca-cert-file", str(certs / "ca.pem"),
            "--tls-auth-clients", "yes" if ask_clients else "no"]


class TlsRedisServer(RedisServer):
    """A server that also listens for TLS, with a certificate for localhost and 127.0.0.1 signed by a
    private CA made here (openssl): ``tls_url`` is its ``rediss://`` URL, ``ca_pem`` the CA to trust,
    ``client_cert_pem`` and ``client_key_pem`` a client certificate that CA signed. ``versions`` limits
    the TLS versions it speaks (``tls-protocols``, such as ``"TLSv1.2"``)."""

    def __init__(self, ask_clients: bool = False, versions: str = "") -> None:
        certs = _make_certificates()
        self.tls_port = _free_port()
        protocols = ["--tls-protocols", versions] if versions else []
        super().__init__(*_tls_args(certs, self.tls_port, ask_clients), *protocols)
        self.ca_pem = (certs / "ca.pem").read_text()
        self.client_cert_pem = (certs / "client.pem").read_text()
        self.client_key_pem = (certs / "client.key").read_text()
        shutil.rmtree(certs, ignore_errors=True)

    @property
    def tls_url(self) -> str:
        return f"rediss://localhost:{self.tls_port}/"


@pytest.fixture(scope="session")
def tls_redis_server():
    server = TlsRedisServer()
    yield server
    server.stop()


class RedisCluster:
    """Three masters with a replica each, joined by `redis-cli --cluster create`; with ``tls``, every node
    also serves TLS on a port of its own (the cluster bus and replication too), with a certificate a
    private CA signed: ``tls_url`` is the ``rediss+cluster://`` URL, ``ca_pem`` the CA to trust."""

    def __init__(self, tls: bool = False) -> None:
        certs = _make_certificates() if tls else None
        self.tls_ports = [_free_port() for _ in range(6)] if tls else []
        self.ca_pem = (certs / "ca.pem").read_text() if certs else ""

        def tls_args(index: int) -> list[str]:
            if certs is None:
                return []
            return [*_tls_args(certs, self.tls_ports[index]), "--tls-cluster", "yes", "--tls-replication", "yes"]

        # An explicit bus port: the default (port + 10000) does not exist for ports above 55535.
        self.nodes = [
            RedisServer("--cluster-enabled", "yes", "--cluster-node-timeout", "2000", "--cluster-port", str(_free_port()),
                        *tls_args(index))
            for index in range(6)
        ]
        if certs:
            shutil.rmtree(certs, ignore_errors=True)
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        subprocess.run(
            ["redis-cli", "--cluster", "create", *addresses, "--cluster-replicas", "1", "--cluster-yes"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not all(self._ready(node) for node in self.nodes):
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the Redis Cluster did not become ready")
            time.sleep(0.1)

    @staticmethod
    def _ready(node: RedisServer) -> bool:
        info = subprocess.run(["redis-cli", "-p", str(node.port), "CLUSTER", "INFO"], capture_output=True, text=True)
        return "cluster_state:ok" in info.stdout and "cluster_slots_ok:16384" in info.stdout

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{node.port}" for node in self.nodes[:3])

    @property
    def tls_url(self) -> str:
        return "rediss+cluster://" + ",".join(f"localhost:{port}" for port in self.tls_ports[:3])

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


@pytest.fixture(scope="session")
def redis_cluster():
    cluster = RedisCluster()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def tls_redis_cluster():
    cluster = RedisCluster(tls=True)
    yield cluster
    cluster.stop()


def module_path() -> str:
    """The ratelock Redis module built by `make module-build` (or RATELOCK_MODULE_SO)."""
    root = pathlib.Path(__file__).resolve().parents[2]
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", root / "target"))
    path = pathlib.Path(os.environ.get("RATELOCK_MODULE_SO", target / "server-module/debug/libratelock_module.so"))
    if not path.exists():
        raise RuntimeError(f"the ratelock module is not built at {path}: run `make module-build`")
    return str(path)


@pytest.fixture(scope="session")
def module_server():
    """A redis-server that loads the ratelock module."""
    server = RedisServer("--loadmodule", module_path())
    yield server
    server.stop()


@pytest.fixture(params=["memory", "redis"])
def store_url(request, redis_server):
    """Runs a test on the embedded memory store and on the real Redis."""
    return None if request.param == "memory" else redis_server.url
