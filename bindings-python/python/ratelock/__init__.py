"""ratelock: rate limiting and distributed locks on Redis, with one Rust core for every language.

    >>> import ratelock
    >>> limiter = ratelock.Limiter()          # no URL: the embedded memory store
    >>> limiter.hit("user:42", "10/second; 1000/hour").allowed
    True

Give a URL (``ratelock.Limiter("redis://localhost")``) to share limits with every process, in any
language, that uses the same Redis.
"""

from ratelock._native import (
    CostExceedsCapacity,
    Decision,
    InvalidArgument,
    InvalidRule,
    LockLost,
    LockNotOwned,
    RatelockError,
    StoreTimeout,
    StoreUnavailable,
    WaitTimeout,
    __version__,
)
from ratelock.limiter import Limiter, RateLimited
from ratelock.lock import DistributedLock
from ratelock.semaphore import ConcurrencyLimiter, Semaphore

__all__ = [
    "ConcurrencyLimiter",
    "CostExceedsCapacity",
    "Decision",
    "DistributedLock",
    "InvalidArgument",
    "InvalidRule",
    "Limiter",
    "LockLost",
    "LockNotOwned",
    "RateLimited",
    "RatelockError",
    "Semaphore",
    "StoreTimeout",
    "StoreUnavailable",
    "WaitTimeout",
    "__version__",
]
