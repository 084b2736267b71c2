"""A Celery app whose worker uses ratelock at import (in the prefork pool's parent) and whose tasks hit
the shared limit, burst on the worker's own rule, and take a lock. Redis (the test's server) is both
the broker and the result backend."""

import os
from typing import Any, Dict, List

from celery import Celery

import ratelock

URL = os.environ["RATELOCK_TEST_URL"]
SHARED_RULE = os.environ.get("RATELOCK_TEST_RULE", "50/minute")
PREFIX = os.environ.get("RATELOCK_TEST_PREFIX", "pm")

app = Celery("ratelock_process_models", broker=URL, backend=URL)
app.conf.task_default_queue = PREFIX
app.conf.broker_connection_retry_on_startup = True

limiter = ratelock.Limiter(URL, prefix=PREFIX)
lock = ratelock.DistributedLock(f"{PREFIX}:lock", url=URL, ttl=10)
limiter.hit("import-time", "1000/minute")
with lock:
    pass


@app.task(name="ratelock_pm.shared_hit")
def shared_hit() -> Dict[str, Any]:
    return {"allowed": limiter.hit("shared", SHARED_RULE).allowed, "pid": os.getpid()}


@app.task(name="ratelock_pm.own_burst")
def own_burst() -> Dict[str, Any]:
    limit = 1000 + os.getpid() % 5000
    crossed: List[str] = []
    for _ in range(20):
        try:
            decision = limiter.hit(f"own:{os.getpid()}", f"{limit}/hour")
            if decision.limit != limit:
                crossed.append(f"limit {decision.limit} for a rule of {limit}")
        except ratelock.RatelockError as error:
            crossed.append(f"{type(error).__name__}: {error}")
    return {"crossed": crossed, "pid": os.getpid()}


@app.task(name="ratelock_pm.lock_round")
def lock_round() -> Dict[str, Any]:
    with lock:
        return {"token": lock.fencing_token, "pid": os.getpid()}
