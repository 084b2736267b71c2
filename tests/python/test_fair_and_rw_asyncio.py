"""ratelock.asyncio.FairLock and ReadWriteLock: FIFO grants among tasks, `async with` on locks and on
holds, typed timeouts that leave the queue, writer preference, the lost signal, and the same lock as the
sync API (one store per URL)."""

import asyncio
import time

import pytest

import ratelock
import ratelock.asyncio
from polling import delete_key, fresh_name


async def until(what: str, check, timeout: float = 10.0) -> None:
    """Awaits `check()` every 5 ms until it is true; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        await asyncio.sleep(0.005)


def test_waiting_tasks_are_granted_in_arrival_order(store_url):
    name = fresh_name("fair")

    async def run() -> None:
        holder = ratelock.asyncio.FairLock(name, store_url, ttl=10, waiter_ttl=2)
        assert await holder.acquire(timeout=5)
        order = []

        async def waiter(arrival: int) -> None:
            async with ratelock.asyncio.FairLock(name, store_url, ttl=10, waiter_ttl=2) as mine:
                order.append((arrival, mine.fencing_token))
                await asyncio.sleep(0.002)

        tasks = []
        for arrival in range(5):
            tasks.append(asyncio.create_task(waiter(arrival)))
            await until("the task queues", lambda: _waiting(holder, arrival + 1))
        assert await ratelock.asyncio.FairLock(name, store_url).try_acquire() is False
        first_token = holder.fencing_token
        await holder.release()
        await asyncio.gather(*tasks)
        assert [arrival for arrival, _ in order] == [0, 1, 2, 3, 4]
        tokens = [first_token] + [token for _, token in order]
        assert tokens == sorted(tokens) and len(set(tokens)) == 6
        assert not await holder.locked() and (await holder.state()).waiting == 0

    asyncio.run(run())


async def _waiting(lock: ratelock.asyncio.FairLock, count: int) -> bool:
    return (await lock.state()).waiting == count


def test_async_fair_timeout_leaves_the_queue_and_extend_works(store_url):
    name = fresh_name("fair")

    async def run() -> None:
        holder = ratelock.asyncio.FairLock(name, store_url, ttl=5)
        waiter = ratelock.asyncio.FairLock(name, store_url)
        async with holder:
            with pytest.raises(ratelock.WaitTimeout):
                await waiter.acquire(timeout=0.2)
            assert (await holder.state()).waiting == 0
            await holder.extend(8)
            assert not holder.lost
        with pytest.raises(ratelock.LockNotOwned):
            await holder.release()
        assert await waiter.try_acquire()
        await waiter.release()

    asyncio.run(run())


def test_async_holds_share_read_and_exclude_write(store_url):
    name = fresh_name("rw")

    async def run() -> None:
        rw = ratelock.asyncio.ReadWriteLock(name, store_url, ttl=10, waiter_ttl=2)
        async with rw.acquire_read(timeout=5) as first, rw.acquire_read(timeout=5) as second:
            assert (await rw.state()).readers == 2 and second.fencing_token > first.fencing_token
            assert await rw.try_acquire_write() is None
            writer = asyncio.create_task(_write_and_release(rw))
            await until("the writer marks itself waiting", lambda: _waiting_writers(rw, 1))
            assert await rw.try_acquire_read() is None, "writer preference holds back later readers"
            with pytest.raises(ratelock.WaitTimeout):
                await rw.acquire_read(timeout=0.1)
        token = await writer
        assert token > second.fencing_token
        hold = await rw.acquire_write(timeout=5)
        await hold.extend(7)
        await hold.release()
        with pytest.raises(ratelock.LockNotOwned):
            await hold.release()
        assert (await rw.state()).last_fence == hold.fencing_token

    asyncio.run(run())


async def _write_and_release(rw: ratelock.asyncio.ReadWriteLock) -> int:
    async with rw.acquire_write(timeout=10) as hold:
        return hold.fencing_token


async def _waiting_writers(rw: ratelock.asyncio.ReadWriteLock, count: int) -> bool:
    return (await rw.state()).waiting_writers == count


def test_without_writer_preference_async_readers_still_get_in(store_url):
    name = fresh_name("rw")

    async def run() -> None:
        rw = ratelock.asyncio.ReadWriteLock(name, store_url, prefer_writers=False)
        reader = await rw.acquire_read(timeout=5)
        writer = asyncio.create_task(_write_and_release(rw))
        await asyncio.sleep(0.1)
        later = await rw.try_acquire_read()
        assert later is not None and (await rw.state()).waiting_writers == 0
        await later.release()
        await reader.release()
        assert await writer > later.fencing_token

    asyncio.run(run())


def test_sync_and_async_handles_share_the_lock(store_url):
    name = fresh_name("rw")
    sync_rw = ratelock.ReadWriteLock(name, store_url)

    async def run() -> None:
        async_rw = ratelock.asyncio.ReadWriteLock(name, store_url)
        with sync_rw.acquire_write(timeout=5):
            assert await async_rw.try_acquire_read() is None
            assert (await async_rw.state()).writer
        async with async_rw.acquire_read(timeout=5):
            assert sync_rw.try_acquire_write() is None

    asyncio.run(run())


def test_async_lost_signal_when_keys_are_deleted(redis_server):
    fair_name, rw_name = fresh_name("fair"), fresh_name("rw")

    async def run() -> None:
        fair = ratelock.asyncio.FairLock(fair_name, redis_server.url, ttl=0.9)
        with pytest.raises(ratelock.LockLost):
            async with fair:
                delete_key(redis_server.port, f"rl:{{{fair_name}}}:fair")
                assert await fair.wait_lost(timeout=3.0) and fair.lost
        rw = ratelock.asyncio.ReadWriteLock(rw_name, redis_server.url, ttl=0.9)
        hold = await rw.acquire_write(timeout=5)
        delete_key(redis_server.port, f"rl:{{{rw_name}}}:rw-writer")
        assert await hold.wait_lost(timeout=3.0) and hold.lost
        with pytest.raises(ratelock.LockLost):
            await hold.extend(5)
        with pytest.raises(ratelock.LockLost):
            await hold.release()

    asyncio.run(run())
