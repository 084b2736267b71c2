"""Worker process for the cross-process FairLock test: queues for the lock once, then reports its
arrival number and fencing token on a results queue while it holds the lock."""

import time

import ratelock


def take_turn(url: str, name: str, arrival: int, results) -> None:
    lock = ratelock.FairLock(name, url, ttl=10, waiter_ttl=2)
    with lock:
        results.put((arrival, lock.fencing_token))
        time.sleep(0.01)
