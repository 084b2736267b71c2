"""Outages on a real redis-server, sync, asyncio and through Flask over HTTP: constructors do no I/O,
so a limiter (and a Flask app) boots while Redis is down; calls follow ``on_error`` through the circuit
breaker while the server is stopped or frozen (SIGSTOP) and use it again once it returns; ``local``
decides on this process's share; a wrong password or a missing ACL permission raise
``ConfigurationError`` whatever ``on_error`` says. Every loop is bounded in count and time."""

import asyncio
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

import ratelock
import ratelock.asyncio
from conftest import RedisServer

ROOT = pathlib.Path(__file__).resolve().parents[2]


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def until_recovered(limiter: ratelock.Limiter, rules: str, budget: float = 5.0) -> float:
    started = time.monotonic()
    while time.monotonic() - started < budget:
        try:
            if not limiter.hit(fresh("recovery"), rules).degraded:
                return time.monotonic() - started
        except ratelock.StoreUnavailable:
            pass
        time.sleep(0.01)
    raise AssertionError(f"not recovered within {budget} s")


def test_a_limiter_boots_with_the_server_down_and_uses_it_once_it_is_up():
    server = RedisServer()
    try:
        server.halt()
        limiter = ratelock.Limiter(server.url, on_error="allow", timeout=1.0)  # no I/O: no error
        assert limiter.breaker_state == "closed"
        decisions = [limiter.hit("boot", "100/minute") for _ in range(20)]
        assert all(d.allowed and d.degraded for d in decisions)
        assert limiter.breaker_state in ("open", "half-open")
        with pytest.raises(ratelock.StoreUnavailable):
            limiter.ping()
        server.start_again()
        until_recovered(limiter, "100/minute")
        assert limiter.breaker_state == "closed"
        limiter.ping()
    finally:
        server.stop()


def test_a_frozen_server_opens_the_breaker_and_sigcont_closes_it():
    server = RedisServer()
    try:
        limiter = ratelock.Limiter(server.url, on_error="deny", timeout=0.2)
        assert not limiter.hit("frozen", "100/minute").degraded
        server.pause()
        first = limiter.hit("frozen", "100/minute")
        assert first.degraded and not first.allowed
        assert limiter.breaker_state in ("open", "half-open")
        assert all(limiter.hit("frozen", "100/minute").degraded for _ in range(50))
        server.resume()
        until_recovered(limiter, "100/minute")
    finally:
        server.stop()


def test_asyncio_boots_with_the_server_down_and_recovers():
    server = RedisServer()
    server.halt()

    async def run() -> None:
        limiter = ratelock.asyncio.Limiter(server.url, on_error="allow", timeout=1.0)
        for _ in range(10):
            decision = await limiter.hit("async-boot", "100/minute")
            assert decision.allowed and decision.degraded
        with pytest.raises(ratelock.StoreUnavailable):
            await limiter.ping()
        server.start_again()
        deadline = time.monotonic() + 5
        while (await limiter.hit(fresh("async"), "100/minute")).degraded:
            assert time.monotonic() < deadline, "not recovered"
            await asyncio.sleep(0.01)
        await limiter.ping()
        assert limiter.breaker_state == "closed"

    try:
        asyncio.run(run())
    finally:
        server.stop()


def test_local_fallback_admits_this_process_share():
    server = RedisServer()
    try:
        limiter = ratelock.Limiter(server.url, on_error="local", instances=2, timeout=0.5)
        assert not limiter.hit("shared", "10/minute").degraded
        server.halt()
        decisions = [limiter.hit("shared", "10/minute") for _ in range(30)]
        assert all(d.degraded for d in decisions)
        # GCRA 10/minute: one process of two gets half the burst (5) over twice the period.
        assert sum(d.allowed for d in decisions) == 5
        server.start_again()
        until_recovered(limiter, "10/minute")
        back = limiter.hit("shared", "10/minute")
        assert not back.degraded and back.allowed and back.remaining == 9
    finally:
        server.stop()


def test_misconfiguration_raises_under_allow():
    server = RedisServer("--requirepass", "right")
    try:
        wrong = ratelock.Limiter(f"redis://:wrong@127.0.0.1:{server.port}/", on_error="allow")
        with pytest.raises(ratelock.ConfigurationError, match="password"):
            wrong.hit("k", "10/second")
        assert wrong.breaker_state == "closed", "a wrong password is no outage"
        subprocess.run(
            ["redis-cli", "-p", str(server.port), "-a", "right", "--no-auth-warning",
             "ACL", "SETUSER", "reader", "on", ">pw", "~*", "+@read", "+ping"],
            check=True, stdout=subprocess.DEVNULL,
        )
        reader = ratelock.Limiter(f"redis://reader:pw@127.0.0.1:{server.port}/", on_error="allow")
        with pytest.raises(ratelock.ConfigurationError, match="ACL"):
            reader.hit("k", "10/second")
        with pytest.raises(ratelock.ConfigurationError):
            ratelock.Limiter(f"redis://:wrong@127.0.0.1:{server.port}/").ping()
    finally:
        server.stop()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> "tuple[int, dict[str, object]]":
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as rejected:
        return rejected.code, {}


def test_a_flask_app_under_gunicorn_boots_with_redis_down_and_follows_on_error():
    server = RedisServer()
    server.halt()
    port = _free_port()
    env = dict(
        os.environ,
        RATELOCK_TEST_URL=server.url,
        RATELOCK_TEST_ON_ERROR="allow",
        RATELOCK_TEST_PREFIX=fresh("outage"),
        PYTHONPATH=str(ROOT / "tests" / "python"),
    )
    gunicorn = pathlib.Path(sys.executable).with_name("gunicorn")
    process = subprocess.Popen(
        [str(gunicorn), "--bind", f"127.0.0.1:{port}", "--workers", "1", "process_apps.outage_app:app"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                status, body = _get(f"http://127.0.0.1:{port}/breaker")
                break
            except OSError:
                assert process.poll() is None, "gunicorn exited: the app did not boot with Redis down"
                assert time.monotonic() < deadline, "the app did not start"
                time.sleep(0.1)
        assert status == 200
        answers = [_get(f"http://127.0.0.1:{port}/limited") for _ in range(6)]
        assert all(status == 200 and body["degraded"] for status, body in answers), answers
        assert _get(f"http://127.0.0.1:{port}/breaker")[1]["state"] in ("open", "half-open")
        server.start_again()
        deadline = time.monotonic() + 5
        while _get(f"http://127.0.0.1:{port}/limited")[1].get("degraded", False):
            assert time.monotonic() < deadline, "the app did not use Redis again"
            time.sleep(0.02)
        statuses = [_get(f"http://127.0.0.1:{port}/limited")[0] for _ in range(4)]
        # 3/minute: one was spent by the first non-degraded answer above.
        assert statuses == [200, 200, 429, 429], statuses
    finally:
        process.terminate()
        process.wait(timeout=10)
        server.stop()


def test_one_breaker_per_store_seen_before_a_limiters_first_call():
    server = RedisServer()
    try:
        server.halt()
        first = ratelock.Limiter(server.url, on_error="allow", timeout=0.3)
        assert first.hit("shared-breaker", "10/minute").degraded
        assert first.breaker_state in ("open", "half-open")

        async def fresh_asyncio_limiters() -> None:
            # Not connected yet: the shared store's breaker, the same one the sync limiter opened.
            second = ratelock.asyncio.Limiter(server.url, prefix="other", on_error="deny", timeout=0.3)
            assert second.breaker_state in ("open", "half-open")
            decision = await second.hit("shared-breaker", "10/minute")
            assert decision.degraded and not decision.allowed
            # A different timeout is a different store, with its own (closed) breaker.
            assert ratelock.asyncio.Limiter(server.url, timeout=0.31).breaker_state == "closed"
            assert ratelock.asyncio.Limiter().breaker_state is None

        asyncio.run(fresh_asyncio_limiters())
    finally:
        server.stop()
