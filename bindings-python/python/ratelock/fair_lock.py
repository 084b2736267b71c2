"""``ratelock.FairLock``: a distributed lock granted first come, first served across every process, used
like ``threading.Lock`` (``with lock:``, ``acquire``/``release``), and ``FairLockKind``, what it shares
with ``ratelock.asyncio.FairLock``. The work is done by the Rust core."""

from typing import Optional, Union

from ratelock import _native
from ratelock._handle_call import HandleCall
from ratelock._holding import Holding
from ratelock._hold_stack import Fenced
from ratelock._native import Client, FairLockHandle
from ratelock.otel import MetricsRecorder


class FairLockKind(Fenced[_native.LeaseGuard]):
    """A fair lock, sync or asyncio: the constructor, the fencing token of the latest hold, and the
    questions to the store."""

    _handle: FairLockHandle
    _what = "fair lock"

    def __init__(
        self,
        name: Union[str, bytes],
        url: Union[str, Client, None] = None,
        *,
        ttl: float = 30.0,
        waiter_ttl: float = 5.0,
        auto_renew: bool = True,
        prefix: str = "rl",
        timeout: float = 1.0,
        metrics: Optional[MetricsRecorder] = None,
    ) -> None:
        options = _native.LockOptions(
            ttl=ttl, waiter_ttl=waiter_ttl, auto_renew=auto_renew, prefix=prefix, timeout=timeout, metrics=metrics
        )
        super().__init__(FairLockHandle(name, url, options), ttl)

    locked = HandleCall(FairLockHandle.is_locked, FairLockHandle.is_locked_async, "Whether anyone holds the lock now.")
    state = HandleCall(
        FairLockHandle.state,
        FairLockHandle.state_async,
        "The lock as it stands: ``held``, ``remaining`` (seconds), ``holder_fence``, ``last_fence`` and "
        "``waiting`` (the queue's length).",
    )


class FairLock(FairLockKind, Holding[_native.LeaseGuard]):
    """A lock whose waiters are served in the order they started waiting, in any process or language
    that uses the same store and name.

    ``acquire`` queues and waits its turn; ``try_acquire`` never cuts in (it takes the lock only when it
    is free and nobody waits). A waiter renews its place while it waits; a waiter that died loses its
    place after ``waiter_ttl`` seconds. Every grant has its own rising fencing token.

    Examples:
        >>> import ratelock
        >>> payouts = ratelock.FairLock("payouts:doc", ttl=10)
        >>> with payouts:
        ...     payouts.fencing_token > 0, payouts.state().waiting
        (True, 0)
        >>> payouts.try_acquire(), payouts.locked()
        (True, True)
        >>> payouts.release()
        'released'
    """

    def try_acquire(self) -> bool:
        """Takes the lock if it is free and nobody waits for it; ``False`` otherwise (never queues)."""
        return self.acquire(blocking=False)
