"""multiprocessing (fork, forkserver, spawn) and raw os.fork after the parent used ratelock: the parent
holds a lock and keeps hitting its own rule while 4 children hit the shared limit, burst on their own
rules, take another lock, and try to release the parent's lock. Prints the outcome as one JSON line."""

import json
import multiprocessing
import os
import sys
import threading
import time
from typing import Any, Dict, List

import ratelock

URL = os.environ["RATELOCK_TEST_URL"]
SHARED_RULE = os.environ.get("RATELOCK_TEST_RULE", "50/minute")
PREFIX = os.environ.get("RATELOCK_TEST_PREFIX", "pm")
CHILDREN, SHARED_EACH, OWN_EACH, LOCKS_EACH = 4, 30, 200, 10

limiter = ratelock.Limiter(URL, prefix=PREFIX)
held = ratelock.DistributedLock(f"{PREFIX}:held", url=URL, ttl=30)
work_lock = ratelock.DistributedLock(f"{PREFIX}:lock", url=URL, ttl=10)


def child_work(index: int) -> Dict[str, Any]:
    started = time.monotonic()
    slowest = 0.0
    limit = 2000 + index
    crossed: List[str] = []
    admitted, tokens = 0, []
    for _ in range(SHARED_EACH):
        at = time.monotonic()
        admitted += limiter.hit("shared", SHARED_RULE).allowed
        slowest = max(slowest, time.monotonic() - at)
    for _ in range(OWN_EACH):
        try:
            decision = limiter.hit(f"own:{index}", f"{limit}/hour")
            if decision.limit != limit:
                crossed.append(f"limit {decision.limit} for a rule of {limit}")
        except ratelock.RatelockError as error:
            crossed.append(f"{type(error).__name__}: {error}")
    for _ in range(LOCKS_EACH):
        with work_lock:
            tokens.append(work_lock.fencing_token)
    try:
        held.release()
        refused = False
    except ratelock.LockNotOwned:
        refused = True
    return {"admitted": admitted, "crossed": crossed, "tokens": tokens, "refused": refused,
            "slowest": slowest, "elapsed": time.monotonic() - started, "pid": os.getpid()}


def child_main(index: int, queue: "multiprocessing.Queue[Dict[str, Any]]") -> None:
    queue.put(child_work(index))


def parent_hits(stop: threading.Event, crossed: List[str]) -> None:
    while not stop.is_set():
        try:
            decision = limiter.hit("own:parent", "999/hour")
            if decision.limit != 999:
                crossed.append(f"parent: limit {decision.limit} for a rule of 999")
        except ratelock.RatelockError as error:
            crossed.append(f"parent: {type(error).__name__}: {error}")
        time.sleep(0.0005)


def run(method: str) -> Dict[str, Any]:
    limiter.hit("before-fork", "1000/minute")
    held.acquire()
    parent_crossed: List[str] = []
    stop = threading.Event()
    hitting = threading.Thread(target=parent_hits, args=(stop, parent_crossed))
    results: List[Dict[str, Any]] = []
    if method == "os.fork":
        hitting.start()
        pipes = []
        for index in range(CHILDREN):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                try:
                    payload = json.dumps(child_work(index)).encode()
                finally:
                    pass
                os.write(write, payload)
                os._exit(0)
            os.close(write)
            pipes.append((pid, read))
        for pid, read in pipes:
            chunks = []
            while True:
                chunk = os.read(read, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
            os.close(read)
            os.waitpid(pid, 0)
            results.append(json.loads(b"".join(chunks)))
    else:
        context = multiprocessing.get_context(method)
        queue = context.Queue()
        processes = [context.Process(target=child_main, args=(i, queue)) for i in range(CHILDREN)]
        hitting.start()
        for process in processes:
            process.start()
        results = [queue.get(timeout=60) for _ in processes]
        for process in processes:
            process.join(timeout=30)
    stop.set()
    hitting.join()
    parent_lock_kept = held.lost is False and held.fencing_token is not None
    held.release()  # the parent's lock is still the parent's to release
    tokens = [token for result in results for token in result["tokens"]]
    return {
        "requests": CHILDREN * (SHARED_EACH + OWN_EACH + LOCKS_EACH),
        "calls": CHILDREN * (SHARED_EACH + OWN_EACH + LOCKS_EACH),
        "admitted": sum(result["admitted"] for result in results),
        "failed": [],
        "crossed": parent_crossed + [c for result in results for c in result["crossed"]],
        "tokens": tokens,
        "workers": len({result["pid"] for result in results}),
        "slowest": max(result["slowest"] for result in results),
        "children": CHILDREN,
        "children_refused": sum(1 for result in results if result["refused"]),
        "parent_lock_kept": parent_lock_kept,
    }


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1])))
