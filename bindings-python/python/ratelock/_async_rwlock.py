"""``ratelock.asyncio.ReadWriteLock``: ``ratelock.ReadWriteLock`` for asyncio code; waits never block the
event loop, and each acquire gives its own ``ratelock.asyncio.LeaseGuard``."""

from typing import Optional, Union

from ratelock import _native
from ratelock._async_lease_guard import Acquiring, LeaseGuard
from ratelock._async_holding import AsyncHandle
from ratelock._native import Client, RwLockState


class ReadWriteLock(AsyncHandle):
    """Many readers or one writer, as ``ratelock.ReadWriteLock``. ``acquire_read``/``acquire_write`` can
    be awaited (for a ``LeaseGuard``) or used directly in ``async with``:

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

    def __init__(
        self,
        name: Union[str, bytes],
        url: Union[str, Client, None] = None,
        *,
        ttl: float = 30.0,
        waiter_ttl: float = 5.0,
        prefer_writers: bool = True,
        auto_renew: bool = True,
        prefix: str = "rl",
        timeout: float = 1.0,
    ) -> None:
        super().__init__()
        self._name, self._url, self._ttl, self._waiter_ttl = name, url, ttl, waiter_ttl
        self._prefer_writers, self._auto_renew, self._prefix, self._timeout = prefer_writers, auto_renew, prefix, timeout

    async def _open(self) -> _native.ReadWriteLockHandle:
        return await _native.ReadWriteLockHandle.connect_async(
            self._name,
            self._url,
            ttl=self._ttl,
            waiter_ttl=self._waiter_ttl,
            prefer_writers=self._prefer_writers,
            auto_renew=self._auto_renew,
            prefix=self._prefix,
            timeout=self._timeout,
        )

    def acquire_read(self, timeout: Optional[float] = None) -> Acquiring:
        """Waits up to ``timeout`` seconds (``None``: no limit) for a read hold; raises ``WaitTimeout``."""

        async def acquire() -> LeaseGuard:
            handle = await self._connected()
            return LeaseGuard(await handle.acquire_read_async(timeout), self._ttl, "read hold")

        return Acquiring(acquire)

    async def try_acquire_read(self) -> Optional[LeaseGuard]:
        """A read hold if no writer holds (or, with writer preference, waits for) the lock; else ``None``."""
        guard = await (await self._connected()).try_acquire_read_async()
        return None if guard is None else LeaseGuard(guard, self._ttl, "read hold")

    def acquire_write(self, timeout: Optional[float] = None) -> Acquiring:
        """Waits up to ``timeout`` seconds (``None``: no limit) for the write hold; raises ``WaitTimeout``.
        With writer preference, new readers are held back while it waits."""

        async def acquire() -> LeaseGuard:
            handle = await self._connected()
            return LeaseGuard(await handle.acquire_write_async(timeout), self._ttl, "write hold")

        return Acquiring(acquire)

    async def try_acquire_write(self) -> Optional[LeaseGuard]:
        """The write hold if nobody holds the lock; else ``None``."""
        guard = await (await self._connected()).try_acquire_write_async()
        return None if guard is None else LeaseGuard(guard, self._ttl, "write hold")

    async def state(self) -> RwLockState:
        """The lock as it stands (see ``ratelock.ReadWriteLock.state``)."""
        state: RwLockState = await (await self._connected()).state_async()
        return state
