"""``ratelock.FairLock``: a distributed lock granted first come, first served across every process, used
like ``threading.Lock`` (``with lock:``, ``acquire``/``release``). The work is done by the Rust core."""

from typing import Optional, Union

from ratelock import _native
from ratelock._holding import Holding
from ratelock._native import Client, FairLockState


class FairLock(Holding[_native.LeaseGuard]):
    """A lock whose waiters are served in the order they started waiting, in any process or language
    that uses the same store and name.

    ``acquire`` queues and waits its turn; ``try_acquire`` never cuts in (it takes the lock only when it
    is free and nobody waits). A waiter renews its place while it waits; a waiter that died loses its
    place after ``waiter_ttl`` seconds. Every grant has its own rising fencing token.

        >>> import ratelock
        >>> payouts = ratelock.FairLock("payouts:doc", ttl=10)
        >>> with payouts:
        ...     payouts.fencing_token > 0, payouts.state().waiting
        (True, 0)
        >>> payouts.try_acquire(), payouts.locked()
        (True, True)
        >>> payouts.release()
    """

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
    ) -> None:
        handle = _native.FairLockHandle(
            name, url, ttl=ttl, waiter_ttl=waiter_ttl, auto_renew=auto_renew, prefix=prefix, timeout=timeout
        )
        super().__init__(handle, ttl)

    def try_acquire(self) -> bool:
        """Takes the lock if it is free and nobody waits for it; ``False`` otherwise (never queues)."""
        return self.acquire(blocking=False)

    def locked(self) -> bool:
        """Whether anyone holds the lock now."""
        return bool(self._handle.is_locked())

    def state(self) -> FairLockState:
        """The lock as it stands: ``held``, ``remaining`` (seconds), ``holder_fence``, ``last_fence`` and
        ``waiting`` (the queue's length)."""
        state: FairLockState = self._handle.state()
        return state

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of this instance's latest hold (``None`` when it holds none)."""
        with self._mutex:
            return self._guards[-1].fencing_token if self._guards else None

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the latest hold is lost or ``timeout`` seconds pass; returns whether it was lost."""
        return self._current().wait_lost(timeout)

    def _give_back(self, guard: _native.LeaseGuard) -> Optional[str]:
        return None if guard.release() else "expired or taken"

    def _renew(self, guard: _native.LeaseGuard, ttl: float) -> Optional[str]:
        return None if guard.extend(ttl) else "expired or was taken"

    def __enter__(self) -> "FairLock":
        self.acquire()
        return self
