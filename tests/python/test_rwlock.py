"""ratelock.ReadWriteLock from Python on memory and Redis: readers share and a writer excludes everyone
(with threads), writer preference holds back later readers unless turned off, holds as context
managers with extend/release, typed timeouts, and the lost signal when the writer's key is deleted."""

import threading
import time

import pytest

import ratelock
import ratelock.asyncio
from polling import delete_key, fresh_name, until


def test_readers_share_and_a_writer_excludes_them(store_url):
    name = fresh_name("rw")
    rw = ratelock.ReadWriteLock(name, store_url, ttl=10, waiter_ttl=2)
    together = threading.Barrier(4)
    done = threading.Event()

    def reader() -> None:
        with ratelock.ReadWriteLock(name, store_url, ttl=10, waiter_ttl=2).acquire_read(timeout=5):
            together.wait(timeout=10)
            done.wait(timeout=10)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for thread in readers:
        thread.start()
    together.wait(timeout=10)  # three read holds at the same time
    assert rw.state().readers == 3
    assert rw.try_acquire_write() is None
    with pytest.raises(ratelock.WaitTimeout):
        rw.acquire_write(timeout=0.1)
    assert rw.state().waiting_writers == 0, "a writer that gave up removes its mark"

    done.set()
    for thread in readers:
        thread.join()
    with rw.acquire_write(timeout=5) as writer:
        state = rw.state()
        assert state.writer and state.readers == 0 and state.writer_fence == writer.fencing_token
        assert 0 < state.writer_remaining <= 10
        assert rw.try_acquire_read() is None and rw.try_acquire_write() is None
    assert not rw.state().writer


def test_threads_never_see_a_writer_beside_anyone(store_url):
    name = fresh_name("rw")
    inside = {"readers": 0, "writers": 0}
    writer_tokens = []
    problems = []
    mutex = threading.Lock()

    def enter(side: str, token: int) -> None:
        with mutex:
            inside[side] += 1
            if inside["writers"] > 1 or (inside["writers"] and inside["readers"]):
                problems.append(dict(inside))
            if side == "writers":
                writer_tokens.append(token)

    def leave(side: str) -> None:
        with mutex:
            inside[side] -= 1

    def worker(number: int) -> None:
        rw = ratelock.ReadWriteLock(name, store_url, ttl=10, waiter_ttl=2)
        for round_ in range(8):
            side = "writers" if (number + round_) % 3 == 0 else "readers"
            acquire = rw.acquire_write if side == "writers" else rw.acquire_read
            with acquire(timeout=30) as hold:
                enter(side, hold.fencing_token)
                time.sleep(0.002)
                leave(side)

    threads = [threading.Thread(target=worker, args=(number,)) for number in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert len(writer_tokens) >= 10 and writer_tokens == sorted(writer_tokens), "writer tokens rise"
    assert ratelock.ReadWriteLock(name, store_url).state().readers == 0


def test_a_waiting_writer_holds_back_later_readers(store_url):
    name = fresh_name("rw")
    rw = ratelock.ReadWriteLock(name, store_url, ttl=10, waiter_ttl=2)
    first_reader = rw.acquire_read(timeout=5)
    order = []

    def write() -> None:
        with rw.acquire_write(timeout=10):
            order.append("writer")
            time.sleep(0.05)

    def read() -> None:
        with rw.acquire_read(timeout=10):
            order.append("reader")

    writer = threading.Thread(target=write)
    writer.start()
    until("the writer marks itself waiting", lambda: rw.state().waiting_writers == 1)
    assert rw.try_acquire_read() is None, "a later reader must not get in ahead of the writer"
    late_reader = threading.Thread(target=read)
    late_reader.start()
    time.sleep(0.1)
    assert order == []
    first_reader.release()
    writer.join()
    late_reader.join()
    assert order == ["writer", "reader"]


def test_without_writer_preference_later_readers_still_get_in(store_url):
    name = fresh_name("rw")
    rw = ratelock.ReadWriteLock(name, store_url, ttl=10, prefer_writers=False)
    first_reader = rw.acquire_read(timeout=5)
    granted = []
    writer = threading.Thread(target=lambda: granted.append(rw.acquire_write(timeout=10)))
    writer.start()
    time.sleep(0.1)
    assert rw.state().waiting_writers == 0
    later = rw.try_acquire_read()
    assert later is not None, "without writer preference a waiting writer holds nobody back"
    assert rw.state().readers == 2
    first_reader.release()
    later.release()
    writer.join()
    assert len(granted) == 1 and rw.state().writer
    granted[0].release()


def test_holds_extend_and_release_once(store_url):
    rw = ratelock.ReadWriteLock(fresh_name("rw"), store_url, ttl=5)
    hold = rw.acquire_read()
    hold.extend(8)
    hold.extend()
    assert not hold.lost and "read hold" in repr(hold)
    hold.release()
    with pytest.raises(ratelock.LockNotOwned):
        hold.release()
    with pytest.raises(ratelock.LockNotOwned):
        hold.extend(5)
    with rw.acquire_write() as writer:
        assert writer.fencing_token > hold.fencing_token
    with pytest.raises(ratelock.LockNotOwned):
        writer.release()


def test_a_hold_whose_lease_runs_out_is_lost(store_url):
    rw = ratelock.ReadWriteLock(fresh_name("rw"), store_url, ttl=0.1, auto_renew=False)
    hold = rw.acquire_read()
    assert hold.wait_lost(timeout=2.0) and hold.lost
    with pytest.raises(ratelock.LockLost):
        hold.extend(5)
    with pytest.raises(ratelock.LockLost):
        hold.release()
    assert rw.state().readers == 0


def test_a_dropped_hold_is_given_back(store_url):
    rw = ratelock.ReadWriteLock(fresh_name("rw"), store_url)
    rw.acquire_write()  # not kept: released in the background
    until("the dropped hold is given back", lambda: not rw.state().writer)
    assert rw.try_acquire_write() is not None


def test_deleting_the_writer_key_under_a_holder_is_reported_lost(redis_server):
    name = fresh_name("rw")
    rw = ratelock.ReadWriteLock(name, redis_server.url, ttl=0.9)
    with pytest.raises(ratelock.LockLost):
        with rw.acquire_write(timeout=5) as hold:
            delete_key(redis_server.port, f"rl:{{{name}}}:rw-writer")
            assert hold.wait_lost(timeout=3.0), "the watchdog (every ttl/3) finds it gone"
            assert hold.lost
    assert not rw.state().writer


def test_waiting_for_loss_of_a_released_hold_returns_at_once(store_url):
    hold = ratelock.ReadWriteLock(fresh_name("rw"), store_url).acquire_read()
    hold.release()
    started = time.monotonic()
    assert hold.wait_lost() is False
    assert time.monotonic() - started < 1.0


def test_hold_is_the_deprecated_name_of_lease_guard():
    with pytest.warns(DeprecationWarning, match="LeaseGuard"):
        assert ratelock.Hold is ratelock.LeaseGuard
    with pytest.warns(DeprecationWarning, match="LeaseGuard"):
        assert ratelock.asyncio.Hold is ratelock.asyncio.LeaseGuard


def test_a_hold_dropped_while_held_warns_as_an_unclosed_file_does(store_url):
    # A bare rw.acquire_write() (Redisson's lock() ... unlock()) is given back at once: the work after
    # it ran unprotected, without a word.
    import gc
    import warnings

    rw = ratelock.ReadWriteLock(fresh_name("rw"), store_url)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rw.acquire_write(timeout=1)
        gc.collect()
        with rw.acquire_read(timeout=1):
            pass
        rw.try_acquire_write().release()
        gc.collect()
    dropped = [w for w in seen if issubclass(w.category, ResourceWarning)]
    assert len(dropped) == 1, [str(w.message) for w in seen]
    assert "dropped while held" in str(dropped[0].message)


def test_read_write_timeouts_read_as_the_other_locks_read_them(store_url):
    # The other lock kinds take timeout=-1 (no limit) and timeout=0 (one try, then WaitTimeout); the
    # read-write lock refused both.
    import asyncio

    rw = ratelock.ReadWriteLock(fresh_name("rw"), store_url)
    with rw.acquire_write(timeout=-1):
        with pytest.raises(ratelock.WaitTimeout, match="gave up waiting after"):
            rw.acquire_read(timeout=0)
    with rw.acquire_read(timeout=0), rw.acquire_read(timeout=-1):
        with pytest.raises(ratelock.WaitTimeout):
            rw.acquire_write(timeout=0)

    async def asynchronous() -> None:
        shared = ratelock.asyncio.ReadWriteLock(fresh_name("rw"), store_url)
        async with shared.acquire_write(timeout=-1):
            with pytest.raises(ratelock.WaitTimeout):
                await shared.acquire_read(timeout=0)
        async with shared.acquire_read(timeout=0):
            pass

    asyncio.run(asynchronous())
