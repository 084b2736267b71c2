"""What ``DistributedLock`` and ``Semaphore`` share: threading-style ``acquire``/``release`` over a native
handle, a stack of this instance's holds, ``with`` support, and the exceptions at release."""

import threading
from typing import Any, Generic, List, Optional, TypeVar

from ratelock._native import LockLost, LockNotOwned, StoreUnavailable

G = TypeVar("G")


class Holding(Generic[G]):
    """Base of the Python lock classes; subclasses say how a guard is given back and renewed."""

    _what = "lock"

    def __init__(self, handle: Any, ttl: float) -> None:
        self._handle = handle
        self._ttl = ttl
        self._guards: List[G] = []
        self._mutex = threading.Lock()

    def acquire(self, timeout: Optional[float] = None, blocking: bool = True) -> bool:
        """Takes a hold. Non-blocking: ``False`` if none is free. Blocking: waits up to ``timeout``
        seconds (``None``: no limit) and raises ``WaitTimeout`` when that passes."""
        if blocking:
            guard = self._handle.acquire(timeout)
        else:
            guard = self._handle.try_acquire()
            if guard is None:
                return False
        with self._mutex:
            self._guards.append(guard)
        return True

    def release(self) -> None:
        """Gives back this instance's latest hold. Raises ``LockNotOwned`` if it holds none, and
        ``LockLost`` if the hold had been lost (nothing is changed then). If the store cannot be
        reached, ``StoreUnavailable`` is raised and the hold stays this instance's: call again."""
        with self._mutex:
            if not self._guards:
                raise LockNotOwned(f"release of a {self._what} this instance does not hold")
            guard = self._guards.pop()
        try:
            problem = self._give_back(guard)
        except StoreUnavailable:
            with self._mutex:
                self._guards.append(guard)
            raise
        if problem is not None:
            raise LockLost(f"the {self._what} was lost before release ({problem})")

    def extend(self, ttl: Optional[float] = None) -> None:
        """Moves the end of the latest hold's lease to ``ttl`` seconds from now (default: the ttl).
        Never re-acquires: raises ``LockLost`` if the hold expired or was taken."""
        problem = self._renew(self._current(), self._ttl if ttl is None else ttl)
        if problem is not None:
            raise LockLost(f"cannot extend: the {self._what} {problem}")

    @property
    def lost(self) -> bool:
        """True once the latest hold is known lost."""
        with self._mutex:
            return bool(self._guards) and bool(self._guards[-1].is_lost())  # type: ignore[attr-defined]

    def _current(self) -> G:
        with self._mutex:
            if not self._guards:
                raise LockNotOwned(f"this instance holds no {self._what}")
            return self._guards[-1]

    def _give_back(self, guard: G) -> Optional[str]:
        """Releases `guard`; returns what went wrong, or ``None``."""
        raise NotImplementedError

    def _renew(self, guard: G, ttl: float) -> Optional[str]:
        """Extends `guard`; returns what went wrong, or ``None``."""
        raise NotImplementedError

    def __exit__(self, *exc_info: object) -> None:
        self.release()
