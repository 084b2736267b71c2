"""Connections the server closes (CLIENT KILL, an idle `timeout`) fail no call, sync or asyncio, hits or
locks; a lock wait rides out killed connections; a release that fails on the transport keeps the hold;
and a state the scripts did not expect is a ProtocolError that `on_error="allow"` never admits."""

import asyncio
import subprocess
import threading
import time
import uuid

import pytest

import ratelock
import ratelock.asyncio
from conftest import RedisServer


def kill_clients(server: RedisServer) -> None:
    """Kills every normal client connection, as an operator or an idle-closing proxy would."""
    subprocess.run(
        ["redis-cli", "-p", str(server.port), "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"],
        check=True, stdout=subprocess.DEVNULL,
    )


def test_sync_hits_and_locks_fail_nothing_when_connections_are_killed(redis_server):
    limiter = ratelock.Limiter(redis_server.url, prefix=f"k{uuid.uuid4().hex[:8]}")
    lock = ratelock.DistributedLock(f"killed-{uuid.uuid4().hex[:8]}", url=redis_server.url, ttl=5)
    failed, admitted = [], 0
    for round in range(40):  # bounded: 40 kills
        try:
            admitted += limiter.hit("k", "1000/day").allowed
        except ratelock.RatelockError as error:
            failed.append(f"hit {round}: {error}")
        try:
            with lock:
                pass
        except ratelock.RatelockError as error:
            failed.append(f"lock {round}: {error}")
        kill_clients(redis_server)
        time.sleep(0.005)
    assert failed == [], f"{len(failed)} failed calls: {failed[:5]}"
    # A peek answers as if it spent its own cost.
    assert 1000 - limiter.peek("k", "1000/day").remaining - 1 == admitted


def test_asyncio_hits_fail_nothing_when_connections_are_killed(redis_server):
    async def run() -> "tuple[list[str], int, int]":
        limiter = ratelock.asyncio.Limiter(redis_server.url, prefix=f"a{uuid.uuid4().hex[:8]}")
        failed, admitted = [], 0
        for round in range(30):
            try:
                admitted += (await limiter.hit("k", "1000/day")).allowed
            except ratelock.RatelockError as error:
                failed.append(f"hit {round}: {error}")
            kill_clients(redis_server)
            await asyncio.sleep(0.005)
        left = (await limiter.peek("k", "1000/day")).remaining
        return failed, admitted, left

    failed, admitted, left = asyncio.run(run())
    assert failed == [], f"{len(failed)} failed calls: {failed[:5]}"
    assert 1000 - left - 1 == admitted


def test_an_idle_timeout_of_the_server_fails_no_call():
    server = RedisServer("--timeout", "1")
    try:
        limiter = ratelock.Limiter(server.url)
        for round in range(2):
            time.sleep(2.2)  # idle past the server's 1 s timeout: it closes our connections
            assert limiter.hit("idle", "100/hour").remaining == 99 - round
    finally:
        server.stop()


def test_a_lock_wait_rides_out_killed_connections(redis_server):
    name = f"waited-{uuid.uuid4().hex[:8]}"
    holder = ratelock.DistributedLock(name, url=ratelock.Client(redis_server.url), ttl=10)
    waiter = ratelock.DistributedLock(name, url=ratelock.Client(redis_server.url), ttl=10)
    holder.acquire()
    outcome: "list[object]" = []
    thread = threading.Thread(target=lambda: outcome.append(waiter.acquire(timeout=8)))
    thread.start()
    for _ in range(10):
        time.sleep(0.1)
        kill_clients(redis_server)
    holder.release()
    thread.join(timeout=9)
    assert outcome == [True], "granted after the release, within its budget"
    waiter.release()


def test_a_release_that_fails_on_the_transport_keeps_the_hold():
    server = RedisServer()
    try:
        lock = ratelock.DistributedLock("kept", url=ratelock.Client(server.url, timeout=0.3), ttl=10)
        lock.acquire()
        token = lock.fencing_token
    finally:
        server.stop()
    with pytest.raises(ratelock.StoreUnavailable):
        lock.release()
    # The hold is still this instance's, so the caller can retry (before the fix, the hold was gone
    # and a retry raised LockNotOwned: "this instance holds no lock").
    assert lock.fencing_token == token
    with pytest.raises(ratelock.StoreUnavailable):
        lock.release()
    assert lock.fencing_token == token


def test_a_state_the_script_did_not_expect_is_a_protocol_error_never_admitted(redis_server):
    prefix = f"p{uuid.uuid4().hex[:8]}"
    limiter = ratelock.Limiter(redis_server.url, prefix=prefix, on_error="allow")
    limiter.hit("k", "5/minute")
    keys = subprocess.run(
        ["redis-cli", "-p", str(redis_server.port), "--scan", "--pattern", f"{prefix}:*"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    assert len(keys) == 1
    # Another program wrote a hash where the rule's state lives.
    subprocess.run(["redis-cli", "-p", str(redis_server.port), "DEL", keys[0]], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(
        ["redis-cli", "-p", str(redis_server.port), "HSET", keys[0], "f", "v"], check=True, stdout=subprocess.DEVNULL
    )
    with pytest.raises(ratelock.ProtocolError):
        limiter.hit("k", "5/minute")
