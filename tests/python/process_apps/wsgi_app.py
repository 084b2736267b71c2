"""A WSGI app for gunicorn and uWSGI. At import (in the master, before the fork when preloaded) it makes
one hit and takes and releases one lock, so the workers inherit a store in use. Routes:
- ``/shared``: one hit of the shared rule on the shared key (200 allowed, 429 denied);
- ``/own``: a burst of hits on this worker's own key with its own rule; answers how many decisions
  carried another rule's limit (a crossed reply) or failed;
- ``/lock``: takes and releases this app's lock, answering the fencing token."""

import json
import os
from typing import Any, Callable, Dict, Iterable, List, Tuple

import ratelock

URL = os.environ["RATELOCK_TEST_URL"]
SHARED_RULE = os.environ.get("RATELOCK_TEST_RULE", "50/minute")
PREFIX = os.environ.get("RATELOCK_TEST_PREFIX", "pm")

limiter = ratelock.Limiter(URL, prefix=PREFIX)
lock = ratelock.DistributedLock(f"{PREFIX}:lock", url=URL, ttl=10)
limiter.hit("import-time", "1000/minute")
with lock:
    pass


def own_rule() -> Tuple[str, int]:
    limit = 1000 + os.getpid() % 5000
    return f"{limit}/hour", limit


def answer(start_response: Callable[..., Any], status: str, body: Dict[str, Any]) -> Iterable[bytes]:
    payload = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    return [payload]


def app(environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    path = environ.get("PATH_INFO", "")
    if path == "/shared":
        decision = limiter.hit("shared", SHARED_RULE)
        return answer(start_response, "200 OK" if decision.allowed else "429 Too Many Requests",
                      {"allowed": decision.allowed, "pid": os.getpid()})
    if path == "/own":
        rule, limit = own_rule()
        crossed: List[str] = []
        for _ in range(20):
            try:
                decision = limiter.hit(f"own:{os.getpid()}", rule)
                if decision.limit != limit:
                    crossed.append(f"limit {decision.limit} for a rule of {limit}")
            except ratelock.RatelockError as error:
                crossed.append(f"{type(error).__name__}: {error}")
        return answer(start_response, "200 OK", {"calls": 20, "crossed": crossed, "pid": os.getpid()})
    if path == "/lock":
        with lock:
            token = lock.fencing_token
        return answer(start_response, "200 OK", {"token": token, "pid": os.getpid()})
    return answer(start_response, "404 Not Found", {})
