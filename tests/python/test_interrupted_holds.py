"""A ``with`` block or an acquire cut short by an interruption: the interruption propagates as itself
(a release that fails on the way out is noted on it, never raised in its place), and an asyncio acquire
cancelled while its call is on the wire leaves nothing taken on the server."""

import asyncio
import gc
import os
import signal
import subprocess
import threading
import time
import uuid

import pytest

import ratelock
import ratelock.asyncio


def fresh_name() -> str:
    return f"interrupted:{uuid.uuid4().hex}"


def test_an_interrupt_in_a_block_whose_hold_was_lost_stays_an_interrupt(store_url):
    lock = ratelock.DistributedLock(fresh_name(), store_url, ttl=0.1, auto_renew=False)
    with pytest.raises(KeyboardInterrupt) as raised:
        with lock:
            time.sleep(0.2)  # the lease runs out: the release on the way out raises LockLost
            raise KeyboardInterrupt
    assert any("was not given back" in note for note in getattr(raised.value, "__notes__", []))


def test_an_ordinary_error_in_such_a_block_still_meets_the_lost_hold(store_url):
    lock = ratelock.DistributedLock(fresh_name(), store_url, ttl=0.1, auto_renew=False)
    with pytest.raises(ratelock.LockLost) as raised:
        with lock:
            time.sleep(0.2)
            raise ValueError("the block's own error")
    assert isinstance(raised.value.__context__, ValueError)


def test_a_cancelled_task_whose_hold_was_lost_stays_cancelled(store_url):
    async def main() -> None:
        lock = ratelock.asyncio.DistributedLock(fresh_name(), store_url, ttl=0.1, auto_renew=False)
        entered = asyncio.Event()

        async def hold() -> None:
            async with lock:
                entered.set()
                await asyncio.sleep(10)

        task = asyncio.create_task(hold())
        await entered.wait()
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["lock", "semaphore", "fair"])
def test_an_acquire_cancelled_mid_call_leaves_nothing_taken(redis_server, kind):
    # The server holds every write for 300 ms; the acquire is cancelled after 50 ms, and its script runs
    # when the pause ends. The grant it makes is given back: another instance takes the hold at once.
    name = fresh_name()
    made = {
        "lock": lambda: ratelock.asyncio.DistributedLock(name, redis_server.url, ttl=30),
        "semaphore": lambda: ratelock.asyncio.Semaphore(name, 1, redis_server.url, ttl=30),
        "fair": lambda: ratelock.asyncio.FairLock(name, redis_server.url, ttl=30),
    }[kind]

    async def main() -> None:
        first, second = made(), made()
        assert await first.acquire()  # the connection and scripts are ready before the pause
        await first.release()
        subprocess.run(["redis-cli", "-p", str(redis_server.port), "CLIENT", "PAUSE", "300", "WRITE"], check=True,
                       capture_output=True)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(first.acquire(), 0.05)
        assert await second.acquire(timeout=3), "the cancelled acquire's grant was never given back"
        await second.release()

    asyncio.run(main())


def test_threads_sharing_a_semaphore_each_give_back_their_own_permit(store_url):
    # A's permit runs out (no renewal) while B's is live: A's release finds its own permit lost, and
    # B's gives back B's. One stack for the instance gave A B's permit and B A's lost one.
    permits = ratelock.Semaphore(fresh_name(), 2, store_url, ttl=0.3, auto_renew=False)
    outcomes = {}
    b_holds = threading.Event()

    def a() -> None:
        assert permits.acquire()
        b_holds.wait(5)
        time.sleep(0.35)
        try:
            outcomes["a"] = permits.release()
        except ratelock.LockLost:
            outcomes["a"] = "lost"

    def b() -> None:
        time.sleep(0.15)
        assert permits.acquire()
        permits.extend(5)  # B's own permit: it outlives A's, and is given back after A's release
        b_holds.set()
        time.sleep(0.6)
        outcomes["b"] = permits.release()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert outcomes == {"a": "lost", "b": "released"}


def test_tasks_sharing_a_semaphore_each_extend_and_give_back_their_own_permit(store_url):
    async def main() -> None:
        permits = ratelock.asyncio.Semaphore(fresh_name(), 2, store_url, ttl=0.3, auto_renew=False)
        b_holds = asyncio.Event()

        async def a() -> str:
            assert await permits.acquire()
            await b_holds.wait()
            await asyncio.sleep(0.35)
            try:
                return await permits.release()
            except ratelock.LockLost:
                return "lost"

        async def b() -> str:
            await asyncio.sleep(0.15)
            assert await permits.acquire()
            b_holds.set()
            await permits.extend(5)  # B's own permit: it outlives A's
            await asyncio.sleep(0.45)
            return await permits.release()

        assert await asyncio.gather(a(), b()) == ["lost", "released"]

    asyncio.run(main())


def test_each_event_loop_leaves_nothing_behind_when_it_ends():
    # ratelock.asyncio keeps one queue of finished calls per event loop, with a socket pair; it goes
    # with its loop. It used to keep the loop alive: two descriptors and a loop per asyncio.run().
    limiter = ratelock.asyncio.Limiter()

    async def one_hit() -> None:
        assert (await limiter.hit("k", "1000/second")).allowed

    asyncio.run(one_hit())
    gc.collect()
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(30):
        asyncio.run(one_hit())
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) - before < 4


class _Alarm(Exception):
    pass


def test_a_signal_handler_interrupts_a_blocked_acquire(store_url):
    # A blocked sync call lets Python run its signal handlers: the handler's exception ends the wait at
    # once (it came only when the wait ended, 3 s on), and the waiter takes nothing.
    name = fresh_name()
    holder = ratelock.DistributedLock(name, store_url, ttl=5)
    waiter = ratelock.DistributedLock(name, store_url, ttl=5)
    assert holder.acquire()

    def alarm(signum: int, frame: object) -> None:
        raise _Alarm

    previous = signal.signal(signal.SIGALRM, alarm)
    started = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(_Alarm):
            waiter.acquire(timeout=3)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 1.5
    with pytest.raises(ratelock.LockNotOwned):
        waiter.release()
    holder.release()
    assert waiter.acquire(timeout=1)
    waiter.release()


def test_acquire_reads_its_arguments_as_threading_lock_users_write_them(store_url):
    name = fresh_name()
    holder = ratelock.DistributedLock(name, store_url)
    other = ratelock.DistributedLock(name, store_url)
    assert holder.acquire(False)  # threading.Lock.acquire(blocking=False), by position
    assert other.acquire(False) is False
    with pytest.raises(ratelock.InvalidArgument, match="non-blocking"):
        other.acquire(blocking=False, timeout=5)
    with pytest.raises(ratelock.InvalidArgument, match="non-blocking"):
        other.acquire(False, 5)  # threading's (blocking, timeout)
    started = time.monotonic()
    with pytest.raises(ratelock.WaitTimeout):
        other.acquire(True, 0.2)  # waits 0.2 s, as threading reads it (it waited with no limit)
    assert time.monotonic() - started < 2
    holder.release()


def test_a_fair_lock_wait_interrupted_by_a_signal_handler_leaves_the_queue(redis_server):
    # The interrupted wait's place was left at the queue's head: the next waiter waited for it to
    # lapse (waiter_ttl, 5 s) after the holder let go.
    name = fresh_name()
    holder = ratelock.FairLock(name, redis_server.url, ttl=30)
    interrupted = ratelock.FairLock(name, redis_server.url, ttl=30)
    later = ratelock.FairLock(name, redis_server.url, ttl=30)
    assert holder.acquire()

    def alarm(signum: int, frame: object) -> None:
        raise _Alarm

    previous = signal.signal(signal.SIGALRM, alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(_Alarm):
            interrupted.acquire(timeout=10)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    time.sleep(0.2)  # the withdrawal runs in the background
    holder.release()
    started = time.monotonic()
    assert later.acquire(timeout=3)
    assert time.monotonic() - started < 1.0, "the next waiter waited for the dead place to lapse"
    later.release()


def test_a_cancelled_wait_booked_by_the_local_fallback_refunds_nothing_on_the_server():
    # Booked in memory during an outage (on_error="local"), cancelled once the server is back: its
    # refund went to the server, giving back a unit the server had never lent.
    from conftest import RedisServer

    server = RedisServer()
    try:

        async def main() -> None:
            limiter = ratelock.asyncio.Limiter(server.url, on_error="local", timeout=0.2)
            rules = "12/minute burst 1"
            spent = await limiter.hit("job", rules)
            assert spent.allowed and not spent.degraded, "spent on the server: the next unit in 5 s"
            server.pause()
            assert (await limiter.hit("job", rules)).degraded, "the local fallback answers"
            waiting = asyncio.create_task(limiter.wait("job", rules, max_wait=10))
            await asyncio.sleep(0.4)  # booked locally, 5 s ahead
            server.resume()
            deadline = time.monotonic() + 5
            while (await limiter.hit("recovery", "1000/second")).degraded:
                assert time.monotonic() < deadline, "the server is used again"
                await asyncio.sleep(0.02)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            await asyncio.sleep(0.3)
            on_the_server = await limiter.peek("job", rules)
            assert not on_the_server.degraded
            assert not on_the_server.allowed, "the server's unit was given back by a refund of a local booking"

        asyncio.run(main())
    finally:
        server.stop()


def test_a_closed_wait_gives_its_booking_back(store_url):
    # A coroutine closed while it waits (close(), or collected unfinished while its loop runs) may not
    # await again: awaiting the refund there raised "coroutine ignored GeneratorExit".
    async def run() -> None:
        limiter = ratelock.asyncio.Limiter(store_url, prefix=f"w{uuid.uuid4().hex[:8]}")
        assert (await limiter.hit("k", "1/5 seconds")).allowed
        before = (await limiter.peek("k", "1/5 seconds")).retry_after
        waiting = limiter.wait("k", "1/5 seconds", max_wait=60)
        # Drive it by hand until it sleeps until its slot (about 5 s): every other step ends at once.
        step = waiting.send(None)
        while (await asyncio.wait([step], timeout=1.0))[0]:
            step = waiting.send(None)
        assert (await limiter.peek("k", "1/5 seconds")).retry_after > before + 3, "the wait booked its slot"
        waiting.close()
        for _ in range(200):
            if (await limiter.peek("k", "1/5 seconds")).retry_after <= before + 1:
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the closed wait's booking was not given back")

    asyncio.run(run())


def test_an_async_generator_closed_in_its_async_with_releases_before_aclose_returns(store_url):
    # aclose() may await: the release is made there, not left to a task after it.
    async def run() -> None:
        name = fresh_name()

        async def holding():  # type: ignore[no-untyped-def]
            async with ratelock.asyncio.DistributedLock(name, store_url, ttl=30):
                yield "held"

        generator = holding()
        assert await generator.__anext__() == "held"
        await generator.aclose()
        assert not await ratelock.asyncio.DistributedLock(name, store_url).locked()

    asyncio.run(run())


def test_a_wait_cancelled_while_it_books_gives_the_booking_back(redis_server):
    # Cancelled while its reservation is on the wire: the server books the slot anyway, and the booking
    # is given back once its answer comes (it was dropped with the cancelled call, and stayed spent).
    async def run() -> None:
        limiter = ratelock.asyncio.Limiter(redis_server.url, prefix=f"w{uuid.uuid4().hex[:8]}")
        assert (await limiter.hit("k", "1/5 seconds")).allowed
        before = (await limiter.peek("k", "1/5 seconds")).retry_after
        waiting = asyncio.ensure_future(limiter.wait("k", "1/5 seconds", max_wait=60))
        await asyncio.sleep(0)  # it sends its reservation, and awaits the answer
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        for _ in range(200):
            if (await limiter.peek("k", "1/5 seconds")).retry_after <= before + 1:
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the interrupted booking was not given back")

    asyncio.run(run())
