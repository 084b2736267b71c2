"""ratelock.asyncio: the same decisions as the sync API, exact counts under 100 concurrent tasks, typed
errors, and an event loop that keeps running while calls are in flight."""

import asyncio
import concurrent.futures
import socket
import threading
import uuid

import pytest

import ratelock
import ratelock.asyncio


def test_async_and_sync_decide_alike(store_url):
    rules = "3 per 2 seconds; 5/minute using sliding_log"
    base = 1_763_800_000_000_000
    times = [base + i * 150_000 for i in range(12)]

    sync = ratelock.Limiter(store_url, prefix=f"s{uuid.uuid4().hex[:8]}")
    expected = [sync.hit("k", rules, now_us=t) for t in times]

    async def run() -> list:
        limiter = ratelock.asyncio.Limiter(store_url, prefix=f"a{uuid.uuid4().hex[:8]}")
        return [await limiter.hit("k", rules, now_us=t) for t in times]

    got = asyncio.run(run())
    fields = ("allowed", "remaining", "reset_after", "retry_after", "rule_index")
    assert [tuple(getattr(d, f) for f in fields) for d in got] == [
        tuple(getattr(d, f) for f in fields) for d in expected
    ]


def test_a_hundred_concurrent_tasks_get_exact_counts(store_url):
    async def run() -> int:
        limiter = ratelock.asyncio.Limiter(store_url)
        key = f"py:{uuid.uuid4().hex}"
        decisions = await asyncio.gather(*(limiter.hit(key, "70/hour") for _ in range(100)))
        return sum(1 for d in decisions if d.allowed)

    assert asyncio.run(run()) == 70


def test_the_event_loop_keeps_running_during_calls(redis_server):
    async def run() -> int:
        limiter = ratelock.asyncio.Limiter(redis_server.url)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        for _ in range(200):
            await limiter.hit(f"py:{uuid.uuid4().hex}", "5/second")
        task.cancel()
        return ticks

    assert asyncio.run(run()) >= 100, "the loop was blocked while awaiting"


def test_a_cancelled_call_is_skipped_and_the_loop_goes_on(redis_server):
    loop_errors: list = []

    async def run() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: loop_errors.append(context))
        limiter = ratelock.asyncio.Limiter(redis_server.url)
        key = f"py:{uuid.uuid4().hex}"
        await limiter.hit("warm", "5/second")
        # Sent on a socket of its own (no process to start first), the server is asleep at once: the hit
        # below waits for it, and is cancelled while it does.
        sleeper = socket.create_connection(("127.0.0.1", redis_server.port))
        sleeper.sendall(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$3\r\n0.5\r\n")
        await asyncio.sleep(0.05)
        in_flight = asyncio.ensure_future(limiter.hit(key, "10/minute"))
        await asyncio.sleep(0.05)
        in_flight.cancel()
        with pytest.raises(asyncio.CancelledError):
            await in_flight
        # The command was already sent, so its hit still counts once the server answers.
        decision = await limiter.hit(key, "10/minute")
        assert decision.allowed and decision.remaining == 8
        sleeper.settimeout(5)
        assert sleeper.recv(64).startswith(b"+OK")
        sleeper.close()

    asyncio.run(run())
    assert loop_errors == [], "resolving the cancelled call's future failed in the loop"


def test_one_limiter_serves_successive_and_parallel_event_loops(store_url):
    limiter = ratelock.asyncio.Limiter(store_url)
    key = f"py:{uuid.uuid4().hex}"

    async def spend(times: int) -> int:
        decisions = await asyncio.gather(*(limiter.hit(key, "100/hour") for _ in range(times)))
        return sum(1 for d in decisions if d.allowed)

    assert asyncio.run(spend(30)) == 30
    assert asyncio.run(spend(30)) == 30
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        admitted = sum(pool.map(lambda _: asyncio.run(spend(20)), range(4)))
    assert admitted == 40, "exactly the 40 units left in the limit are admitted across four loops"


def test_async_errors_are_typed(store_url):
    async def run() -> None:
        limiter = ratelock.asyncio.Limiter(store_url)
        with pytest.raises(ratelock.InvalidRule, match="fortnight"):
            await limiter.hit("k", "5/fortnight")
        with pytest.raises(ratelock.CostExceedsCapacity):
            await limiter.hit("k", "5/second", 9)
        with pytest.raises(ratelock.InvalidArgument, match="key"):
            await limiter.hit(None, "5/second")  # type: ignore[arg-type]
        await limiter.reset("k", "5/second")

    asyncio.run(run())


def test_bad_limiter_arguments_raise_where_the_limiter_is_made():
    # As with ratelock.Limiter: a typo in the options fails at start-up, not at the first request.
    with pytest.raises(ratelock.InvalidArgument, match="on_error"):
        ratelock.asyncio.Limiter(on_error="open")  # type: ignore[arg-type]
    with pytest.raises(ratelock.InvalidArgument, match="url"):
        ratelock.asyncio.Limiter(42)  # type: ignore[arg-type]


def test_an_unreachable_store_raises_on_first_use():
    async def run() -> None:
        limiter = ratelock.asyncio.Limiter("redis://127.0.0.1:1/", timeout=0.5)
        with pytest.raises(ratelock.StoreUnavailable):
            await limiter.hit("k", "5/second")

    asyncio.run(run())


def test_async_with_locks_exclude_each_other_and_tokens_rise(store_url):
    name = f"alock:{uuid.uuid4().hex}"

    async def run() -> list:
        holds = []
        inside = 0

        async def worker() -> None:
            nonlocal inside
            async with ratelock.asyncio.DistributedLock(name, store_url, ttl=5) as lock:
                inside += 1
                assert inside == 1, "two holders at once"
                holds.append(lock.fencing_token)
                await asyncio.sleep(0.002)
                inside -= 1

        await asyncio.gather(*(worker() for _ in range(20)))
        return holds

    holds = asyncio.run(run())
    assert len(holds) == 20 and holds == sorted(holds) and len(set(holds)) == 20


def test_every_awaitable_is_resolved_by_the_loop_never_from_the_runtimes_thread(redis_server):
    # An awaitable resolved from ratelock's runtime thread (loop.call_soon_threadsafe there) took the GIL
    # on that thread: beside a busy Python thread every connection of the process waited for it (20 tasks
    # of lock pairs: 3.6-3.9k/s alone, 0.6k/s beside one). Every answer now waits in the loop's queue of
    # completions, and the loop resolves it on its own thread.
    async def run() -> list:
        loop = asyncio.get_running_loop()
        other_threads = []
        scheduled = loop.call_soon_threadsafe

        def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
            if threading.get_ident() != loop_thread:
                other_threads.append(threading.current_thread().name)
            return scheduled(*args, **kwargs)

        loop_thread = threading.get_ident()
        loop.call_soon_threadsafe = recording  # type: ignore[method-assign]
        name = f"alock:{uuid.uuid4().hex}"
        lock = ratelock.asyncio.DistributedLock(name, redis_server.url, ttl=5)
        for _ in range(5):
            assert await lock.acquire()
            await lock.extend(5)
            await lock.release()
        fair = ratelock.asyncio.FairLock(name + ":fair", redis_server.url, ttl=5)
        async with fair:
            assert await fair.locked()
        limiter = ratelock.asyncio.Limiter(redis_server.url)
        await limiter.hit(name, "5/second")
        await limiter.reset(name, "5/second")
        return other_threads

    assert asyncio.run(run()) == []


def test_a_cancelled_acquire_stops_waiting_and_takes_nothing(redis_server):
    # Cancelling an awaiting acquire drops its call on the runtime: it never takes the lock after its
    # cancel. (A grant taken and given back in between would announce a second release.)
    import redis

    name = f"alock:{uuid.uuid4().hex}"
    client = redis.Redis.from_url(redis_server.url)
    releases = client.pubsub()
    releases.subscribe(f"rl:{{{name}}}:released")
    assert releases.get_message(timeout=2)["type"] == "subscribe"

    async def run() -> None:
        holder = ratelock.asyncio.DistributedLock(name, redis_server.url, ttl=5)
        waiter = ratelock.asyncio.DistributedLock(name, redis_server.url, ttl=5)
        assert await holder.acquire()
        waiting = asyncio.ensure_future(waiter.acquire(timeout=30))
        await asyncio.sleep(0.2)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await holder.release()
        await asyncio.sleep(0.3)
        assert await holder.acquire(blocking=False), "the cancelled acquire holds the lock"
        announced = []
        while (message := releases.get_message(timeout=0.3)) is not None:
            announced.append(message["data"])
        assert announced == [b"released"], "the cancelled acquire took the lock after its cancel, and gave it back"
        await holder.release()

    try:
        asyncio.run(run())
    finally:
        releases.close()
        client.close()


def test_a_grant_answered_to_a_closed_loop_is_given_back(redis_server):
    # A loop closed while one of its acquires still waited: the grant that comes after has no loop to
    # drain it. It is dropped, and so given back, instead of being held (and renewed) for good.
    name = f"alock:{uuid.uuid4().hex}"
    holder = ratelock.DistributedLock(name, redis_server.url, ttl=30)
    assert holder.acquire()
    event_loop = asyncio.new_event_loop()
    waiter = ratelock.asyncio.DistributedLock(name, redis_server.url, ttl=2)
    waiting = event_loop.create_task(waiter.acquire(timeout=30))
    event_loop.run_until_complete(asyncio.sleep(0.2))
    assert not waiting.done()
    event_loop.close()
    holder.release()  # the waiter is granted the lock now, its loop closed
    later = ratelock.DistributedLock(name, redis_server.url, ttl=5)
    assert later.acquire(timeout=10), "the grant answered to a closed loop was never given back"
    later.release()


def test_a_memory_lock_polled_in_a_loop_lets_its_holder_release(store_url):
    # An answer had at once resolves on the loop's next turn: a loop of try-acquires yields, so the task
    # holding the lock gets to release it.
    async def run() -> int:
        name = f"alock:{uuid.uuid4().hex}"
        holder = ratelock.asyncio.DistributedLock(name, store_url, ttl=5)
        other = ratelock.asyncio.DistributedLock(name, store_url, ttl=5)
        assert await holder.acquire()

        async def release_soon() -> None:
            await asyncio.sleep(0)
            await holder.release()

        releasing = asyncio.create_task(release_soon())
        tries = 0
        while not await other.acquire(blocking=False):
            tries += 1
            if tries > 10_000:
                releasing.cancel()
                raise AssertionError("the polling loop never let the holder run")
        await releasing
        await other.release()
        return tries

    asyncio.run(run())


def test_async_lock_errors_are_typed(store_url):
    async def run() -> None:
        name = f"alock:{uuid.uuid4().hex}"
        holder = ratelock.asyncio.DistributedLock(name, store_url)
        waiter = ratelock.asyncio.DistributedLock(name, store_url)
        assert await holder.acquire()
        assert await waiter.acquire(blocking=False) is False
        with pytest.raises(ratelock.WaitTimeout):
            await waiter.acquire(timeout=0.1)
        with pytest.raises(ratelock.LockNotOwned):
            await waiter.release()
        sync_view = ratelock.DistributedLock(name, store_url)
        assert sync_view.force_release()
        with pytest.raises(ratelock.LockLost):
            await holder.release()
        # The hold its release found lost answers a wait for its loss at once (not LockNotOwned).
        assert await holder.wait_lost(5) is True
        with pytest.raises(ratelock.LockNotOwned):
            await waiter.wait_lost(0)

    asyncio.run(run())
