"""Python benchmark: the ratelock package beside the usual Python rate limiters and locks.

Starts its own redis-server on a free loopback port, measures ratelock and its peers (limits,
throttled-py, Flask-Limiter, redis-py's lock) against that same server in one run, prints the figures
and ratios, and writes them to bench/python/RESULTS.md. It reports; it never fails on a slow figure.

    .venv-bench/bin/python bench/python/bench.py
"""

from __future__ import annotations

import asyncio
import datetime
import importlib.metadata
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import overhead

RULE = "1000000/second"  # high enough that no hit in this program is denied on Redis
WARMUP_SECONDS = 0.5
MEASURE_SECONDS = 2.5
LATENCY_SECONDS = 1.0  # the per-call timed pass that gives p50/p99, after each rate pass
RATE_BATCH = 32  # calls between clock readings in a rate pass
THREADS = 32
TASKS = 100
FLASK_ROUNDS = 6  # Flask variants run in alternating rounds, so drift hits them all alike
FLASK_ROUND_SECONDS = 0.5
FLASK_TARGET_RATIO = 0.45  # Flask added time against Flask-Limiter's (issue 27's target)
RESULTS_PATH = Path(__file__).resolve().parent / "RESULTS.md"
PEER_PACKAGES = (
    "ratelock", "limits", "redis", "throttled-py", "flask", "Flask-Limiter", "fastapi", "slowapi", "fastapi-limiter",
    "pyrate-limiter", "django", "django-ratelimit",
)

Hit = Callable[[], Any]
AsyncHit = Callable[[], Awaitable[Any]]


# ---------------------------------------------------------------------------------------------
# Figures and comparisons


@dataclass
class Figure:
    """What one measurement found: operations in a timed span, and per-call latencies if recorded."""

    operations: int
    seconds: float
    allowed: int
    latencies_ns: List[int] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.operations / self.seconds if self.seconds > 0 else 0.0

    @property
    def allowed_share(self) -> float:
        return self.allowed / self.operations if self.operations else 0.0

    def percentile_us(self, fraction: float) -> Optional[float]:
        if not self.latencies_ns:
            return None
        ordered = sorted(self.latencies_ns)
        index = min(len(ordered) - 1, int(fraction * len(ordered)))
        return ordered[index] / 1000.0


@dataclass
class Comparison:
    """One line of the table: ratelock's figure, the peer's, their ratio and the target for it."""

    name: str
    ratelock_text: str
    peer_text: str
    ratio: float
    target: Optional[float]
    target_is_minimum: bool = True

    @property
    def target_text(self) -> str:
        if self.target is None:
            return "-"
        return f"{'>=' if self.target_is_minimum else '<='} {self.target:g}"

    @property
    def verdict(self) -> str:
        if self.target is None:
            return "info"
        met = self.ratio >= self.target if self.target_is_minimum else self.ratio <= self.target
        return "PASS" if met else "BELOW"


@dataclass
class Report:
    """Everything one run found, in the order measured."""

    measurements: List[Tuple[str, str, Figure]] = field(default_factory=list)  # (section, name, figure)
    comparisons: List[Comparison] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    tails: List[overhead.Tails] = field(default_factory=list)
    section: str = ""

    def begin(self, section: str, description: str) -> None:
        self.section = section
        print(f"{section}. {description}", flush=True)

    def record(self, name: str, figure: Figure) -> Figure:
        self.measurements.append((self.section, name, figure))
        print(f"  {name:<58} {describe_figure(figure)}", flush=True)
        if figure.operations and figure.allowed_share < 0.999:
            self.notes.append(f"{name}: only {figure.allowed_share:.1%} of the calls were allowed")
        return figure

    def compare_rates(self, name: str, ours: Figure, theirs: Figure, target: Optional[float]) -> None:
        self.comparisons.append(
            Comparison(name, rate_text(ours), rate_text(theirs), ratio_of(ours.per_second, theirs.per_second), target)
        )


def ratio_of(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else float("inf")


def rate_text(figure: Figure) -> str:
    return f"{figure.per_second:,.0f}/s"


def describe_figure(figure: Figure) -> str:
    text = f"{figure.per_second:>12,.0f}/s"
    p50, p99 = figure.percentile_us(0.50), figure.percentile_us(0.99)
    if p50 is not None and p99 is not None:
        text += f"   p50 {p50:7.1f} µs   p99 {p99:7.1f} µs"
    return text


# ---------------------------------------------------------------------------------------------
# Measuring


def warm_up(hit: Hit, seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        hit()


def measure_sequential(hit: Hit, seconds: float = MEASURE_SECONDS, warmup: float = WARMUP_SECONDS) -> Figure:
    """Calls `hit` in a loop on this thread: a warm-up; a rate pass of `seconds` that reads the clock once
    per batch of calls, so timing costs nothing per call (for a sub-microsecond call, a per-call timer
    would be a good part of what is measured); then a latency pass with every call timed."""
    warm_up(hit, warmup)
    allowed = calls = 0
    start = now = time.perf_counter_ns()
    end = start + int(seconds * 1e9)
    while now < end:
        for _ in range(RATE_BATCH):
            if hit():
                allowed += 1
        calls += RATE_BATCH
        now = time.perf_counter_ns()
    return Figure(calls, (now - start) / 1e9, allowed, timed_calls(hit, min(seconds, LATENCY_SECONDS)))


def timed_calls(hit: Hit, seconds: float) -> List[int]:
    """Every call's latency in ns, for `seconds`."""
    latencies: List[int] = []
    before = time.perf_counter_ns()
    end = before + int(seconds * 1e9)
    while before < end:
        hit()
        after = time.perf_counter_ns()
        latencies.append(after - before)
        before = after
    return latencies


def measure_threads(hit: Hit, threads: int = THREADS) -> Figure:
    """`threads` threads call `hit` in loops; counts the calls completed in the timed span."""
    counts = [0] * threads
    allowed = [0] * threads
    failures: List[BaseException] = []
    stop = threading.Event()

    def work(slot: int) -> None:
        try:
            while not stop.is_set():
                if hit():
                    allowed[slot] += 1
                counts[slot] += 1
        except Exception as failure:  # reported by the main thread, once
            failures.append(failure)
            stop.set()

    workers = [threading.Thread(target=work, args=(slot,), daemon=True) for slot in range(threads)]
    for worker in workers:
        worker.start()
    time.sleep(WARMUP_SECONDS)
    done_before, allowed_before, start = sum(counts), sum(allowed), time.perf_counter()
    time.sleep(MEASURE_SECONDS)
    done_after, allowed_after, end = sum(counts), sum(allowed), time.perf_counter()
    stop.set()
    for worker in workers:
        worker.join()
    if failures:
        raise failures[0]
    return Figure(done_after - done_before, end - start, allowed_after - allowed_before)


async def measure_tasks(hit: AsyncHit, tasks: int = TASKS) -> Figure:
    """`tasks` asyncio tasks await `hit` in loops; counts the calls completed in the timed span."""
    counts = [0] * tasks
    allowed = [0] * tasks
    stopping = False

    async def work(slot: int) -> None:
        while not stopping:
            if await hit():
                allowed[slot] += 1
            counts[slot] += 1

    running = [asyncio.ensure_future(work(slot)) for slot in range(tasks)]
    await asyncio.sleep(WARMUP_SECONDS)
    done_before, allowed_before, start = sum(counts), sum(allowed), time.perf_counter()
    await asyncio.sleep(MEASURE_SECONDS)
    done_after, allowed_after, end = sum(counts), sum(allowed), time.perf_counter()
    stopping = True
    await asyncio.gather(*running)
    return Figure(done_after - done_before, end - start, allowed_after - allowed_before)


def measure_in_alternating_rounds(variants: Dict[str, Hit]) -> Dict[str, Figure]:
    """Runs the variants in turns, FLASK_ROUNDS times each; keeps each variant's median round."""
    for hit in variants.values():
        warm_up(hit, WARMUP_SECONDS)
    rounds: Dict[str, List[Figure]] = {name: [] for name in variants}
    for _ in range(FLASK_ROUNDS):
        for name, hit in variants.items():
            rounds[name].append(measure_sequential(hit, FLASK_ROUND_SECONDS, warmup=0.05))
    return {name: median_round(figures) for name, figures in rounds.items()}


def median_round(figures: Sequence[Figure]) -> Figure:
    by_rate = sorted(figures, key=lambda figure: figure.per_second)
    middle = by_rate[len(by_rate) // 2]
    middle.latencies_ns = [latency for figure in figures for latency in figure.latencies_ns]
    return middle


# ---------------------------------------------------------------------------------------------
# The redis-server of this run


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_redis_server(port: int) -> subprocess.Popen[bytes]:
    """Starts a throwaway redis-server on 127.0.0.1:`port` (no persistence) and waits for PONG."""
    if shutil.which("redis-server") is None:
        sys.exit("redis-server is not on PATH (Debian/Ubuntu: apt-get install -y redis-server)")
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_pong(port, server)
    return server


def wait_for_pong(port: int, server: subprocess.Popen[bytes], seconds: float = 10.0) -> None:
    import redis

    client = redis.Redis(host="127.0.0.1", port=port)
    give_up = time.monotonic() + seconds
    while time.monotonic() < give_up:
        if server.poll() is not None:
            sys.exit(f"redis-server exited at start (code {server.returncode})")
        try:
            if client.ping():
                client.close()
                return
        except redis.ConnectionError:
            time.sleep(0.05)
    stop_redis_server(server)
    sys.exit(f"redis-server did not answer on port {port}")


def stop_redis_server(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        os.kill(server.pid, 15)
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(server.pid, 9)
            server.wait()


def redis_server_version() -> str:
    output = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
    return output.strip()


# ---------------------------------------------------------------------------------------------
# The limiters under test, each as a no-argument call returning truthy when allowed


def raw_socket_ping(port: int) -> Hit:
    """PING over a bare socket: the loopback round trip with almost no client work, a floor for all."""
    connection = socket.create_connection(("127.0.0.1", port))
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def ping() -> bool:
        connection.sendall(b"PING\r\n")
        return connection.recv(64) == b"+PONG\r\n"

    return ping


def ratelock_redis_hit(url: str, key: str) -> Hit:
    import ratelock

    limiter = ratelock.Limiter(url)
    return lambda: limiter.hit(key, RULE)


def limits_hit(storage_url: str, strategy: str, key: str) -> Hit:
    from limits import parse
    from limits.storage import storage_from_string
    from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter

    strategies = {"fixed": FixedWindowRateLimiter, "moving": MovingWindowRateLimiter}
    limiter = strategies[strategy](storage_from_string(storage_url))
    item = parse(RULE)
    return lambda: limiter.hit(item, key)


def throttled_gcra_hit(url: str, key: str) -> Hit:
    from throttled import RateLimiterType, RedisStore, Throttled

    throttle = Throttled(key=key, using=RateLimiterType.GCRA.value, quota=RULE, store=RedisStore(server=url))
    return lambda: not throttle.limit().limited


def ratelock_memory_hit(key: str) -> Hit:
    import ratelock

    limiter = ratelock.Limiter()
    return lambda: limiter.hit(key, RULE)


def ratelock_async_hit(url: str, key: str, metered: bool = False) -> AsyncHit:
    """An asyncio hit; `metered`: with ratelock.otel.Metrics on an SDK provider (an in-memory reader)."""
    import ratelock.asyncio

    metrics = None
    if metered:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from ratelock.otel import Metrics

        metrics = Metrics(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    limiter = ratelock.asyncio.Limiter(url, metrics=metrics)
    return lambda: limiter.hit(key, RULE)


def limits_async_fixed_window_hit(port: int, key: str) -> AsyncHit:
    from limits import parse
    from limits.aio.strategies import FixedWindowRateLimiter
    from limits.storage import storage_from_string

    storage = storage_from_string(f"async+redis://127.0.0.1:{port}", implementation="redispy")
    limiter = FixedWindowRateLimiter(storage)
    item = parse(RULE)
    return lambda: limiter.hit(item, key)


def ratelock_lock_pair(url: str) -> Hit:
    import ratelock

    lock = ratelock.DistributedLock("bench:ratelock-lock", url, ttl=10, auto_renew=False)

    def acquire_and_release() -> bool:
        lock.acquire()
        lock.release()
        return True

    return acquire_and_release


def redis_py_lock_pair(url: str) -> Hit:
    import redis

    lock = redis.Redis.from_url(url).lock("bench:redis-py-lock", timeout=10)

    def acquire_and_release() -> bool:
        lock.acquire()
        lock.release()
        return True

    return acquire_and_release


# ---------------------------------------------------------------------------------------------
# Flask apps: one view, limited by each extension or not at all


def bare_flask_app() -> Any:
    from flask import Flask

    app = Flask("bare")
    app.add_url_rule("/item", "item", lambda: "ok")
    return app


def ratelock_flask_app(url: Optional[str]) -> Any:
    from flask import Flask

    from ratelock.flask import RateLimiter

    app = Flask(f"ratelock {url}")
    limiter = RateLimiter(app, url=url)
    app.add_url_rule("/item", "item", limiter.limit(RULE)(lambda: "ok"))
    return app


def flask_limiter_app(url: str, headers: bool) -> Any:
    from flask import Flask
    from flask_limiter import Limiter
    from flask_limiter.util import get_remote_address

    app = Flask(f"flask_limiter {url} headers={headers}")
    limiter = Limiter(get_remote_address, app=app, storage_uri=url, headers_enabled=headers)
    app.add_url_rule("/item", "item", limiter.limit(RULE)(lambda: "ok"))
    return app


def flask_request(app: Any) -> Hit:
    """One GET through the app's test client; checks once that the view answers 200."""
    client = app.test_client()
    first = client.get("/item")
    if first.status_code != 200:
        raise RuntimeError(f"{app.name}: GET /item answered {first.status_code}")
    return lambda: client.get("/item").status_code == 200


# ---------------------------------------------------------------------------------------------
# The six comparisons


def compare_redis_hits(
    report: Report, url: str, section: str, title: str, label: str, tag: str,
    measure: Callable[[Hit], Figure], target: float, floor: Optional[Hit] = None,
) -> Tuple[Figure, Figure, Optional[Figure]]:
    """One section of Redis hits, ratelock beside limits and throttled-py, each measured by `measure`
    (sequential or threaded), after the floor when one is given; returns ours, limits FixedWindow and
    the floor."""
    report.begin(section, title)
    bare = None if floor is None else report.record("floor: PING over a raw socket", measure(floor))
    ours = report.record("ratelock Limiter(url) gcra", measure(ratelock_redis_hit(url, f"bench:{tag}")))
    fixed = report.record("limits FixedWindow (redis://)", measure(limits_hit(url, "fixed", f"bench:{tag}:fixed")))
    moving = report.record(
        "limits MovingWindow (redis://)", measure(limits_hit(url, "moving", f"bench:{tag}:moving"))
    )
    gcra = report.record(
        "throttled-py GCRA (RedisStore)", measure(throttled_gcra_hit(url, f"bench:{tag}:throttled"))
    )
    report.compare_rates(f"{label} vs limits FixedWindow", ours, fixed, target)
    report.compare_rates(f"{label} vs limits MovingWindow", ours, moving, None)
    report.compare_rates(f"{label} vs throttled-py GCRA", ours, gcra, None)
    return ours, fixed, bare


def compare_sequential_redis(report: Report, url: str, port: int) -> None:
    ours, fixed, floor = compare_redis_hits(
        report, url, "1", "Redis hits, sequential (one thread)", "Redis hit, sequential", "seq",
        measure_sequential, 2.0, raw_socket_ping(port),
    )
    assert floor is not None
    add_latency_comparisons(report, "Redis hit, sequential", ours, fixed)
    report.notes.append(
        f"sequential Redis: a PING over a bare socket takes {1e6 / floor.per_second:.1f} µs, so a client with no "
        f"overhead at all could be at most {ratio_of(floor.per_second, fixed.per_second):.2f}× limits FixedWindow "
        "here, and less with a script to run"
    )


def add_latency_comparisons(report: Report, name: str, ours: Figure, theirs: Figure) -> None:
    for label, fraction in (("p50", 0.50), ("p99", 0.99)):
        mine, peer = ours.percentile_us(fraction), theirs.percentile_us(fraction)
        if mine is not None and peer is not None:
            report.comparisons.append(
                Comparison(f"{name} {label} latency vs limits FixedWindow", f"{mine:.1f} µs", f"{peer:.1f} µs",
                           ratio_of(mine, peer), None, target_is_minimum=False)
            )


OVERHEAD_TARGET_US = 5.0


def compare_client_overhead(report: Report, url: str, port: int) -> None:
    """Each Redis hit's client overhead (its latency less a raw PING's and the server's µs) and its tails,
    ratelock's beside each peer's, computed the same way (see overhead.py)."""
    report.begin("1b", "client overhead and tails: each call right after a raw PING, less the server's µs")
    paths = {
        "ratelock Limiter(url) gcra": ratelock_redis_hit(url, "bench:tails"),
        "limits FixedWindow (redis://)": limits_hit(url, "fixed", "bench:tails:fixed"),
        "limits MovingWindow (redis://)": limits_hit(url, "moving", "bench:tails:moving"),
        "throttled-py GCRA (RedisStore)": throttled_gcra_hit(url, "bench:tails:throttled"),
    }
    measured = []
    for name, call in paths.items():
        tails = overhead.measure(name, call, port)
        print(f"  {name:<58} overhead p50 {tails.overhead_us(0.50):6.1f} µs   p99 {tails.overhead_us(0.99):6.1f} µs"
              f"   (call p99 {tails.call_us(0.99):.1f}, PING p99 {tails.ping_us(0.99):.1f}, server {tails.server_us:.1f})",
              flush=True)
        measured.append(tails)
    report.tails.extend(measured)
    ours, peers = measured[0], measured[1:]
    mine = ours.overhead_us(0.50)
    report.comparisons.append(Comparison(
        "Redis hit, client overhead p50 vs the 5 µs target", f"{mine:.1f} µs", f"{OVERHEAD_TARGET_US:.0f} µs",
        mine / OVERHEAD_TARGET_US, 1.0, False))
    for label, fraction in (("p50", 0.50), ("p99", 0.99)):
        best = overhead.best_peer(peers, fraction)
        assert best is not None
        report.comparisons.append(Comparison(
            f"Redis hit, client overhead {label} vs the best peer's ({best.name})",
            f"{ours.overhead_us(fraction):.1f} µs", f"{best.overhead_us(fraction):.1f} µs",
            ratio_of(ours.overhead_us(fraction), best.overhead_us(fraction)), 1.0 if label == "p99" else None, False))


def compare_threaded_redis(report: Report, url: str) -> None:
    compare_redis_hits(
        report, url, "2", f"Redis hits, {THREADS} threads sharing one limiter",
        f"Redis hit, {THREADS} threads", "threads", measure_threads, 4.0,
    )


def compare_asyncio_redis(report: Report, url: str, port: int) -> None:
    report.begin("3", f"Redis hits, asyncio, {TASKS} tasks")
    ours = report.record(
        "ratelock.asyncio.Limiter(url)", asyncio.run(measure_tasks(ratelock_async_hit(url, "bench:async")))
    )
    theirs = report.record(
        "limits.aio FixedWindow (async+redis://, redis-py)",
        asyncio.run(measure_tasks(limits_async_fixed_window_hit(port, "bench:async"))),
    )
    report.compare_rates(f"Redis hit, asyncio {TASKS} tasks vs limits.aio FixedWindow", ours, theirs, 4.0)
    # What metrics cost where the decision is made on ratelock's thread and recorded on the loop's.
    metered = report.record(
        "ratelock.asyncio.Limiter(url, metrics=Metrics(provider))",
        asyncio.run(measure_tasks(ratelock_async_hit(url, "bench:async-metered", metered=True))),
    )
    report.compare_rates(f"Redis hit, asyncio {TASKS} tasks, with metrics vs without", metered, ours, None)


def after_each(first: Hit, then: Hit) -> Hit:
    """`first`, then `then`, as one call."""

    def both() -> bool:
        first()
        return bool(then())

    return both


def compare_flask(report: Report, url: str, port: int) -> None:
    report.begin("4", "Flask test-client requests on one limited view (alternating rounds, median)")
    bare_request = flask_request(bare_flask_app())
    variants = {
        "Flask, no limiter": bare_request,
        "Flask + ratelock.flask.RateLimiter": flask_request(ratelock_flask_app(url)),
        "Flask + Flask-Limiter (redis://)": flask_request(flask_limiter_app(url, headers=False)),
        "Flask + Flask-Limiter (redis://, headers_enabled)": flask_request(flask_limiter_app(url, headers=True)),
        "Flask + ratelock.flask.RateLimiter (memory store)": flask_request(ratelock_flask_app(None)),
        "Flask + Flask-Limiter (memory://)": flask_request(flask_limiter_app("memory://", headers=False)),
        "Flask, no limiter, then a raw-socket PING (the floor)": after_each(bare_request, raw_socket_ping(port)),
    }
    figures = {name: report.record(name, figure) for name, figure in measure_in_alternating_rounds(variants).items()}
    bare, ours, theirs, theirs_with_headers, ours_in_memory, theirs_in_memory, floor = figures.values()
    floor_added = added_us(floor, bare)
    ours_added, theirs_added = added_us(ours, bare), added_us(theirs, bare)
    headers_added = added_us(theirs_with_headers, bare)
    ours_in_memory_added, theirs_in_memory_added = added_us(ours_in_memory, bare), added_us(theirs_in_memory, bare)
    report.comparisons.append(
        Comparison("Flask added time per request vs Flask-Limiter", f"+{ours_added:.1f} µs", f"+{theirs_added:.1f} µs",
                   ratio_of(ours_added, theirs_added), FLASK_TARGET_RATIO, target_is_minimum=False)
    )
    report.comparisons.append(
        Comparison("Flask added time per request vs Flask-Limiter with headers", f"+{ours_added:.1f} µs",
                   f"+{headers_added:.1f} µs", ratio_of(ours_added, headers_added), None, target_is_minimum=False)
    )
    report.comparisons.append(
        Comparison("Flask added time, memory stores (no round trip)", f"+{ours_in_memory_added:.1f} µs",
                   f"+{theirs_in_memory_added:.1f} µs", ratio_of(ours_in_memory_added, theirs_in_memory_added), None,
                   target_is_minimum=False)
    )
    report.comparisons.append(
        Comparison("Flask added time over the floor (− a PING after each request) vs Flask-Limiter",
                   f"+{ours_added - floor_added:.1f} µs", f"+{theirs_added - floor_added:.1f} µs",
                   ratio_of(ours_added - floor_added, theirs_added - floor_added), None, target_is_minimum=False)
    )
    report.compare_rates("Flask requests/s vs Flask-Limiter", ours, theirs, None)
    looped = next(figure for _, name, figure in report.measurements if name == "floor: PING over a raw socket")
    report.notes.append(
        f"Flask: the floor of any Redis-backed limiter's added time is one round trip made after a request: a raw "
        f"PING there adds {floor_added:.1f} µs, against {1e6 / looped.per_second:.1f} µs for a PING in a tight loop "
        "(section 1): between two requests the server sits idle and is woken by the next call"
    )
    report.notes.append(
        f"Flask: bare view {rate_text(bare)} ({1e6 / bare.per_second:.1f} µs/request); added time = "
        "µs/request with the limiter − µs/request bare; ratelock sends its rate-limit headers by default, "
        "Flask-Limiter only with headers_enabled=True (shown on its own line)"
    )


def compare_frameworks(report: Report, url: str, port: int) -> None:
    """FastAPI and Django: each framework's best-known limiter beside ratelock's adapter, on one route;
    and each added time over the physical floor of any limiter, one round trip (a raw-socket PING)."""
    import frameworks

    limit = 1_000_000
    report.begin("4a", "The floor of a limiter's added time: one round trip")
    round_trip_us = 1e6 / report.record("floor: PING over a raw socket", measure_sequential(raw_socket_ping(port))).per_second
    for section, title, variants, peers in (
        ("4b", "FastAPI requests in process (httpx ASGI transport), one limited route",
         frameworks.fastapi_variants(url, RULE, limit),
         ["FastAPI + slowapi (redis://)", "FastAPI + fastapi-limiter 0.2 (pyrate-limiter RedisBucket)"]),
        ("4c", "Django test-client requests, one limited view", frameworks.django_variants(url, RULE, limit),
         ["Django + django-ratelimit (RedisCache)"]),
    ):
        report.begin(section, f"{title} (alternating rounds, median)")
        figures = {name: report.record(name, figure) for name, figure in measure_in_alternating_rounds(variants).items()}
        names = list(figures)
        bare, ours = figures[names[0]], figures[names[1]]
        ours_added = added_us(ours, bare)
        for peer in peers:
            theirs_added = added_us(figures[peer], bare)
            report.comparisons.append(
                Comparison(f"{names[1].split(' + ')[0]} added time per request vs {peer.split(' + ')[1]}",
                           f"+{ours_added:.1f} µs", f"+{theirs_added:.1f} µs", ratio_of(ours_added, theirs_added), 0.5,
                           target_is_minimum=False)
            )
            report.comparisons.append(
                Comparison(f"{names[1].split(' + ')[0]} added time over one round trip (− PING) vs {peer.split(' + ')[1]}",
                           f"+{ours_added - round_trip_us:.1f} µs", f"+{theirs_added - round_trip_us:.1f} µs",
                           ratio_of(ours_added - round_trip_us, theirs_added - round_trip_us), None, target_is_minimum=False)
            )
        report.notes.append(
            f"{names[0]}: {rate_text(bare)} ({1e6 / bare.per_second:.1f} µs/request); added time = µs/request with the "
            "limiter − µs/request bare, every variant on the same redis-server"
        )


def added_us(limited: Figure, bare: Figure) -> float:
    return 1e6 / limited.per_second - 1e6 / bare.per_second


def compare_locks(report: Report, url: str) -> None:
    report.begin("5", "Lock acquire+release pairs, sequential")
    ours = report.record(
        "ratelock.DistributedLock (auto_renew=False, ttl 10)", measure_sequential(ratelock_lock_pair(url))
    )
    theirs = report.record("redis-py Lock (client.lock(timeout=10))", measure_sequential(redis_py_lock_pair(url)))
    report.compare_rates("Lock acquire+release vs redis-py Lock", ours, theirs, 1.5)


def compare_memory(report: Report) -> None:
    report.begin("6", "Memory store hits, sequential")
    ours = report.record(
        "ratelock Limiter() (embedded memory store) gcra", measure_sequential(ratelock_memory_hit("bench:memory"))
    )
    theirs = report.record(
        "limits FixedWindow (memory://)", measure_sequential(limits_hit("memory://", "fixed", "bench:memory"))
    )
    report.compare_rates("Memory store hit vs limits FixedWindow memory://", ours, theirs, 5.0)


def metered_memory_hit(key: str) -> Tuple[Hit, Hit]:
    """A memory-store hit with ratelock.otel.Metrics on an SDK provider, and the floor: the same two
    recordings (a decision, a round trip) made straight on the same kind of instruments from Python."""
    import ratelock
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from ratelock.otel import Metrics

    limiter = ratelock.Limiter(metrics=Metrics(MeterProvider(metric_readers=[InMemoryMetricReader()])))
    meter = MeterProvider(metric_readers=[InMemoryMetricReader()]).get_meter("floor")
    decisions, durations = meter.create_counter("decisions"), meter.create_histogram("duration", unit="s")
    decided = {"outcome": "allowed", "reason": "rule", "rule": "g1000000/1000", "store": "memory", "operation": "hit"}
    timed = {"operation": "hit", "store": "memory"}

    def floor() -> bool:
        decisions.add(1, decided)
        durations.record(1e-6, timed)
        return True

    return (lambda: limiter.hit(key, RULE)), floor


def compare_metrics(report: Report) -> None:
    report.begin("7", "OpenTelemetry metrics per hit (memory store, an SDK provider with an in-memory reader)")
    metered, floor = metered_memory_hit("bench:metered")
    figures = measure_in_alternating_rounds(
        {
            "ratelock Limiter() memory hit, no metrics": ratelock_memory_hit("bench:unmetered"),
            "ratelock Limiter(metrics=Metrics(provider)) memory hit": metered,
            "the SDK alone: counter.add + histogram.record": floor,
        }
    )
    for name, figure in figures.items():
        report.record(name, figure)
    plain, with_metrics, sdk = figures.values()
    added = added_us(with_metrics, plain)
    sdk_us = 1e6 / sdk.per_second
    report.comparisons.append(
        Comparison("Metrics added per hit vs the SDK's own two recordings", f"+{added:.2f} µs", f"{sdk_us:.2f} µs",
                   ratio_of(added, sdk_us), None, target_is_minimum=False)
    )


# ---------------------------------------------------------------------------------------------
# Output


OUTAGE_TIMEOUT = 0.25
OUTAGE_CALLS = 5000
OUTAGE_TARGET_US = 50.0


def measure_outages(report: Report) -> None:
    """The circuit breaker, for a stopped server (refused) and a frozen one (SIGSTOP): time to open,
    a hit's p50/p99 while open (target <= 50 µs), and time until the server is used again (<= 1 s)."""
    import ratelock

    report.begin("outage", f"on_error='allow', timeout {OUTAGE_TIMEOUT} s, the server stopped or SIGSTOPped")
    for how in ("refused", "frozen"):
        port = free_loopback_port()
        server = start_redis_server(port)
        try:
            limiter = ratelock.Limiter(f"redis://127.0.0.1:{port}/0", on_error="allow", timeout=OUTAGE_TIMEOUT)
            limiter.hit("outage", "1000000/second")
            if how == "refused":
                stop_redis_server(server)  # timed from its exit: the server is down from then on
            else:
                os.kill(server.pid, signal.SIGSTOP)
            down = time.perf_counter()
            while limiter.breaker_state == "closed" and time.perf_counter() - down < 10:
                limiter.hit("outage", "1000000/second")
            to_open_ms = (time.perf_counter() - down) * 1000
            latencies = []
            for _ in range(OUTAGE_CALLS):
                started = time.perf_counter_ns()
                limiter.hit("outage", "1000000/second")
                latencies.append(time.perf_counter_ns() - started)
            figure = Figure(OUTAGE_CALLS, sum(latencies) / 1e9, OUTAGE_CALLS, latencies)
            report.record(f"{how}: hits while the breaker is open", figure)
            back = time.perf_counter()
            if how == "refused":
                server = start_redis_server(port)
            else:
                os.kill(server.pid, signal.SIGCONT)
            recovered_ms = None
            while time.perf_counter() - back < 10:
                if not limiter.hit("outage", "1000000/second").degraded:
                    recovered_ms = (time.perf_counter() - back) * 1000
                    break
                time.sleep(0.001)
        finally:
            if server.poll() is None:
                os.kill(server.pid, signal.SIGCONT)
            stop_redis_server(server)
        report.notes.append(f"outage {how}: the breaker opened {to_open_ms:.0f} ms after the server went down; "
                            f"the server was used again {recovered_ms if recovered_ms is None else round(recovered_ms)} ms after it returned")
        for label, fraction in (("p50", 0.50), ("p99", 0.99)):
            measured = figure.percentile_us(fraction) or 0.0
            report.comparisons.append(Comparison(
                f"outage {how}: hit {label} while open vs the 50 µs target",
                f"{measured:.1f} µs", f"{OUTAGE_TARGET_US:.0f} µs", measured / OUTAGE_TARGET_US, 1.0, False))
        if recovered_ms is not None:
            report.comparisons.append(Comparison(
                f"outage {how}: time to recover vs the 1 s target",
                f"{recovered_ms:.0f} ms", "1000 ms", recovered_ms / 1000.0, 1.0, False))


def table_rows(report: Report) -> Iterator[List[str]]:
    yield ["comparison", "ratelock", "peer", "ratio", "target", "result"]
    for line in report.comparisons:
        yield [line.name, line.ratelock_text, line.peer_text, f"{line.ratio:.2f}", line.target_text, line.verdict]


def print_table(report: Report) -> None:
    rows = list(table_rows(report))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    print()
    for index, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:])]
        print("  ".join(cells))
        if index == 0:
            print("  ".join("-" * width for width in widths))
    for note in report.notes:
        print(f"note: {note}")


def package_versions() -> Dict[str, str]:
    versions = {}
    for package in PEER_PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def cpu_count() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else (os.cpu_count() or 0)


def markdown(report: Report, started: datetime.datetime) -> str:
    lines = [
        "# ratelock Python benchmark results",
        "",
        "Written by `.venv-bench/bin/python bench/python/bench.py` (see bench/python/README.md).",
        "",
        f"- date: {started:%Y-%m-%d %H:%M:%S} UTC",
        f"- nproc: {cpu_count()}",
        f"- python: {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.system().lower()} {platform.machine()}",
        f"- {redis_server_version()}",
        "- packages: " + ", ".join(f"{name} {version}" for name, version in package_versions().items()),
        "",
    ]
    rows = list(table_rows(report))
    lines.append("| " + " | ".join(rows[0]) + " |")
    lines.append("|:--|" + "--:|" * 4 + ":-:|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows[1:])
    lines += ["", "## Every measurement", "", "| # | measurement | rate | p50 | p99 |", "|:-:|:--|--:|--:|--:|"]
    for section, name, figure in report.measurements:
        p50, p99 = figure.percentile_us(0.50), figure.percentile_us(0.99)
        latency = [f"{value:.1f} µs" if value is not None else "-" for value in (p50, p99)]
        lines.append(f"| {section} | {name} | {rate_text(figure)} | {latency[0]} | {latency[1]} |")
    if report.tails:
        header = overhead.ladder_header()
        lines += ["", "## Client overhead and tails (section 1b)", "",
                  "Each call timed right after a raw-socket PING; µs. overhead = call − PING − server, at p50 and "
                  "at p99; the last columns are the share of calls in each latency band.", "",
                  "| " + " | ".join(header) + " |", "|:--|" + "--:|" * (len(header) - 1)]
        lines.extend("| " + " | ".join(overhead.ladder_row(tails)) + " |" for tails in report.tails)
    if report.notes:
        lines += [""] + [f"- {note}" for note in report.notes]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------


def main() -> None:
    started = datetime.datetime.now(datetime.timezone.utc)
    port = free_loopback_port()
    url = f"redis://127.0.0.1:{port}/0"
    server = start_redis_server(port)
    print(f"redis-server pid {server.pid} on 127.0.0.1:{port}; each figure: {MEASURE_SECONDS} s after a "
          f"{WARMUP_SECONDS} s warm-up")
    report = Report()
    try:
        compare_sequential_redis(report, url, port)
        compare_client_overhead(report, url, port)
        compare_threaded_redis(report, url)
        compare_asyncio_redis(report, url, port)
        compare_flask(report, url, port)
        compare_frameworks(report, url, port)
        compare_locks(report, url)
        compare_memory(report)
        compare_metrics(report)
    finally:
        stop_redis_server(server)
    measure_outages(report)
    print_table(report)
    RESULTS_PATH.write_text(markdown(report, started), encoding="utf-8")
    print(f"\nwritten to {RESULTS_PATH}")


if __name__ == "__main__":
    main()
