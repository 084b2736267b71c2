"""``ratelock.asyncio``: the limiter and the lock for asyncio code. Every call is an awaitable that runs on ratelock's
tokio runtime and never blocks the event loop — connecting included (done on first use).

    >>> import asyncio, ratelock.asyncio
    >>> async def main() -> bool:
    ...     limiter = ratelock.asyncio.Limiter()
    ...     return (await limiter.hit("user:42", "10/second")).allowed
    >>> asyncio.run(main())
    True
"""

import asyncio
from typing import List, Literal, Optional, Union

from ratelock import _native
from ratelock._native import Decision, LockLost, LockNotOwned


class Limiter:
    """The same limiter as ``ratelock.Limiter`` (same store per URL, same keys), with awaitable calls."""

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        prefix: str = "rl",
        on_error: Literal["raise", "allow", "deny"] = "raise",
        timeout: float = 1.0,
        default_algorithm: str = "gcra",
        clock: Literal["store", "local"] = "store",
    ) -> None:
        self._url = url
        self._prefix, self._on_error, self._timeout = prefix, on_error, timeout
        self._default_algorithm, self._clock = default_algorithm, clock
        self._native: Optional[_native.Limiter] = None
        self._connecting: Optional[asyncio.Lock] = None

    async def _connected(self) -> _native.Limiter:
        if self._native is None:
            if self._connecting is None:
                self._connecting = asyncio.Lock()
            async with self._connecting:
                if self._native is None:
                    self._native = await _native.Limiter.connect_async(
                        self._url,
                        prefix=self._prefix,
                        on_error=self._on_error,
                        timeout=self._timeout,
                        default_algorithm=self._default_algorithm,
                        clock=self._clock,
                    )
        return self._native

    async def hit(
        self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, now_us: Optional[int] = None
    ) -> Decision:
        """Takes ``cost`` units from every rule for ``key`` if all allow it; otherwise takes nothing."""
        limiter = await self._connected()
        return await limiter.hit_async(key, rules, cost, now_us=now_us)

    async def peek(
        self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, now_us: Optional[int] = None
    ) -> Decision:
        """Answers what ``hit`` would answer, without spending anything."""
        limiter = await self._connected()
        return await limiter.peek_async(key, rules, cost, now_us=now_us)

    async def reset(self, key: Union[str, bytes], rules: str) -> None:
        """Forgets the state of every given rule for ``key``."""
        limiter = await self._connected()
        await limiter.reset_async(key, rules)


class DistributedLock:
    """``ratelock.DistributedLock`` for asyncio: ``async with lock:`` waits without blocking the event
    loop, keeps the lease renewed, and raises ``LockLost`` on exit if the lock was lost meanwhile.

        >>> async def work() -> int:
        ...     async with DistributedLock("orders:42", ttl=10) as lock:
        ...         return lock.fencing_token or 0
        >>> asyncio.run(work()) > 0
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
        self._name, self._url, self._ttl = name, url, ttl
        self._auto_renew, self._reentrant, self._prefix, self._timeout = auto_renew, reentrant, prefix, timeout
        self._handle: Optional[_native.LockHandle] = None
        self._connecting: Optional[asyncio.Lock] = None
        self._guards: List[_native.LockGuard] = []

    async def _connected(self) -> _native.LockHandle:
        if self._handle is None:
            if self._connecting is None:
                self._connecting = asyncio.Lock()
            async with self._connecting:
                if self._handle is None:
                    self._handle = await _native.LockHandle.connect_async(
                        self._name,
                        self._url,
                        ttl=self._ttl,
                        auto_renew=self._auto_renew,
                        reentrant=self._reentrant,
                        prefix=self._prefix,
                        timeout=self._timeout,
                    )
        return self._handle

    async def acquire(self, timeout: Optional[float] = None, blocking: bool = True) -> bool:
        """Takes the lock; see ``ratelock.DistributedLock.acquire``."""
        handle = await self._connected()
        if blocking:
            guard = await handle.acquire_async(timeout)
        else:
            found = await handle.try_acquire_async()
            if found is None:
                return False
            guard = found
        self._guards.append(guard)
        return True

    async def release(self) -> None:
        """Gives back the latest hold; ``LockNotOwned`` if none, ``LockLost`` if it had been lost."""
        if not self._guards:
            raise LockNotOwned("release of a lock this DistributedLock does not hold")
        outcome = await self._guards.pop().release_async()
        if outcome in ("not_held", "held_by_other"):
            raise LockLost(f"the lock was lost before release ({outcome.replace('_', ' ')})")

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of the latest hold (``None`` when it holds none)."""
        return self._guards[-1].fencing_token if self._guards else None

    @property
    def lost(self) -> bool:
        """True once the latest hold is known lost."""
        return bool(self._guards) and self._guards[-1].is_lost()

    async def __aenter__(self) -> "DistributedLock":
        await self.acquire()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()


class Semaphore:
    """``ratelock.Semaphore`` for asyncio: ``async with sem:`` waits for one of ``permits`` permits
    without blocking the event loop, and raises ``LockLost`` on exit if the permit was lost meanwhile."""

    def __init__(
        self,
        name: Union[str, bytes],
        permits: int,
        url: Optional[str] = None,
        *,
        ttl: float = 30.0,
        auto_renew: bool = True,
        prefix: str = "rl",
        timeout: float = 1.0,
    ) -> None:
        self._name, self._permits, self._url = name, permits, url
        self._ttl, self._auto_renew, self._prefix, self._timeout = ttl, auto_renew, prefix, timeout
        self._handle: Optional[_native.SemaphoreHandle] = None
        self._connecting: Optional[asyncio.Lock] = None
        self._guards: List[_native.PermitGuard] = []

    async def _connected(self) -> _native.SemaphoreHandle:
        if self._handle is None:
            if self._connecting is None:
                self._connecting = asyncio.Lock()
            async with self._connecting:
                if self._handle is None:
                    self._handle = await _native.SemaphoreHandle.connect_async(
                        self._name,
                        self._permits,
                        self._url,
                        ttl=self._ttl,
                        auto_renew=self._auto_renew,
                        prefix=self._prefix,
                        timeout=self._timeout,
                    )
        return self._handle

    async def acquire(self, timeout: Optional[float] = None, blocking: bool = True) -> bool:
        """Takes a permit; see ``ratelock.Semaphore.acquire``."""
        handle = await self._connected()
        if blocking:
            guard = await handle.acquire_async(timeout)
        else:
            found = await handle.try_acquire_async()
            if found is None:
                return False
            guard = found
        self._guards.append(guard)
        return True

    async def release(self) -> None:
        """Gives back the latest permit; ``LockNotOwned`` if none, ``LockLost`` if it had been lost."""
        if not self._guards:
            raise LockNotOwned("release of a permit this Semaphore does not hold")
        if not await self._guards.pop().release_async():
            raise LockLost("the permit was lost before release (expired or reclaimed)")

    async def __aenter__(self) -> "Semaphore":
        await self.acquire()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()


__all__ = ["Decision", "DistributedLock", "Limiter", "Semaphore"]
