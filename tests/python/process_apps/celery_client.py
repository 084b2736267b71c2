"""Sends the process-model load to the Celery workers of `celery_app` and prints the outcome as one
JSON line (the same figures as the HTTP models)."""

import json
import sys
import time
from typing import Any, Dict, List, Tuple

from process_apps.celery_app import app

SHARED, OWN, LOCKS = 120, 40, 40


def main(queue: str) -> None:
    # Wait (bounded) until a worker answers.
    deadline = time.monotonic() + 60
    while not app.control.ping(timeout=1.0):
        if time.monotonic() > deadline:
            raise SystemExit("no Celery worker answered within 60 s")
    names = ["ratelock_pm.shared_hit"] * SHARED + ["ratelock_pm.own_burst"] * OWN + ["ratelock_pm.lock_round"] * LOCKS
    started = time.monotonic()
    sent: List[Tuple[str, Any, float]] = [(name, app.send_task(name, queue=queue), time.monotonic()) for name in names]
    results: List[Tuple[str, Dict[str, Any], float]] = []
    for name, result, at in sent:
        body = result.get(timeout=30)
        results.append((name, body, time.monotonic() - at))
    outcome = {
        "requests": len(names),
        "calls": SHARED + OWN * 20 + LOCKS,
        "admitted": sum(1 for name, body, _ in results if name.endswith("shared_hit") and body["allowed"]),
        "failed": [],
        "crossed": [c for name, body, _ in results if name.endswith("own_burst") for c in body["crossed"]],
        "tokens": [body["token"] for name, body, _ in results if name.endswith("lock_round")],
        "workers": len({body["pid"] for _, body, _ in results}),
        "slowest": max(elapsed for _, _, elapsed in results),
        "total_s": time.monotonic() - started,
    }
    print(json.dumps(outcome))


if __name__ == "__main__":
    main(sys.argv[1])
