"""Python process models on a real redis-server: gunicorn --preload (sync, gthread, UvicornWorker),
uWSGI with 4 preforked processes (with and without lazy-apps, no --py-call-osafterfork), uvicorn
--workers 4, Celery prefork, multiprocessing (fork, forkserver, spawn) and raw os.fork. Each app uses
ratelock before its server forks. Every model must admit exactly the limit across all workers, answer
every request in time, and show no crossed reply (a decision carrying another worker's rule, or a
ratelock error) while workers hit concurrently, locks included.

Each test prints one line: model, requests, admitted, crossed replies, slowest request. With
RATELOCK_PROCESS_REPORT set, the lines are also appended to that file as JSON."""

import concurrent.futures
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

import pytest

from conftest import RedisServer

HERE = pathlib.Path(__file__).resolve().parent
VENV_BIN = pathlib.Path(sys.executable).parent
LIMIT = 50
SHARED_REQUESTS = 120
OWN_REQUESTS = 40
LOCK_REQUESTS = 40
REQUEST_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """A server process group started for one test and stopped by its PID (the whole group)."""

    def __init__(self, command: List[str], env: Dict[str, str], port: Optional[int]) -> None:
        self.command = " ".join([pathlib.Path(command[0]).name, *command[1:]])
        self.log = open(HERE / f".process-model-{uuid.uuid4().hex[:8]}.log", "w+b")
        self.process = subprocess.Popen(
            command, cwd=HERE, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.port = port

    def wait_ready(self, probe: str = "/lock", workers: int = 2) -> None:
        """Until `workers` worker processes have answered `probe`: one that answers first would
        otherwise take the whole load while the others still boot (seen under uvicorn workers)."""
        deadline = time.monotonic() + 30
        answered: Set[int] = set()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            while time.monotonic() < deadline and self.process.poll() is None:
                answered |= set(pool.map(lambda _: self.probe(probe), range(8))) - {None}
                if len(answered) >= workers:
                    return
                time.sleep(0.1)
        raise AssertionError(f"{len(answered)} of {workers} workers answered:\n{self.output()}")

    def probe(self, path: str) -> Optional[int]:
        """The pid of the worker that answered `path`, or None when nothing answered."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as response:
                return int(json.loads(response.read())["pid"])
        except (OSError, urllib.error.URLError):
            return None

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-4000:]

    def stop(self) -> bool:
        """Stops the group: SIGTERM, then SIGKILL after 10 s. True when SIGTERM was enough."""
        stopped_by_term = True
        if self.process.poll() is None:
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
                try:
                    os.killpg(self.process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.process.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    stopped_by_term = False
                    continue
        try:  # workers left behind by the group's leader
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.log.close()
        pathlib.Path(self.log.name).unlink(missing_ok=True)
        return stopped_by_term


def app_env(redis_server: RedisServer, prefix: str) -> Dict[str, str]:
    env = dict(os.environ)
    env.update(
        RATELOCK_TEST_URL=redis_server.url,
        RATELOCK_TEST_RULE=f"{LIMIT}/hour",
        RATELOCK_TEST_PREFIX=prefix,
        PYTHONPATH=str(HERE),
    )
    return env


def get(port: int, path: str) -> Tuple[int, Dict[str, Any], float]:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=REQUEST_TIMEOUT) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    return status, json.loads(body or b"{}"), time.monotonic() - started


def hammer(port: int) -> Dict[str, Any]:
    """Shared-limit hits, own-rule bursts and lock rounds, all at once from 16 client threads."""
    paths = ["/shared"] * SHARED_REQUESTS + ["/own"] * OWN_REQUESTS + ["/lock"] * LOCK_REQUESTS
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda path: (path, get(port, path)), paths))
    admitted = sum(1 for path, (status, _, _) in answers if path == "/shared" and status == 200)
    failed = [f"{path}: {status}" for path, (status, _, _) in answers if status not in (200, 429)]
    crossed = [c for path, (_, body, _) in answers if path == "/own" for c in body.get("crossed", [])]
    tokens = [body["token"] for path, (status, body, _) in answers if path == "/lock" and status == 200]
    pids = {body.get("pid") for _, (_, body, _) in answers}
    return {
        "requests": len(paths),
        "calls": SHARED_REQUESTS + OWN_REQUESTS * 20 + LOCK_REQUESTS,
        "admitted": admitted,
        "failed": failed,
        "crossed": crossed,
        "tokens": tokens,
        "workers": len(pids),
        "slowest": max(elapsed for _, (_, _, elapsed) in answers),
    }


def report(model: str, outcome: Dict[str, Any]) -> None:
    line = {
        "model": model,
        "requests": outcome["requests"],
        "calls": outcome["calls"],
        "admitted": outcome["admitted"],
        "crossed": len(outcome["crossed"]),
        "workers": outcome.get("workers"),
        "slowest_s": round(outcome["slowest"], 3),
    }
    print(f"\nprocess model {json.dumps(line)}")
    target = os.environ.get("RATELOCK_PROCESS_REPORT")
    if target:
        with open(target, "a") as out:
            out.write(json.dumps(line) + "\n")


def check(model: str, outcome: Dict[str, Any], expect_workers: int = 2) -> None:
    report(model, outcome)
    assert outcome["failed"] == [], outcome["failed"][:5]
    assert outcome["crossed"] == [], outcome["crossed"][:5]
    assert outcome["admitted"] == LIMIT, f"{outcome['admitted']} admitted across workers, limit {LIMIT}"
    assert len(set(outcome["tokens"])) == len(outcome["tokens"]) == LOCK_REQUESTS, "every grant its own token"
    assert outcome["slowest"] < REQUEST_TIMEOUT
    assert outcome["workers"] >= expect_workers, "the load reached several workers"


@pytest.fixture
def prefix() -> str:
    return f"pm{uuid.uuid4().hex[:8]}"


@pytest.fixture
def served() -> Iterator[List[Served]]:
    """The servers a test starts, each stopped after it. Each must stop on SIGTERM within 10 s: a stop
    signal that lands on one of ratelock's threads must not leave a worker hanging (a uWSGI worker whose
    handler ran on ratelock's runtime thread waited for SIGKILL)."""
    started: List[Served] = []
    yield started
    lingering = []
    for server in started:
        output = server.output()  # stop() removes the log
        if not server.stop():
            lingering.append(f"{server.command}\n{output}")
    assert not lingering, "still running 10 s after SIGTERM:\n" + "\n".join(lingering)


@pytest.mark.parametrize(
    "worker, module",
    [("sync", "wsgi_app:app"), ("gthread", "wsgi_app:app"), ("uvicorn.workers.UvicornWorker", "asgi_app:app")],
)
def test_gunicorn_preload(redis_server, prefix, served, worker, module):
    port = free_port()
    command = [str(VENV_BIN / "gunicorn"), "--preload", "-w", "4", "-k", worker, "-b", f"127.0.0.1:{port}",
               "--graceful-timeout", "2", "--timeout", "30"]
    if worker == "gthread":
        command += ["--threads", "4"]
    server = Served([*command, f"process_apps.{module}"], app_env(redis_server, prefix), port)
    served.append(server)
    server.wait_ready()
    check(f"gunicorn --preload -k {worker}", hammer(port))


@pytest.mark.parametrize("lazy", [False, True])
def test_uwsgi_prefork(redis_server, prefix, served, lazy):
    port = free_port()
    command = [str(VENV_BIN / "uwsgi"), "--http-socket", f"127.0.0.1:{port}", "--master", "--processes", "4",
               "--module", "process_apps.wsgi_app:app", "--die-on-term", "--need-app", "--disable-logging"]
    if lazy:
        command.append("--lazy-apps")
    server = Served(command, app_env(redis_server, prefix), port)
    served.append(server)
    server.wait_ready()
    check(f"uwsgi --processes 4{' --lazy-apps' if lazy else ''}", hammer(port))


def test_uvicorn_workers(redis_server, prefix, served):
    port = free_port()
    command = [str(VENV_BIN / "uvicorn"), "process_apps.asgi_app:app", "--workers", "4", "--host", "127.0.0.1",
               "--port", str(port), "--log-level", "warning"]
    server = Served(command, app_env(redis_server, prefix), port)
    served.append(server)
    server.wait_ready()
    check("uvicorn --workers 4", hammer(port))


def test_celery_prefork(redis_server, prefix, served):
    env = app_env(redis_server, prefix)
    command = [str(VENV_BIN / "celery"), "-A", "process_apps.celery_app", "worker", "-P", "prefork", "-c", "4",
               "--without-heartbeat", "--without-mingle", "--without-gossip", "-Q", prefix, "--loglevel", "WARNING"]
    server = Served(command, env, None)
    served.append(server)
    result = subprocess.run(
        [sys.executable, "-m", "process_apps.celery_client", prefix], cwd=HERE, env=env,
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{server.output()}"
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    check("celery -P prefork -c 4", outcome)


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn", "os.fork"])
def test_multiprocessing(redis_server, prefix, method):
    result = subprocess.run(
        [sys.executable, "-m", "process_apps.fork_driver", method],
        cwd=HERE, env=app_env(redis_server, prefix), capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    check(f"multiprocessing {method}" if method != "os.fork" else "os.fork", outcome)
    assert outcome["parent_lock_kept"], "the parent's lock survived its children"
    assert outcome["children_refused"] == outcome["children"], "no child could release the parent's lock"
