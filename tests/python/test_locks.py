"""DistributedLock from Python: exclusion and rising fencing tokens, threading-style acquire, typed
errors with real causes, the lost signal, and mutual exclusion across processes on Redis."""

import multiprocessing
import time
import uuid

import pytest

import ratelock
from lock_worker import contend


def fresh_name() -> str:
    return f"lock:{uuid.uuid4().hex}"


def test_with_block_holds_the_lock_and_tokens_rise(store_url):
    name = fresh_name()
    other = ratelock.DistributedLock(name, store_url)
    tokens = []
    for _ in range(3):
        with ratelock.DistributedLock(name, store_url, ttl=5) as lock:
            tokens.append(lock.fencing_token)
            assert lock.locked()
            assert other.acquire(blocking=False) is False
        assert not other.locked()
    assert tokens == sorted(tokens) and len(set(tokens)) == 3


def test_waiting_ends_in_a_typed_timeout(store_url):
    name = fresh_name()
    holder = ratelock.DistributedLock(name, store_url)
    waiter = ratelock.DistributedLock(name, store_url)
    assert holder.acquire()
    started = time.monotonic()
    with pytest.raises(ratelock.WaitTimeout):
        waiter.acquire(timeout=0.2)
    assert 0.15 < time.monotonic() - started < 1.0
    holder.release()
    assert waiter.acquire(timeout=1.0)
    waiter.release()


def test_release_without_holding_is_lock_not_owned(store_url):
    lock = ratelock.DistributedLock(fresh_name(), store_url)
    with pytest.raises(ratelock.LockNotOwned):
        lock.release()
    with pytest.raises(ratelock.LockNotOwned):
        lock.extend()


def test_a_forcibly_deleted_lock_is_reported_lost_and_release_raises(store_url):
    lock = ratelock.DistributedLock(fresh_name(), store_url, ttl=0.9)
    with pytest.raises(ratelock.LockLost):
        with lock:
            assert lock.force_release()
            assert lock.wait_lost(timeout=0.3 + 0.2), "lost signal within ttl/3"
            assert lock.lost
            assert lock.lost_reason == "taken" and lock.lost_error is None


def test_extend_never_reacquires(store_url):
    lock = ratelock.DistributedLock(fresh_name(), store_url, ttl=0.1, auto_renew=False)
    assert lock.acquire()
    time.sleep(0.2)
    assert lock.lost_reason == "expired"
    with pytest.raises(ratelock.LockLost):
        lock.extend(5)
    assert not lock.locked()


def test_a_release_that_finds_the_hold_lost_leaves_why_to_read(store_url):
    # A lock's release takes its hold off this instance; when it raises LockLost, the instance still
    # says how the hold was lost, until it takes another.
    lock = ratelock.DistributedLock(fresh_name(), store_url, ttl=0.1, auto_renew=False)
    assert lock.acquire()
    time.sleep(0.2)
    with pytest.raises(ratelock.LockLost):
        lock.release()
    assert lock.lost and lock.lost_reason == "expired" and lock.lost_error is None
    # Waiting for the loss of a hold already found lost answers at once (it raised LockNotOwned).
    assert lock.wait_lost(5) is True
    assert lock.acquire()
    assert not lock.lost and lock.lost_reason is None
    assert lock.release() == "released"


def test_bad_lock_arguments_are_typed_errors():
    with pytest.raises(ratelock.InvalidArgument, match="ttl"):
        ratelock.DistributedLock("x", ttl=0.001)
    with pytest.raises(ratelock.InvalidArgument, match="`name`"):
        ratelock.DistributedLock(None)
    with pytest.raises(ratelock.InvalidArgument, match="timeout"):
        ratelock.DistributedLock("x").acquire(timeout=float("nan"))


def test_processes_never_hold_the_lock_together(redis_server):
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    name = fresh_name()
    workers = [context.Process(target=contend, args=(redis_server.url, name, 50, results)) for _ in range(4)]
    for worker in workers:
        worker.start()
    holds = [hold for _ in workers for hold in results.get(timeout=60)]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    assert len(holds) == 200
    holds.sort(key=lambda hold: hold[1])
    for (token_a, _, left_a), (token_b, entered_b, _) in zip(holds, holds[1:]):
        assert entered_b >= left_a, "two holders at once"
        assert token_b > token_a, "fencing tokens must rise"


def test_release_says_what_it_did_and_a_hold_found_gone_says_how_it_was_lost(store_url):
    lock = ratelock.DistributedLock(fresh_name(), store_url, reentrant=True)
    assert lock.acquire() and lock.acquire()
    assert lock.release() == "still_held"
    assert lock.release() == "released"
    rw = ratelock.ReadWriteLock(fresh_name(), store_url, ttl=0.1, auto_renew=False)
    hold = rw.acquire_write(timeout=1)
    time.sleep(0.2)
    with pytest.raises(ratelock.LockLost):
        hold.release()
    assert hold.lost_reason == "expired"
    assert rw.acquire_read(timeout=1).release() == "released"


def test_a_reentrant_lock_is_reentered_by_the_thread_or_task_that_holds_it_alone(store_url):
    # One owner token per instance let a second thread (or task) re-enter the first one's hold: both
    # were inside the lock at once.
    import asyncio
    import threading

    import ratelock.asyncio as aio

    lock = ratelock.DistributedLock(fresh_name(), store_url, reentrant=True, ttl=5)
    assert lock.acquire() and lock.acquire(), "the holder re-enters"
    seen = []
    other = threading.Thread(target=lambda: seen.append(lock.acquire(blocking=False)))
    other.start()
    other.join()
    assert seen == [False], "another thread waits, as another process would"
    assert lock.release() == "still_held" and lock.release() == "released"
    taken = threading.Thread(target=lambda: seen.append(lock.acquire(timeout=2) and lock.release()))
    taken.start()
    taken.join()
    assert seen == [False, "released"], "free again: another thread takes it"
    assert lock._own_handles == {}, "no handle is kept for threads that hold nothing"

    async def tasks() -> list:
        shared = aio.DistributedLock(fresh_name(), store_url, reentrant=True, ttl=5)
        inside = []

        async def enter(who: str) -> None:
            async with shared:
                async with shared:
                    inside.append(who)
                    assert len(inside) == 1, f"two tasks inside at once: {inside}"
                    await asyncio.sleep(0.05)
                    inside.remove(who)

        await asyncio.gather(enter("a"), enter("b"))
        return [await shared.locked(), len(shared._own_handles)]

    assert asyncio.run(tasks()) == [False, 0]


def test_acquire_timeouts_read_as_threading_reads_them(store_url):
    name = fresh_name()
    holder = ratelock.DistributedLock(name, store_url)
    other = ratelock.DistributedLock(name, store_url)
    assert other.acquire(timeout=0) is True, "0: one try, which the free lock grants"
    other.release()
    assert holder.acquire(timeout=-1) is True, "-1: no limit"
    with pytest.raises(ratelock.WaitTimeout, match="gave up waiting after"):
        other.acquire(timeout=0)  # a wait that ends at once, as any wait that ran out
    slots = ratelock.ConcurrencyLimiter(1, store_url)
    with slots.slot("k"):
        with pytest.raises(ratelock.WaitTimeout):
            slots.slot("k", timeout=0)  # a slot handed back unheld would run past the limit
    holder.release()
    assert other.acquire(True, -1) is True, "threading's order: blocking, with no limit"
    other.release()
    with pytest.raises(ratelock.InvalidArgument, match="`name`"):
        ratelock.DistributedLock(42, store_url)  # type: ignore[arg-type]
    with pytest.raises(ratelock.InvalidArgument, match="`name`"):
        ratelock.Semaphore(42, 2, store_url)  # type: ignore[arg-type]
