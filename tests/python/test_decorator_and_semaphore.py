"""The `limit` decorator (RateLimited with retry_after) and ratelock.Semaphore from Python."""

import threading
import time
import uuid

import pytest

import ratelock


def test_the_decorator_limits_calls_per_key(store_url):
    limiter = ratelock.Limiter(store_url, prefix=f"d{uuid.uuid4().hex[:8]}")
    calls = []

    @limiter.limit("2/minute", key=lambda user: f"export:{user}")
    def export(user: str) -> str:
        calls.append(user)
        return f"exported {user}"

    assert export("ann") == "exported ann" and export("ann") == "exported ann"
    with pytest.raises(ratelock.RateLimited) as limited:
        export("ann")
    assert 29 < limited.value.retry_after <= 30
    assert not limited.value.decision.allowed
    assert isinstance(limited.value, ratelock.RatelockError)
    assert export("bob") == "exported bob"
    assert calls == ["ann", "ann", "bob"], "a limited call must not run"
    assert export.__name__ == "export"


def test_the_decorator_takes_a_cost_function(store_url):
    limiter = ratelock.Limiter(store_url, prefix=f"d{uuid.uuid4().hex[:8]}")

    @limiter.limit("10/minute", cost=lambda rows: rows)
    def load(rows: int) -> int:
        return rows

    assert load(6) == 6
    with pytest.raises(ratelock.RateLimited):
        load(5)
    assert load(4) == 4


def test_a_semaphore_admits_n_holders(store_url):
    name = f"sem:{uuid.uuid4().hex}"
    pool = ratelock.Semaphore(name, 2, store_url)
    other = ratelock.Semaphore(name, 2, store_url)
    assert pool.acquire() and pool.acquire()
    assert other.acquire(blocking=False) is False
    assert pool.in_use() == 2
    pool.release()
    with other:
        assert other.in_use() == 2
    pool.release()
    assert pool.in_use() == 0
    with pytest.raises(ratelock.LockNotOwned):
        pool.release()


def test_semaphore_waiters_and_timeouts(store_url):
    name = f"sem:{uuid.uuid4().hex}"
    most = []
    inside = []
    guard = threading.Lock()

    def worker() -> None:
        pool = ratelock.Semaphore(name, 3, store_url, ttl=10)
        with pool:
            with guard:
                inside.append(1)
                most.append(len(inside))
            time.sleep(0.02)
            with guard:
                inside.pop()

    threads = [threading.Thread(target=worker) for _ in range(9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert max(most) <= 3
    busy = ratelock.Semaphore(name, 1, store_url)
    assert busy.acquire()
    with pytest.raises(ratelock.WaitTimeout):
        ratelock.Semaphore(name, 1, store_url).acquire(timeout=0.1)
    busy.release()


def test_an_expired_permit_raises_lock_lost_at_release(store_url):
    pool = ratelock.Semaphore(f"sem:{uuid.uuid4().hex}", 1, store_url, ttl=0.1, auto_renew=False)
    assert pool.acquire()
    time.sleep(0.2)
    assert pool.lost
    with pytest.raises(ratelock.LockLost):
        pool.release()


def test_bad_semaphore_arguments_are_typed():
    with pytest.raises(ratelock.InvalidArgument, match="permits"):
        ratelock.Semaphore("x", 0)
    with pytest.raises(ratelock.InvalidArgument, match="permits"):
        ratelock.Semaphore("x", -3)


def test_the_concurrency_limiter_counts_in_flight_requests_per_key(store_url):
    tenant = f"tenant:{uuid.uuid4().hex}"
    limiter = ratelock.ConcurrencyLimiter(2, store_url)
    with limiter.slot(tenant):
        second = limiter.try_slot(tenant)
        assert second is not None
        assert limiter.try_slot(tenant) is None
        assert limiter.in_flight(tenant) == 2
        assert limiter.try_slot(f"{tenant}:other") is not None
        second.release()
    assert limiter.in_flight(tenant) == 0
    with pytest.raises(ratelock.InvalidArgument, match="permits"):
        ratelock.ConcurrencyLimiter(0)


def test_async_semaphore_admits_n_tasks(store_url):
    import asyncio

    import ratelock.asyncio as rl_asyncio

    name = f"asem:{uuid.uuid4().hex}"

    async def run() -> int:
        inside = 0
        most = 0

        async def worker() -> None:
            nonlocal inside, most
            async with rl_asyncio.Semaphore(name, 3, store_url, ttl=10):
                inside += 1
                most = max(most, inside)
                await asyncio.sleep(0.01)
                inside -= 1

        await asyncio.gather(*(worker() for _ in range(12)))
        busy = rl_asyncio.Semaphore(name, 1, store_url)
        assert await busy.acquire()
        with pytest.raises(ratelock.WaitTimeout):
            await rl_asyncio.Semaphore(name, 1, store_url).acquire(timeout=0.1)
        await busy.release()
        return most

    assert asyncio.run(run()) == 3
