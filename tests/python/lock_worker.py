"""Worker process for the cross-process lock test: takes the lock `rounds` times and appends
(fencing token, entered, left) for each hold to a results queue."""

import time

import ratelock


def contend(url: str, name: str, rounds: int, results) -> None:
    lock = ratelock.DistributedLock(name, url, ttl=10)
    holds = []
    for _ in range(rounds):
        with lock:
            entered = time.time_ns()
            time.sleep(0)
            holds.append((lock.fencing_token, entered, time.time_ns()))
    results.put(holds)
