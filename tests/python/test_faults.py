"""The fault suite from Python: threads with their own limiters and locks (the blocking lane) run through
the test kit's fault proxy while it plays a seeded plan of every proxy fault, or straight at a server
that is frozen, has its scripts and functions flushed and its clients killed (the Rust suite's faults
that keep server state) or is killed and restarted empty (state lost once), or at a Sentinel group whose
master is killed and whose replica is promoted (state lost once), write their history in the suite's
one JSON-lines format, and the Rust checker (`check_history`) reads it against the same invariants as
the Rust clients' (tests/faults/README.md)."""

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import ratelock
import ratelock.asyncio
from conftest import RedisServer
from kit_processes import KitProcess, SentinelGroup, kit_binaries

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 0.2
SEED = 20261125
# The most calls one client makes in a run: enough to outlast any run's faults (a client must still be
# calling after them), while `stop` ends it first.
HITS_PER_CLIENT = 20_000
LOCK_PAIRS_PER_CLIENT = 5_000
# The longest the clients run on after the faults for a call begun then to be served.
SERVED_AGAIN_WITHIN = 5.0
RULES = {
    "gcra": "20/second",
    "bucket": "20/second using token_bucket",
    "fixed": "20/second using fixed_window",
    "sliding": "20/second using sliding_window",
    "log": "20/second using sliding_log",
}


class Proxy(KitProcess):
    """The `fault_proxy` process in front of one server."""

    def __init__(self, binaries: Path, upstream: int, doors: int, seed: int) -> None:
        super().__init__(binaries, "fault_proxy", str(upstream), str(doors), str(seed))
        self.ports = [int(p) for p in self.first_line[1:]]


@contextlib.contextmanager
def proxied_server(binaries: Path, doors: int, seed: int) -> Iterator[Proxy]:
    """A server behind a fault proxy of `doors` doors; both stopped at the end, whatever happened."""
    server = RedisServer()
    try:
        proxy = Proxy(binaries, server.port, doors, seed)
        try:
            yield proxy
        finally:
            proxy.stop()
    finally:
        server.stop()


class History:
    """Operations recorded by every thread, on one monotonic clock."""

    def __init__(self) -> None:
        self.started = time.monotonic_ns()
        self.ops: List[Dict[str, Any]] = []
        self.lock = threading.Lock()

    def now_ns(self) -> int:
        return time.monotonic_ns() - self.started

    def push(self, **op: Any) -> None:
        with self.lock:
            self.ops.append({k: v for k, v in op.items() if v is not None})

    def save(self, path: Path) -> None:
        path.write_text("".join(json.dumps(op) + "\n" for op in self.ops))


def outcome_of(error: Exception) -> str:
    if isinstance(error, ratelock.ProtocolError):
        return "protocol"
    if isinstance(error, ratelock.StoreUnavailable):  # StoreTimeout is one too
        return "ambiguous"
    return "fail"


def check(binaries: Path, history: History, path: Path, *arguments: str) -> str:
    history.save(path)
    checked = subprocess.run(
        [str(binaries / "check_history"), str(path), *arguments], capture_output=True, text=True
    )
    print(checked.stdout)
    assert checked.returncode == 0, f"seed {SEED}: {checked.stdout}{checked.stderr}"
    return checked.stdout


@pytest.fixture(scope="module")
def binaries() -> Path:
    return kit_binaries()


def run_clients_on(urls: List[str], work: Any, threads_per_url: int, faults: Any, history: "History") -> None:
    """Runs ``work(client, url, stop)`` on threads, ``threads_per_url`` per URL, while ``faults()`` plays
    (it returns when its faults are over); then stops them, each within a bounded time. Calls begun
    after the faults must be served again: the clients run on until one of them succeeds, for at most
    ``SERVED_AGAIN_WITHIN`` seconds (a lock wait begun before the faults ended can outlast a fixed
    pause)."""
    stop = threading.Event()
    threads = [
        threading.Thread(target=work, args=(f"python-{at}-{n}", url, stop), daemon=True)
        for at, url in enumerate(urls) for n in range(threads_per_url)
    ]
    for thread in threads:
        thread.start()
    # Store calls only: a write to the fenced resource touches no store.
    def served_after(over: int) -> int:
        return sum(1 for op in list(history.ops) if op["invoke_ns"] > over and op["outcome"] == "ok" and op["op"] != "write")

    try:
        faults()
        over = history.now_ns()
        deadline = time.monotonic() + SERVED_AGAIN_WITHIN
        time.sleep(0.5)
        while served_after(over) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads), "a client hung"
    served = served_after(over)
    print(f"calls served after the faults: {served}")
    assert served > 0, "no call was served after the faults were over"


def server_faults_keeping_state(server: RedisServer) -> None:
    """The Rust suite's server faults that keep state (`server_faults_keeping_state`), one after another:
    frozen (SIGSTOP, then SIGCONT), scripts flushed, the function library flushed, every client's
    connection killed, frozen again."""

    def cli(*words: str) -> None:
        subprocess.run(["redis-cli", "-p", str(server.port), *words], check=True, capture_output=True, timeout=10)

    time.sleep(0.2)
    server.pause()
    time.sleep(0.3)
    server.resume()
    time.sleep(0.2)
    cli("SCRIPT", "FLUSH")
    time.sleep(0.1)
    cli("FUNCTION", "FLUSH")
    time.sleep(0.1)
    cli("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
    time.sleep(0.2)
    server.pause()
    time.sleep(0.15)
    server.resume()
    time.sleep(0.45)


def server_restarted_empty(server: RedisServer) -> None:
    """The Rust suite's restart without persistence (`server_restarted_empty`): the server killed
    (SIGKILL) and started again on its port, empty. Its state is lost once: a limit may admit one more
    limit's worth, and a fencing token must still rise (it comes from the server's clock)."""
    time.sleep(0.4)
    server.halt(signal.SIGKILL)
    server.start_again()
    time.sleep(0.6)


Run = Tuple[List[str], int, Callable[[], None], Callable[[], None]]

# The kinds of run, and those that lose the store's state once.
KINDS = ["proxy", "server", "restart", "failover"]
LOSING_STATE = {"restart", "failover"}


def run_of(kind: str, binaries: Path, seed: int) -> Run:
    """A run of one kind: the URLs its clients use, the threads per URL, the faults it plays and how it
    stops. `proxy`: two doors of the fault proxy playing a seeded plan; `server`: the faults that keep
    state; `restart`: killed and started empty; `failover`: a Sentinel group's master killed and its
    replica promoted."""
    if kind == "failover":
        group = SentinelGroup(binaries)
        return [group.url], 4, lambda: group.command("failover"), group.stop
    if kind != "proxy":
        server = RedisServer()
        plays = server_restarted_empty if kind == "restart" else server_faults_keeping_state
        return [f"redis://127.0.0.1:{server.port}/"], 4, lambda: plays(server), server.stop
    run = contextlib.ExitStack()
    proxy = run.enter_context(proxied_server(binaries, 2, seed))
    urls = [f"redis://127.0.0.1:{port}/" for port in proxy.ports]
    return urls, 2, lambda: proxy.command(f"plan {seed} 8 400"), run.close


@pytest.mark.parametrize("faults", KINDS)
def test_limits_hold_their_bounds_under_every_fault(binaries: Path, tmp_path: Path, faults: str) -> None:
    urls, threads, plays, stop_run = run_of(faults, binaries, SEED)
    history = History()

    def work(client: str, url: str, stop: threading.Event) -> None:
        limiter = ratelock.Limiter(url, timeout=TIMEOUT)
        keys = list(RULES)
        for n in range(HITS_PER_CLIENT):
            if stop.is_set():
                return
            key = keys[n % len(keys)]
            invoke = history.now_ns()
            allowed: Optional[bool] = None
            try:
                allowed = limiter.hit(key, RULES[key]).allowed
                outcome = "ok"
            except ratelock.RatelockError as error:
                outcome = outcome_of(error)
            history.push(client=client, op="hit", key=key, invoke_ns=invoke, complete_ns=history.now_ns(),
                         outcome=outcome, allowed=allowed, timeout_ns=int(TIMEOUT * 1e9))
            time.sleep(0.002 if outcome == "ok" else 0.005)

    try:
        run_clients_on(urls, work, threads, plays, history)
    finally:
        stop_run()
    admitted = sum(1 for op in history.ops if op.get("allowed"))
    assert len(history.ops) > 100 and admitted > 20
    losses = ["--state-losses", "1"] if faults in LOSING_STATE else []
    check(binaries, history, tmp_path / "limits.jsonl", "--limits", *(f"{k}={v}" for k, v in RULES.items()), *losses)


@pytest.mark.parametrize("faults", KINDS)
def test_one_lock_holder_at_a_time_under_every_fault(binaries: Path, tmp_path: Path, faults: str) -> None:
    urls, threads, plays, stop_run = run_of(faults, binaries, SEED + 1)
    history = History()
    ttl = 0.3
    resource = threading.Lock()
    highest = [0]

    def write(client: str, token: int) -> None:
        with resource:  # the fenced resource: takes a write only with a token at least the highest
            invoke = history.now_ns()
            taken = token >= highest[0]
            highest[0] = max(highest[0], token)
            history.push(client=client, op="write", key="faults:py", invoke_ns=invoke,
                         complete_ns=history.now_ns(), outcome="ok", allowed=taken, token=token)

    def work(client: str, url: str, stop: threading.Event) -> None:
        lock = ratelock.DistributedLock("faults:py", url, ttl=ttl, timeout=TIMEOUT)
        wait = 2 * ttl
        for _ in range(LOCK_PAIRS_PER_CLIENT):
            if stop.is_set():
                return
            invoke = history.now_ns()
            try:
                lock.acquire(timeout=wait)
            except ratelock.RatelockError as error:
                outcome = "fail" if isinstance(error, ratelock.WaitTimeout) else outcome_of(error)
                history.push(client=client, op="acquire", key="faults:py", invoke_ns=invoke,
                             complete_ns=history.now_ns(), outcome=outcome, timeout_ns=int((wait + TIMEOUT) * 1e9))
                continue
            token = lock.fencing_token
            history.push(client=client, op="acquire", key="faults:py", invoke_ns=invoke,
                         complete_ns=history.now_ns(), outcome="ok", token=token,
                         timeout_ns=int((wait + TIMEOUT) * 1e9))
            assert token is not None
            write(client, token)
            time.sleep(0.003)
            invoke = history.now_ns()
            try:
                lock.release()
                outcome = "ok"
            except ratelock.LockLost:
                outcome = "fail"
            except ratelock.RatelockError as error:
                outcome = outcome_of(error)
            history.push(client=client, op="release", key="faults:py", invoke_ns=invoke,
                         complete_ns=history.now_ns(), outcome=outcome, token=token,
                         timeout_ns=int(TIMEOUT * 1e9))

    try:
        run_clients_on(urls, work, threads, plays, history)
    finally:
        stop_run()
    grants = sum(1 for op in history.ops if op["op"] == "acquire" and op["outcome"] == "ok")
    assert grants > 20
    lost = ["--state-lost"] if faults in LOSING_STATE else []
    check(binaries, history, tmp_path / "locks.jsonl", "--locks", str(int(ttl * 1000)), *lost)


def test_an_idle_reset_fails_no_call(binaries: Path) -> None:
    """An idle connection reset (RST) fails no call, sync or asyncio, limiter or lock: the next call
    goes out on a fresh connection, and every hit counts once."""
    with proxied_server(binaries, 1, SEED) as proxy:
        url = f"redis://127.0.0.1:{proxy.ports[0]}/"
        limiter = ratelock.Limiter(url)
        lock = ratelock.DistributedLock("idle-reset", url)
        admitted = 0
        for _ in range(8):
            admitted += limiter.hit("idle-reset", "20/minute").allowed
            limiter.peek("idle-reset", "20/minute")
            assert lock.acquire(timeout=1)
            lock.release()
            time.sleep(0.05)
            proxy.command("cut 0")
            time.sleep(0.05)
        assert admitted == 8

        async def asyncio_calls() -> int:
            limiter = ratelock.asyncio.Limiter(url)
            lock = ratelock.asyncio.DistributedLock("idle-reset-async", url=url)
            allowed = 0
            for _ in range(5):
                allowed += (await limiter.hit("idle-reset-async", "20/minute")).allowed
                async with lock:
                    pass
                await asyncio.sleep(0.05)
                proxy.command("cut 0")
                await asyncio.sleep(0.05)
            return allowed

        assert asyncio.run(asyncio_calls()) == 5


def test_a_grant_nobody_heard_of_is_given_back(binaries: Path) -> None:
    """An acquire whose reply is lost (the proxy throws replies away; the server runs the script)
    raises, and the grant it may have been made is given back once the store answers again: the lock
    is free long before its 30 s lease ends, and the same handle takes it again. Blocking and
    asyncio."""
    server = RedisServer()
    proxy = Proxy(binaries, server.port, 1, SEED)
    try:
        url = f"redis://127.0.0.1:{proxy.ports[0]}/"
        direct = f"redis://127.0.0.1:{server.port}/"

        def freed(name: str) -> bool:
            seen = ratelock.DistributedLock(name, direct)
            until = time.monotonic() + 5
            while time.monotonic() < until:
                if not seen.locked():
                    return True
                time.sleep(0.02)
            return False

        lock = ratelock.DistributedLock("unanswered-py", url, ttl=30, timeout=0.3)
        with lock:
            pass
        proxy.command("set 0 0 0 0 1 0 0")
        with pytest.raises(ratelock.RatelockError):
            lock.acquire(blocking=False)
        proxy.command("clear")
        assert freed("unanswered-py"), "the grant nobody heard of still holds the lock"
        assert lock.acquire(timeout=5)
        lock.release()

        async def asyncio_lock() -> None:
            lock = ratelock.asyncio.DistributedLock("unanswered-py-async", url=url, ttl=30, timeout=0.3)
            async with lock:
                pass
            proxy.command("set 0 0 0 0 1 0 0")
            with pytest.raises(ratelock.RatelockError):
                await lock.acquire(blocking=False)
            proxy.command("clear")
            assert await asyncio.to_thread(freed, "unanswered-py-async"), "asyncio: the grant still holds"
            assert await lock.acquire(timeout=5)
            await lock.release()

        asyncio.run(asyncio_lock())
    finally:
        proxy.stop()
        server.stop()
