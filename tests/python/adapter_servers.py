"""Real servers for the adapter apps (``adapter_apps``): gunicorn for WSGI, uvicorn for ASGI, started on
a free loopback port with the app's settings in the environment, stopped by PID. Requests go over real
HTTP (``urllib``), never through a test client."""

import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from email.message import Message
from typing import Dict, List, Optional, Tuple

HERE = pathlib.Path(__file__).resolve().parent
BIN = pathlib.Path(sys.executable).parent

#: Each framework: the server program and the app it serves, plus its own environment.
FRAMEWORKS: Dict[str, Tuple[str, str, Dict[str, str]]] = {
    "flask": ("gunicorn", "adapter_apps.flask_app:app", {}),
    "starlette": ("uvicorn", "adapter_apps.starlette_app:app", {}),
    "fastapi": ("uvicorn", "adapter_apps.fastapi_app:app", {}),
    "django-wsgi": ("gunicorn", "adapter_apps.django_app:application", {}),
    "django-asgi": ("uvicorn", "adapter_apps.django_app:application", {"RATELOCK_DJANGO_ASYNC": "1"}),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Reply:
    status: int
    #: Read case-insensitively, as HTTP header names are.
    headers: Message
    body: bytes
    all_headers: List[Tuple[str, str]] = field(default_factory=list)


class AppServer:
    """One framework's app on a real server, configured by ``env`` (``adapter_apps/settings.py``)."""

    def __init__(self, framework: str, env: Optional[Dict[str, str]] = None, host: str = "127.0.0.1") -> None:
        program, app, own = FRAMEWORKS[framework]
        self.port = free_port()
        self.host = host
        environment = dict(os.environ, RATELOCK_PREFIX=f"t{uuid.uuid4().hex[:10]}", PYTHONPATH=str(HERE))
        environment.update(own)
        environment.update(env or {})
        bind = f"[{host}]" if ":" in host else host
        if program == "gunicorn":
            command = [str(BIN / "gunicorn"), "-w", "1", "-b", f"{bind}:{self.port}", "--log-level", "warning", app]
        else:
            # uvicorn itself rewrites the client address from X-Forwarded-For for peers it trusts (127.0.0.1
            # by default): off, so that what the adapter sees is the connection's own peer.
            command = [str(BIN / "uvicorn"), app, "--host", host, "--port", str(self.port), "--log-level", "warning",
                       "--no-proxy-headers"]
        self.process = subprocess.Popen(command, env=environment, cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.process.stderr.read().decode() if self.process.stderr else ''}")
            try:
                socket.create_connection(("127.0.0.1" if self.host in ("::", "0.0.0.0") else self.host, self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the server did not start within 20 s")

    def get(self, path: str, headers: Optional[Dict[str, str]] = None, via: str = "127.0.0.1") -> Reply:
        host = f"[{via}]" if ":" in via else via
        request = urllib.request.Request(f"http://{host}:{self.port}{path}", headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return Reply(response.status, response.headers, response.read(), list(response.headers.items()))
        except urllib.error.HTTPError as refused:
            return Reply(refused.code, refused.headers, refused.read(), list(refused.headers.items()))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
