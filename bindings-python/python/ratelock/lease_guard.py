"""``ratelock.LeaseGuard``: one hold of a ``ratelock.ReadWriteLock`` (read or write) with its fencing token, the
lost signal, ``extend`` and ``release``, usable as a context manager. The work is done by the Rust core."""

import threading
from typing import Optional

from ratelock import _native
from ratelock._native import LockLost, LockNotOwned, StoreUnavailable


class LeaseGuard:
    """A read or write hold. Leave a ``with`` block (or call ``release()``) to give it back; while it is
    held its lease is renewed in the background. Send ``fencing_token`` with every write it protects.

        >>> import ratelock
        >>> config = ratelock.ReadWriteLock("config:hold-doc")
        >>> with config.acquire_write(timeout=5) as hold:
        ...     hold.fencing_token > 0, hold.lost
        (True, False)

    A hold dropped without being released is given back in the background.
    """

    def __init__(self, guard: _native.LeaseGuard, ttl: float, what: str) -> None:
        self._guard = guard
        self._ttl = ttl
        self._what = what
        self._released = False
        self._mutex = threading.Lock()

    @property
    def fencing_token(self) -> int:
        """The fencing token of this grant: higher than every earlier grant of the same lock."""
        return self._guard.fencing_token

    @property
    def lost(self) -> bool:
        """True once the hold is known lost (its lease ended or its key was deleted)."""
        return self._guard.is_lost()

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the hold is lost or ``timeout`` seconds pass; returns whether it was lost (at
        once for a released hold, which can no longer be lost)."""
        if self._released:
            return self.lost
        return self._guard.wait_lost(timeout)

    def extend(self, ttl: Optional[float] = None) -> None:
        """Moves the end of the lease to ``ttl`` seconds from now (default: the lock's ttl). Never
        re-takes a hold: raises ``LockLost`` if it is gone, ``LockNotOwned`` after ``release``."""
        self._check_held()
        if not self._guard.extend(self._ttl if ttl is None else ttl):
            raise LockLost(f"cannot extend: the {self._what} expired or was taken")

    def release(self) -> None:
        """Gives the hold back. Raises ``LockNotOwned`` if it was released already, and ``LockLost`` if
        it had been lost (nothing is changed then)."""
        with self._mutex:
            self._check_held()
            self._released = True
        try:
            given_back = self._guard.release()
        except StoreUnavailable:
            # The store could not be reached: the hold is still ours, and release can be called again.
            with self._mutex:
                self._released = False
            raise
        if not given_back:
            raise LockLost(f"the {self._what} was lost before release (expired or taken)")

    def _check_held(self) -> None:
        if self._released:
            raise LockNotOwned(f"this {self._what} was released already")

    def __enter__(self) -> "LeaseGuard":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._released else "lost" if self.lost else "held"
        return f"<ratelock.LeaseGuard {self._what} fencing_token={self.fencing_token} {state}>"
