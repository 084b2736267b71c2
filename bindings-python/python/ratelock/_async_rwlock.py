"""``ratelock.asyncio.ReadWriteLock``: ``ratelock.ReadWriteLock`` for asyncio code; waits never block the
event loop, and each acquire gives its own ``ratelock.asyncio.LeaseGuard``."""

import asyncio
from typing import Optional

from ratelock import _native
from ratelock._async_lease_guard import Acquiring, LeaseGuard
from ratelock._handle_call import Asynchronous
from ratelock._hold_stack import waits
from ratelock.rwlock import ReadWriteLockKind


class ReadWriteLock(ReadWriteLockKind, Asynchronous):
    """Many readers or one writer, as ``ratelock.ReadWriteLock``. ``acquire_read``/``acquire_write`` can
    be awaited (for a ``LeaseGuard``) or used directly in ``async with``:

    Examples:
        >>> import asyncio, ratelock.asyncio
        >>> async def main() -> int:
        ...     config = ratelock.asyncio.ReadWriteLock("config:async-doc", ttl=10)
        ...     async with config.acquire_read(timeout=5) as hold:
        ...         assert await config.try_acquire_write() is None
        ...     async with config.acquire_write(timeout=5) as hold:
        ...         return (await config.state()).readers
        >>> asyncio.run(main())
        0
    """

    def acquire_read(self, timeout: Optional[float] = None) -> Acquiring:
        """Waits up to ``timeout`` seconds (``None``: no limit) for a read hold; raises ``WaitTimeout``."""
        return Acquiring(lambda: self._reading.acquire_async(waits(timeout, True)[1]), self._ttl)

    async def try_acquire_read(self) -> Optional[LeaseGuard]:
        """A read hold if no writer holds (or, with writer preference, waits for) the lock; else ``None``."""
        return await self._tried(await self._reading.try_acquire_async())

    def acquire_write(self, timeout: Optional[float] = None) -> Acquiring:
        """Waits up to ``timeout`` seconds (``None``: no limit) for the write hold; raises ``WaitTimeout``.
        With writer preference, new readers are held back while it waits."""
        return Acquiring(lambda: self._writing.acquire_async(waits(timeout, True)[1]), self._ttl)

    async def try_acquire_write(self) -> Optional[LeaseGuard]:
        """The write hold if nobody holds the lock; else ``None``."""
        return await self._tried(await self._writing.try_acquire_async())

    def _held(self, guard: Optional[_native.LeaseGuard]) -> Optional[LeaseGuard]:
        return None if guard is None else LeaseGuard(guard, self._ttl)

    async def _tried(self, guard: Optional[_native.LeaseGuard]) -> Optional[LeaseGuard]:
        """A try's hold; a try that failed first lets other tasks run (a memory store answers at once, and
        a loop of tries must still let the holder's task release)."""
        if guard is None:
            await asyncio.sleep(0)
        return self._held(guard)
