"""ratelock: rate limiting and distributed locks on Redis, with one Rust core for every language.

Examples:
    >>> import ratelock
    >>> limiter = ratelock.Limiter()          # no URL: the embedded memory store
    >>> limiter.hit("user:42", "10/second; 1000/hour").allowed
    True

Give a URL (``ratelock.Limiter("redis://localhost")``) to share limits with every process, in any
language, that uses the same Redis. Every limiter and lock naming the same URL shares one connection
per process; to choose the sharing yourself, pass a ``ratelock.Client`` in place of the URL:

Examples:
    >>> client = ratelock.Client()            # a memory store of its own (or a URL: a connection)
    >>> first, second = ratelock.Limiter(client), ratelock.Limiter(client)
    >>> first.hit("user:42", "1/minute").allowed, second.hit("user:42", "1/minute").allowed
    (True, False)
"""

from ratelock._earlier_names import earlier_names
from ratelock._native import (
    Client,
    ConfigurationError,
    CostExceedsCapacity,
    Decision,
    FairLockState,
    InvalidArgument,
    InvalidRule,
    LockLost,
    MAX_KEY_BYTES,
    MAX_RULES,
    ProtocolError,
    LockNotOwned,
    RatelockError,
    RwLockState,
    StoreTimeout,
    StoreUnavailable,
    WaitTimeout,
    __version__,
)
from ratelock.limiter import Limiter, RateLimited
from ratelock.fair_lock import FairLock
from ratelock._hold_stack import LostReason, ReleaseOutcome
from ratelock.lease_guard import LeaseGuard
from ratelock.lock import DistributedLock
from ratelock.rwlock import ReadWriteLock
from ratelock.semaphore import ConcurrencyLimiter, Semaphore

__all__ = [
    "Client",
    "ConcurrencyLimiter",
    "ConfigurationError",
    "CostExceedsCapacity",
    "Decision",
    "DistributedLock",
    "FairLock",
    "FairLockState",
    "LeaseGuard",
    "InvalidArgument",
    "InvalidRule",
    "Limiter",
    "LockLost",
    "LostReason",
    "ProtocolError",
    "LockNotOwned",
    "RateLimited",
    "ReleaseOutcome",
    "RatelockError",
    "ReadWriteLock",
    "RwLockState",
    "Semaphore",
    "StoreTimeout",
    "StoreUnavailable",
    "WaitTimeout",
    "__version__",
    "MAX_KEY_BYTES",
    "MAX_RULES",
]


# `Hold`, the earlier name of `LeaseGuard`, still works for now, with a DeprecationWarning.
__getattr__ = earlier_names(__name__, {"Hold": LeaseGuard})
