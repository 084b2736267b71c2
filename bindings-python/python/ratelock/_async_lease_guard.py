"""``ratelock.asyncio.LeaseGuard``: one hold of a ``ratelock.asyncio.ReadWriteLock`` for asyncio code, and
``Acquiring``, what ``acquire_read``/``acquire_write`` return: awaitable (to a ``LeaseGuard``) and usable
directly in ``async with``."""

from typing import Any, Awaitable, Callable, Generator, Optional

from ratelock import _native
from ratelock._native import LockLost, LockNotOwned, StoreUnavailable


class LeaseGuard:
    """A read or write hold, as ``ratelock.LeaseGuard`` but with awaitable ``release``, ``extend`` and
    ``wait_lost``, and ``async with``.

        >>> import asyncio, ratelock.asyncio
        >>> async def main() -> bool:
        ...     config = ratelock.asyncio.ReadWriteLock("config:async-hold-doc")
        ...     hold = await config.acquire_read(timeout=5)
        ...     async with hold:
        ...         return hold.fencing_token > 0 and not hold.lost
        >>> asyncio.run(main())
        True
    """

    def __init__(self, guard: _native.LeaseGuard, ttl: float, what: str) -> None:
        self._guard = guard
        self._ttl = ttl
        self._what = what
        self._released = False

    @property
    def fencing_token(self) -> int:
        """The fencing token of this grant: higher than every earlier grant of the same lock."""
        return self._guard.fencing_token

    @property
    def lost(self) -> bool:
        """True once the hold is known lost (its lease ended or its key was deleted)."""
        return self._guard.is_lost()

    async def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Waits until the hold is lost or ``timeout`` seconds pass; returns whether it was lost (at
        once for a released hold, which can no longer be lost)."""
        if self._released:
            return self.lost
        return await self._guard.wait_lost_async(timeout)

    async def extend(self, ttl: Optional[float] = None) -> None:
        """Moves the end of the lease to ``ttl`` seconds from now (default: the lock's ttl); raises
        ``LockLost`` if the hold is gone (never re-takes it), ``LockNotOwned`` after ``release``."""
        self._check_held()
        if not await self._guard.extend_async(self._ttl if ttl is None else ttl):
            raise LockLost(f"cannot extend: the {self._what} expired or was taken")

    async def release(self) -> None:
        """Gives the hold back; ``LockNotOwned`` if released already, ``LockLost`` if it had been lost."""
        self._check_held()
        self._released = True
        try:
            given_back = await self._guard.release_async()
        except StoreUnavailable:
            # The store could not be reached: the hold is still ours, and release can be called again.
            self._released = False
            raise
        if not given_back:
            raise LockLost(f"the {self._what} was lost before release (expired or taken)")

    def _check_held(self) -> None:
        if self._released:
            raise LockNotOwned(f"this {self._what} was released already")

    async def __aenter__(self) -> "LeaseGuard":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()

    def __repr__(self) -> str:
        state = "released" if self._released else "lost" if self.lost else "held"
        return f"<ratelock.asyncio.LeaseGuard {self._what} fencing_token={self.fencing_token} {state}>"


class Acquiring(Awaitable[LeaseGuard]):
    """A hold being acquired: ``await`` it for the ``LeaseGuard``, or use it in ``async with`` (which releases
    the hold at the end of the block)."""

    def __init__(self, acquire: Callable[[], Awaitable[LeaseGuard]]) -> None:
        self._acquire = acquire
        self._hold: Optional[LeaseGuard] = None

    def __await__(self) -> Generator[Any, None, LeaseGuard]:
        return self._acquire().__await__()

    async def __aenter__(self) -> LeaseGuard:
        self._hold = await self._acquire()
        return self._hold

    async def __aexit__(self, *exc_info: object) -> None:
        if self._hold is not None:
            await self._hold.release()
