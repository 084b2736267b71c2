"""What the asyncio lock classes share: a native handle opened on first use without blocking the loop
(``AsyncHandle``) and, for the threading-style ones, a stack of this instance's holds with ``async with``
and the exceptions at release (``AsyncHolding``)."""

import asyncio
from typing import Any, Generic, List, Optional, TypeVar

from ratelock._native import LockLost, LockNotOwned, StoreUnavailable

G = TypeVar("G")


class AsyncHandle:
    """A native handle connected on first use (``connect_async``), once, whoever asks first."""

    def __init__(self) -> None:
        self._handle: Any = None
        self._connecting: Optional[asyncio.Lock] = None

    async def _open(self) -> Any:
        """Connects the native handle (``connect_async``)."""
        raise NotImplementedError

    async def _connected(self) -> Any:
        if self._handle is None:
            if self._connecting is None:
                self._connecting = asyncio.Lock()
            async with self._connecting:
                if self._handle is None:
                    self._handle = await self._open()
        return self._handle


class AsyncHolding(AsyncHandle, Generic[G]):
    """Base of the asyncio lock classes used like ``threading.Lock``; subclasses say how a guard is
    given back."""

    _what = "lock"

    def __init__(self) -> None:
        super().__init__()
        self._guards: List[G] = []

    async def _give_back(self, guard: G) -> Optional[str]:
        """Releases `guard`; returns what went wrong, or ``None``."""
        raise NotImplementedError

    async def acquire(self, timeout: Optional[float] = None, blocking: bool = True) -> bool:
        """Takes a hold; see ``ratelock.DistributedLock.acquire``."""
        handle = await self._connected()
        if blocking:
            guard = await handle.acquire_async(timeout)
        else:
            guard = await handle.try_acquire_async()
            if guard is None:
                return False
        self._guards.append(guard)
        return True

    async def release(self) -> None:
        """Gives back the latest hold; ``LockNotOwned`` if none, ``LockLost`` if it had been lost."""
        if not self._guards:
            raise LockNotOwned(f"release of a {self._what} this instance does not hold")
        guard = self._guards.pop()
        try:
            problem = await self._give_back(guard)
        except StoreUnavailable:
            # The store could not be reached: the hold is still ours, and release can be called again.
            self._guards.append(guard)
            raise
        if problem is not None:
            raise LockLost(f"the {self._what} was lost before release ({problem})")

    @property
    def lost(self) -> bool:
        """True once the latest hold is known lost."""
        return bool(self._guards) and bool(self._guards[-1].is_lost())  # type: ignore[attr-defined]

    def _current(self) -> G:
        if not self._guards:
            raise LockNotOwned(f"this instance holds no {self._what}")
        return self._guards[-1]

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()
