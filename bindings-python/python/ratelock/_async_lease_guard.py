"""``ratelock.asyncio.LeaseGuard``: one hold of a ``ratelock.asyncio.ReadWriteLock`` for asyncio code, and
``Acquiring``, what ``acquire_read``/``acquire_write`` return: awaitable (to a ``LeaseGuard``) and usable
directly in ``async with``."""

from typing import Any, Awaitable, Callable, Generator, Optional

from ratelock import _native
from ratelock._hold_stack import ReleaseOutcome
from ratelock.lease_guard import LeaseGuardBase
from ratelock._interrupted import release_at_exit_async


class LeaseGuard(LeaseGuardBase):
    """A read or write hold, as ``ratelock.LeaseGuard`` but with awaitable ``release``, ``extend`` and
    ``wait_lost``, and ``async with``.

    Examples:
        >>> import asyncio, ratelock.asyncio
        >>> async def main() -> bool:
        ...     config = ratelock.asyncio.ReadWriteLock("config:async-hold-doc")
        ...     hold = await config.acquire_read(timeout=5)
        ...     async with hold:
        ...         return hold.fencing_token > 0 and not hold.lost
        >>> asyncio.run(main())
        True
    """

    _shown_as = "ratelock.asyncio.LeaseGuard"

    async def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Waits until the hold is lost or ``timeout`` seconds pass; returns whether it was lost (at
        once for a released hold, which can no longer be lost)."""
        return await self._guard.wait_lost_async(timeout)

    async def extend(self, ttl: Optional[float] = None) -> None:
        """Moves the end of the lease to ``ttl`` seconds from now (default: the lock's ttl); raises
        ``LockLost`` if the hold is gone (never re-takes it), ``LockNotOwned`` after ``release``."""
        await self._guard.extend_async(self._lease(ttl))

    async def release(self) -> ReleaseOutcome:
        """Gives the hold back (``"released"``); ``LockNotOwned`` if released already, ``LockLost`` if it
        had been lost."""
        return await self._guard.release_async()

    async def __aenter__(self) -> "LeaseGuard":
        return self

    async def __aexit__(self, kind: object, ending: Optional[BaseException], trace: object) -> None:
        await release_at_exit_async(self.release, ending)


class Acquiring(Awaitable[LeaseGuard]):
    """A hold being acquired: ``await`` it for the ``LeaseGuard``, or use it in ``async with`` (which releases
    the hold at the end of the block)."""

    def __init__(self, acquire: Callable[[], Awaitable[_native.LeaseGuard]], ttl: float) -> None:
        self._acquire = acquire
        self._ttl = ttl
        self._hold: Optional[LeaseGuard] = None

    async def _acquired(self) -> LeaseGuard:
        return LeaseGuard(await self._acquire(), self._ttl)

    def __await__(self) -> Generator[Any, None, LeaseGuard]:
        return self._acquired().__await__()

    async def __aenter__(self) -> LeaseGuard:
        self._hold = await self._acquired()
        return self._hold

    async def __aexit__(self, kind: object, ending: Optional[BaseException], trace: object) -> None:
        if self._hold is not None:
            await release_at_exit_async(self._hold.release, ending)
