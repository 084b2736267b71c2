"""``ratelock.DistributedLock``: a distributed lock with fencing tokens and a lost-lock signal, used like
``threading.Lock`` (``with lock:``, ``acquire``/``release``). The work is done by the Rust core."""

from typing import Optional, Union

from ratelock import _native
from ratelock._native import Client
from ratelock._holding import Holding


class DistributedLock(Holding[_native.LockGuard]):
    """A lock shared by every process (in any language) that uses the same store and name.

    Each instance has its own owner token. ``with lock:`` acquires (waiting as long as needed), keeps
    the lease renewed while the block runs, and releases at the end — raising ``LockLost`` if the lock
    was lost meanwhile. Send ``lock.fencing_token`` with every write to the protected resource.

        >>> import ratelock
        >>> with ratelock.DistributedLock("orders:42", ttl=10) as lock:
        ...     token = lock.fencing_token
        >>> token is not None and token > 0
        True
    """

    _what = "lock"

    def __init__(
        self,
        name: Union[str, bytes],
        url: Union[str, Client, None] = None,
        *,
        ttl: float = 30.0,
        auto_renew: bool = True,
        reentrant: bool = False,
        prefix: str = "rl",
        timeout: float = 1.0,
    ) -> None:
        handle = _native.LockHandle(
            name, url, ttl=ttl, auto_renew=auto_renew, reentrant=reentrant, prefix=prefix, timeout=timeout
        )
        super().__init__(handle, ttl)

    def locked(self) -> bool:
        """Whether anyone holds the lock now."""
        return bool(self._handle.is_locked())

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of this instance's hold (``None`` when it holds none)."""
        with self._mutex:
            return self._guards[-1].fencing_token if self._guards else None

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the hold is lost or ``timeout`` seconds pass; returns whether it was lost."""
        return self._current().wait_lost(timeout)

    def remaining_ttl(self) -> Optional[float]:
        """Seconds left on the current lease (whoever holds it), ``None`` when free."""
        result: Optional[float] = self._handle.remaining_ttl()
        return result

    def force_release(self) -> bool:
        """Deletes the lease whoever holds it (an operator's tool); ``True`` if it was held."""
        return bool(self._handle.force_release())

    @property
    def owner_token(self) -> str:
        return str(self._handle.owner_token)

    def _give_back(self, guard: _native.LockGuard) -> Optional[str]:
        outcome = guard.release()
        return outcome.replace("_", " ") if outcome in ("not_held", "held_by_other") else None

    def _renew(self, guard: _native.LockGuard, ttl: float) -> Optional[str]:
        outcome = guard.extend(ttl)
        return None if outcome == "extended" else outcome.replace("_", " ")

    def __enter__(self) -> "DistributedLock":
        self.acquire()
        return self
