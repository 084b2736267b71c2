"""A short tour of ratelock from Python: multi-rule limiting and a fenced lock. Runs on the embedded
memory store, or on Redis when REDIS_URL is set. Checked with `mypy --strict` by `make test`."""

import os
from typing import Optional

import ratelock


def main() -> None:
    url: Optional[str] = os.environ.get("REDIS_URL")
    limiter = ratelock.Limiter(url)
    for attempt in range(7):
        decision = limiter.hit("user:42", "5/second; 100/hour")
        verdict = "allowed" if decision else f"denied, retry in {decision.retry_after:.3f}s"
        print(f"request {attempt}: {verdict} (remaining {decision.remaining} of {decision.rule})")

    with ratelock.DistributedLock("invoice:42", url, ttl=10) as lock:
        token: Optional[int] = lock.fencing_token
        print(f"holding invoice:42 with fencing token {token}")


if __name__ == "__main__":
    main()
