"""The Python side of the cross-language test: reads JSON commands from stdin, one per line, runs them
with the ratelock Python package against the given Redis URL and answers one JSON line each."""

import json
import sys
from typing import Any, Dict

import ratelock

URL = sys.argv[1]
limiter = ratelock.Limiter(URL)
locks: Dict[str, ratelock.DistributedLock] = {}
fair_locks: Dict[str, ratelock.FairLock] = {}
reads: Dict[str, ratelock.Hold] = {}


def run(command: Dict[str, Any]) -> Dict[str, Any]:
    op = command["op"]
    if op == "hit":
        decision = limiter.hit(command["key"], command["rules"])
        return {
            "allowed": decision.allowed,
            "limit": decision.limit,
            "remaining": decision.remaining,
            "rule": decision.rule,
            "reason": decision.reason,
            "would_deny": decision.would_deny,
        }
    if op in ("block", "deny", "allow"):
        getattr(limiter, op)(command["key"], command["seconds"])
        return {"changed": True}
    if op in ("unblock", "clear"):
        return {"changed": getattr(limiter, op)(command["key"])}
    if op == "set_override":
        limiter.set_override(command["key"], command["rules"])
        return {"changed": True}
    if op == "clear_override":
        return {"changed": limiter.clear_override(command["key"])}
    name = command["name"]
    if op == "fair_acquire":
        fair = fair_locks.setdefault(name, ratelock.FairLock(name, URL, ttl=10))
        return {"acquired": fair.acquire(timeout=10), "token": fair.fencing_token}
    if op == "fair_release":
        fair_locks[name].release()
        return {"released": True}
    if op == "try_read":
        hold = ratelock.ReadWriteLock(name, URL, ttl=10).try_acquire_read()
        if hold is not None:
            reads[name] = hold
        return {"acquired": hold is not None, "token": hold.fencing_token if hold else None}
    if op == "release_read":
        reads.pop(name).release()
        return {"released": True}
    lock = locks.setdefault(name, ratelock.DistributedLock(name, URL, ttl=10))
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
