"""OpenTelemetry metrics from Python (ratelock.otel) through the SDK's in-memory reader, after real
calls on a real redis-server and on the memory store: decisions by outcome, reason, rule and route,
round trips, store errors, lock waits, holds and losses; keys never among the attributes; an
exception raised by the recorder reaches sys.unraisablehook, never the call."""

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from typing import Any, Dict, List, Tuple

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import ratelock
import ratelock.asyncio
from conftest import RedisServer
from ratelock.otel import Metrics


def fresh(name: str) -> str:
    return f"{name}:{uuid.uuid4().hex}"


def points(reader: InMemoryMetricReader, name: str) -> List[Tuple[Dict[str, Any], float]]:
    """Every data point of `name`: its attributes, and its value (a sum's, or a histogram's count)."""
    found: List[Tuple[Dict[str, Any], float]] = []
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        found.append((dict(point.attributes), value if value is not None else point.count))
    return found


def total(found: List[Tuple[Dict[str, Any], float]], **wanted: str) -> float:
    return sum(value for attributes, value in found if all(attributes.get(k) == v for k, v in wanted.items()))


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def metrics(reader: InMemoryMetricReader) -> Metrics:
    return Metrics(MeterProvider(metric_readers=[reader]))


def test_decisions_round_trips_and_routes_from_a_redis_limiter(redis_server, reader, metrics):
    limiter = ratelock.Limiter(redis_server.url, metrics=metrics)
    key = fresh("user:secret")
    for _ in range(3):
        limiter.hit(key, "2/minute")
    limiter.peek(key, "2/minute")
    banned = fresh("banned")
    limiter.block(banned, 60)
    limiter.hit(banned, "2/minute")
    by_script = ratelock.Limiter(f"{redis_server.url}?server_code=scripts", metrics=metrics)
    by_script.hit(fresh("other"), "2/minute")

    decisions = points(reader, "ratelock.decisions")
    assert total(decisions, outcome="allowed", operation="hit", rule="g2/60000", store="redis") == 3
    assert total(decisions, outcome="denied", reason="rule") == 2, decisions
    assert total(decisions, operation="peek") == 1
    assert total(decisions, outcome="denied", reason="ban") == 1
    assert total(decisions, route="fcall") == 5, decisions
    assert total(decisions, route="evalsha") == 1, decisions
    assert all("secret" not in str(value) for attributes, _ in decisions for value in attributes.values())
    round_trips = points(reader, "ratelock.store.duration")
    assert total(round_trips, store="redis") == 6, round_trips


def test_histograms_have_buckets_for_seconds_and_counters_units(redis_server, reader, metrics):
    # With no advice the SDK used its default boundaries (0, 5, 10 ... 10000), made for milliseconds:
    # every round trip, of well under a millisecond here, fell into the one bucket (0, 5 s].
    limiter = ratelock.Limiter(redis_server.url, metrics=metrics)
    for _ in range(20):
        limiter.hit(fresh("user"), "10/minute")
    data = reader.get_metrics_data()
    found = {metric.name: metric for resource in data.resource_metrics for scope in resource.scope_metrics for metric in scope.metrics}
    # One data point per route (the first calls may go by EVALSHA until the connection's check is done).
    points = found["ratelock.store.duration"].data.data_points
    for round_trips in points:
        bounds = list(round_trips.explicit_bounds)
        assert 0 < bounds[0] < 0.001 and bounds[-1] >= 1, bounds
        assert round_trips.bucket_counts[-1] == 0, "a round trip over the last boundary"
    assert sum(sum(round_trips.bucket_counts) for round_trips in points) == 20
    assert found["ratelock.store.duration"].unit == "s"
    assert found["ratelock.decisions"].unit == "{decision}"


def test_a_loss_measured_just_before_exit_reaches_the_sdks_last_export(redis_server):
    # The SDK's provider shuts down in an atexit handler registered after ratelock's, so it ran first:
    # a hold lost shortly before the process ended (queued for a thread with the GIL) was never exported.
    script = textwrap.dedent(
        """
        import sys, time
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, PeriodicExportingMetricReader
        import ratelock
        from ratelock.otel import Metrics

        class Printing(MetricExporter):
            def __init__(self):
                super().__init__(preferred_temporality={})
            def export(self, metrics_data, timeout_millis=10_000, **kwargs):
                names = sorted({m.name for r in metrics_data.resource_metrics for s in r.scope_metrics for m in s.metrics})
                print("exported", " ".join(names), flush=True)
                return MetricExportResult.SUCCESS
            def force_flush(self, timeout_millis=10_000):
                return True
            def shutdown(self, timeout_millis=30_000, **kwargs):
                pass

        provider = MeterProvider(metric_readers=[PeriodicExportingMetricReader(Printing(), export_interval_millis=600_000)])
        url = sys.argv[1]
        lock = ratelock.DistributedLock("cron", url, ttl=0.6, metrics=Metrics(provider))
        lock.acquire()
        ratelock.DistributedLock("cron", url).force_release()
        time.sleep(0.5)  # the renewal at 0.2 s finds it gone; the process ends before the late drain (1 s)
        print("lost", lock.lost, flush=True)
        """
    )
    ran = subprocess.run([sys.executable, "-c", script, redis_server.url], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert "lost True" in ran.stdout, ran.stdout
    exported = [line for line in ran.stdout.splitlines() if line.startswith("exported")]
    assert exported and "ratelock.lock.lost" in exported[-1].split(), ran.stdout


def test_memory_store_shadow_and_asyncio_decisions(reader, metrics):
    limiter = ratelock.Limiter(shadow=True, metrics=metrics)
    key = fresh("k")
    limiter.hit(key, "1/minute")
    assert limiter.hit(key, "1/minute").allowed

    async def run() -> None:
        aio = ratelock.asyncio.Limiter(metrics=metrics)
        await aio.hit(fresh("a"), "1/minute")

    asyncio.run(run())
    decisions = points(reader, "ratelock.decisions")
    assert total(decisions, outcome="would_deny", store="memory") == 1, decisions
    assert total(decisions, outcome="allowed", store="memory") == 2, decisions
    assert all("route" not in attributes for attributes, _ in decisions)


def test_an_outage_is_a_store_error(reader, metrics):
    server = RedisServer()
    limiter = ratelock.Limiter(server.url, metrics=metrics, timeout=0.5)
    limiter.hit(fresh("k"), "5/second")
    server.stop()
    with pytest.raises((ratelock.StoreUnavailable, ratelock.StoreTimeout)):
        limiter.hit(fresh("k"), "5/second")
    errors = points(reader, "ratelock.store.errors")
    assert total(errors, store="redis") >= 1, errors


def test_lock_waits_holds_and_losses(redis_server, reader, metrics):
    name = fresh("job")
    lock = ratelock.DistributedLock(name, redis_server.url, ttl=0.9, metrics=metrics)
    with lock:
        pass
    with pytest.raises(ratelock.LockLost):
        with lock:
            assert ratelock.DistributedLock(name, redis_server.url).force_release()
            assert lock.wait_lost(timeout=1.0)
    semaphore = ratelock.Semaphore(fresh("pool"), 2, redis_server.url, metrics=metrics)
    with semaphore:
        pass
    waits = points(reader, "ratelock.lock.wait.duration")
    assert total(waits, kind="lock", outcome="granted") == 2, waits
    assert total(waits, kind="permit", outcome="granted") == 1, waits
    held = points(reader, "ratelock.lock.held.duration")
    assert total(held, outcome="released") == 2, held
    assert total(held, outcome="lost") == 1, held
    assert total(points(reader, "ratelock.lock.lost"), kind="lock") == 1


def test_a_wait_that_ends_at_once_is_measured_like_any_wait(redis_server, reader, metrics):
    # timeout=0 (one try) was a try made in Python: a busy lock raised WaitTimeout with no wait
    # measured, and a free one was granted with none either.
    name = fresh("job")
    holder = ratelock.DistributedLock(name, redis_server.url)
    waiter = ratelock.DistributedLock(name, redis_server.url, metrics=metrics)
    with holder:
        with pytest.raises(ratelock.WaitTimeout):
            waiter.acquire(timeout=0)
    assert waiter.acquire(timeout=0) is True
    waiter.release()

    async def asynchronous() -> None:
        shared = ratelock.asyncio.ReadWriteLock(fresh("rw"), redis_server.url, metrics=metrics)
        async with shared.acquire_write():
            with pytest.raises(ratelock.WaitTimeout):
                await shared.acquire_read(timeout=0)

    asyncio.run(asynchronous())
    waits = points(reader, "ratelock.lock.wait.duration")
    assert total(waits, kind="lock", outcome="timed_out") == 1, waits
    assert total(waits, kind="lock", outcome="granted") == 1, waits
    assert total(waits, outcome="timed_out") == 2, waits


def test_a_recorder_that_raises_reaches_the_unraisable_hook_not_the_call(monkeypatch):
    seen: List[BaseException] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(unraisable.exc_value))

    def broken(name: str, value: float, attributes: Dict[str, str]) -> None:
        raise RuntimeError("exporter down")

    limiter = ratelock.Limiter(metrics=broken)
    assert limiter.hit(fresh("k"), "5/second").allowed
    assert seen and all(isinstance(err, RuntimeError) for err in seen)


def test_metrics_must_be_callable():
    with pytest.raises(ratelock.InvalidArgument, match="metrics"):
        ratelock.Limiter(metrics="prometheus")  # type: ignore[arg-type]
    with pytest.raises(ratelock.InvalidArgument, match="metrics"):
        ratelock.DistributedLock("x", metrics=3)  # type: ignore[arg-type]


def test_measurements_are_recorded_on_the_calling_or_loop_thread_never_the_runtimes(redis_server):
    # Recording takes the GIL: on the runtime's thread it stalled every connection of the process
    # behind whatever Python code held the GIL. Every hit below is decided on the runtime's thread
    # (Redis, concurrent asyncio tasks and a blocking call); each measurement must reach the recorder
    # on a Python thread of the application: the loop's, or the caller's.
    seen: List[str] = []

    def record(name: str, value: float, attributes: Dict[str, str]) -> None:
        seen.append(threading.current_thread().name)

    async def run() -> None:
        limiter = ratelock.asyncio.Limiter(redis_server.url, metrics=record)
        await asyncio.gather(*(limiter.hit(fresh("k"), "5/second") for _ in range(200)))

    asyncio.run(run())
    blocking = ratelock.Limiter(redis_server.url, metrics=record)
    caller = threading.Thread(target=lambda: [blocking.hit(fresh("k"), "5/second") for _ in range(50)],
                              name="caller")
    caller.start()
    caller.join(30)
    assert len(seen) >= 250 * 2, len(seen)  # a decision and a round trip per hit
    assert set(seen) <= {"MainThread", "caller"}, sorted(set(seen))


def test_a_loss_measured_in_the_background_is_recorded_with_no_call_after_it(redis_server, reader, metrics):
    # The watchdog finds the hold taken on ratelock's own thread; nothing calls ratelock after that, so
    # no call's return records it: the late drain must.
    name = fresh("idle")
    lock = ratelock.DistributedLock(name, redis_server.url, ttl=0.6, metrics=metrics)
    assert lock.acquire()
    subprocess.run(["redis-cli", "-p", str(redis_server.port), "DEL", f"rl:{{{name}}}:lock"], check=True,
                   capture_output=True)
    deadline = time.monotonic() + 10
    while not total(points(reader, "ratelock.lock.lost"), kind="lock") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert total(points(reader, "ratelock.lock.lost"), kind="lock") == 1
