"""``ratelock.DistributedLock``: a distributed lock with fencing tokens and a lost-lock signal, used like
``threading.Lock`` (``with lock:``, ``acquire``/``release``). The work is done by the Rust core."""

import threading
from typing import List, Optional, Union

from ratelock import _native
from ratelock._native import LockLost, LockNotOwned


class DistributedLock:
    """A lock shared by every process (in any language) that uses the same store and name.

    Each instance has its own owner token. ``with lock:`` acquires (waiting as long as needed), keeps
    the lease renewed while the block runs, and releases at the end — raising ``LockLost`` if the lock
    was lost meanwhile. Send ``lock.fencing_token`` with every write to the protected resource.

        >>> import ratelock
        >>> with ratelock.DistributedLock("orders:42", ttl=10) as lock:
        ...     token = lock.fencing_token
        >>> token > 0
        True
    """

    def __init__(
        self,
        name: Union[str, bytes],
        url: Optional[str] = None,
        *,
        ttl: float = 30.0,
        auto_renew: bool = True,
        reentrant: bool = False,
        prefix: str = "rl",
        timeout: float = 1.0,
    ) -> None:
        self._handle = _native.LockHandle(
            name, url, ttl=ttl, auto_renew=auto_renew, reentrant=reentrant, prefix=prefix, timeout=timeout
        )
        self._ttl = ttl
        self._guards: List[_native.LockGuard] = []
        self._mutex = threading.Lock()

    def acquire(self, timeout: Optional[float] = None, blocking: bool = True) -> bool:
        """Takes the lock. Non-blocking: ``False`` if it is held elsewhere. Blocking: waits up to
        ``timeout`` seconds (``None``: no limit) and raises ``WaitTimeout`` when that passes."""
        if blocking:
            guard = self._handle.acquire(timeout)
        else:
            found = self._handle.try_acquire()
            if found is None:
                return False
            guard = found
        with self._mutex:
            self._guards.append(guard)
        return True

    def release(self) -> None:
        """Gives back this instance's latest hold. Raises ``LockNotOwned`` if it holds none, and
        ``LockLost`` if the lock had been lost (nothing is changed then)."""
        with self._mutex:
            if not self._guards:
                raise LockNotOwned("release of a lock this DistributedLock does not hold")
            guard = self._guards.pop()
        outcome = guard.release()
        if outcome in ("not_held", "held_by_other"):
            raise LockLost(f"the lock was lost before release ({outcome.replace('_', ' ')})")

    def extend(self, ttl: Optional[float] = None) -> None:
        """Moves the end of the lease to ``ttl`` seconds from now (default: the lock's ttl). Never
        re-acquires: raises ``LockLost`` if the lock expired or was taken."""
        guard = self._current()
        outcome = guard.extend(self._ttl if ttl is None else ttl)
        if outcome != "extended":
            raise LockLost(f"cannot extend: the lock {outcome.replace('_', ' ')}")

    def locked(self) -> bool:
        """Whether anyone holds the lock now."""
        return self._handle.is_locked()

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of this instance's hold (``None`` when it holds none)."""
        with self._mutex:
            return self._guards[-1].fencing_token if self._guards else None

    @property
    def lost(self) -> bool:
        """True once this instance's hold is known lost (renewal found it gone or taken)."""
        with self._mutex:
            return bool(self._guards) and self._guards[-1].is_lost()

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the hold is lost or ``timeout`` seconds pass; returns whether it was lost."""
        return self._current().wait_lost(timeout)

    def remaining_ttl(self) -> Optional[float]:
        """Seconds left on the current lease (whoever holds it), ``None`` when free."""
        return self._handle.remaining_ttl()

    def force_release(self) -> bool:
        """Deletes the lease whoever holds it (an operator's tool); ``True`` if it was held."""
        return self._handle.force_release()

    @property
    def owner_token(self) -> str:
        return self._handle.owner_token

    def _current(self) -> "_native.LockGuard":
        with self._mutex:
            if not self._guards:
                raise LockNotOwned("this DistributedLock holds no lock")
            return self._guards[-1]

    def __enter__(self) -> "DistributedLock":
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
