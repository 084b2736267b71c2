"""The Python side of the cross-language test: reads JSON commands from stdin, one per line, runs them
with the ratelock Python package against the given Redis URL and answers one JSON line each."""

import json
import sys
from typing import Any, Dict

import ratelock

URL = sys.argv[1]
limiter = ratelock.Limiter(URL)
locks: Dict[str, ratelock.DistributedLock] = {}


def run(command: Dict[str, Any]) -> Dict[str, Any]:
    op = command["op"]
    if op == "hit":
        decision = limiter.hit(command["key"], command["rules"])
        return {"allowed": decision.allowed, "remaining": decision.remaining, "rule": decision.rule}
    lock = locks.setdefault(command["name"], ratelock.DistributedLock(command["name"], URL, ttl=10))
    if op == "acquire":
        return {"acquired": lock.acquire(blocking=False), "token": lock.fencing_token}
    if op == "release":
        lock.release()
        return {"released": True}
    raise ValueError(f"unknown op {op!r}")


for line in sys.stdin:
    answer: Dict[str, Any]
    try:
        answer = run(json.loads(line))
    except Exception as error:  # reported to the Node side, which fails the test
        answer = {"error": f"{type(error).__name__}: {error}"}
    print(json.dumps(answer), flush=True)
