"""ratelock.FairLock from Python on memory and Redis: first come first served across threads and
processes with rising tokens, tries that never cut in, typed timeouts that leave the queue, and the lost
signal when the lock's key is deleted under its holder."""

import multiprocessing
import threading
import time

import pytest

import ratelock
from fair_lock_worker import take_turn
from polling import delete_key, fresh_name, until

WAITERS = 5


def test_waiting_threads_are_granted_in_arrival_order(store_url):
    name = fresh_name("fair")
    holder = ratelock.FairLock(name, store_url, ttl=10, waiter_ttl=2)
    assert holder.acquire(timeout=5)
    order = []
    mutex = threading.Lock()

    def waiter(arrival: int) -> None:
        mine = ratelock.FairLock(name, store_url, ttl=10, waiter_ttl=2)
        with mine:
            with mutex:
                order.append((arrival, mine.fencing_token))
            time.sleep(0.002)

    threads = []
    for arrival in range(WAITERS):
        thread = threading.Thread(target=waiter, args=(arrival,))
        thread.start()
        threads.append(thread)
        until("the waiter queues", lambda: holder.state().waiting == arrival + 1)

    state = holder.state()
    assert state.held and state.holder_fence == holder.fencing_token and state.waiting == WAITERS
    assert 0 < state.remaining <= 10
    # A try never cuts in: not while the lock is held, nor while it passes from waiter to waiter.
    interloper = ratelock.FairLock(name, store_url)
    assert interloper.try_acquire() is False
    first_token = holder.fencing_token
    holder.release()
    while any(thread.is_alive() for thread in threads):
        if interloper.try_acquire():
            with mutex:
                assert len(order) == WAITERS, f"a try cut in ahead of waiters: {order}"
            interloper.release()
        time.sleep(0.001)
    for thread in threads:
        thread.join()

    assert [arrival for arrival, _ in order] == list(range(WAITERS))
    tokens = [first_token] + [token for _, token in order]
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens), tokens
    assert holder.state().waiting == 0 and not holder.locked()


def test_a_wait_that_times_out_raises_and_leaves_the_queue(store_url):
    name = fresh_name("fair")
    holder = ratelock.FairLock(name, store_url)
    waiter = ratelock.FairLock(name, store_url)
    assert holder.try_acquire() and holder.locked()
    started = time.monotonic()
    with pytest.raises(ratelock.WaitTimeout):
        waiter.acquire(timeout=0.2)
    assert 0.15 < time.monotonic() - started < 2.0
    assert holder.state().waiting == 0, "a waiter that gave up must leave the queue"
    assert waiter.lost is False and waiter.fencing_token is None
    holder.release()
    assert waiter.try_acquire(), "free and nobody waiting: a try takes it"
    waiter.release()
    with pytest.raises(ratelock.LockNotOwned):
        waiter.release()


def test_extend_and_the_lost_signal_when_the_lease_runs_out(store_url):
    lock = ratelock.FairLock(fresh_name("fair"), store_url, ttl=0.15, auto_renew=False)
    assert lock.acquire(timeout=1)
    lock.extend(0.3)
    assert not lock.lost
    assert lock.wait_lost(timeout=2.0), "a lease that is not renewed ends"
    with pytest.raises(ratelock.LockLost):
        lock.extend(5)
    with pytest.raises(ratelock.LockLost):
        lock.release()
    assert not lock.locked()


def test_deleting_the_key_under_a_holder_is_reported_lost(redis_server):
    name = fresh_name("fair")
    lock = ratelock.FairLock(name, redis_server.url, ttl=0.9)
    with pytest.raises(ratelock.LockLost):
        with lock:
            delete_key(redis_server.port, f"rl:{{{name}}}:fair")
            assert lock.wait_lost(timeout=3.0), "the watchdog (every ttl/3) finds it gone"
            assert lock.lost


def test_processes_are_granted_in_arrival_order(redis_server):
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    name = fresh_name("fair")
    holder = ratelock.FairLock(name, redis_server.url, ttl=10)
    assert holder.acquire(timeout=5)
    workers = []
    for arrival in range(4):
        worker = context.Process(target=take_turn, args=(redis_server.url, name, arrival, results))
        worker.start()
        workers.append(worker)
        until("the process queues", lambda: holder.state().waiting == arrival + 1, timeout=60)
    first_token = holder.fencing_token
    holder.release()
    grants = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    assert [arrival for arrival, _ in grants] == [0, 1, 2, 3]
    tokens = [first_token] + [token for _, token in grants]
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens), tokens
