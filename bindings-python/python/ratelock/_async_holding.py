"""``AsyncHolding``: the asyncio lock classes used like ``threading.Lock`` (``DistributedLock``,
``Semaphore``, ``FairLock`` of ``ratelock.asyncio``): awaitable ``acquire``/``release``, ``extend`` and
``wait_lost``, and ``async with``, over ``Holds``. No call blocks the event loop."""

import asyncio
from typing import Any, Optional, TypeVar

from ratelock._handle_call import Asynchronous
from ratelock._hold_stack import G, Holds, ReleaseOutcome, waits
from ratelock._interrupted import release_at_exit_async

S = TypeVar("S", bound="AsyncHolding[Any]")


class AsyncHolding(Holds[G], Asynchronous):
    """Base of the asyncio lock classes; each kind's definition says which handle it opens."""

    async def acquire(self, timeout: Optional[float] = None, blocking: bool = True) -> bool:
        """Takes a hold; see ``ratelock.DistributedLock.acquire``."""
        blocking, timeout = waits(timeout, blocking)
        try:
            handle = self._acquirer()
            if blocking:
                return self._keep(await handle.acquire_async(timeout))
            granted = self._keep(await handle.try_acquire_async())
        finally:
            self._acquired()
        if not granted:
            # A memory store answers at once: a loop of tries must still let the holder's task run.
            await asyncio.sleep(0)
        return granted

    async def release(self) -> ReleaseOutcome:
        """Gives back the latest hold; see ``ratelock.DistributedLock.release``."""
        with self._giving_back() as guard:
            return await guard.release_async()

    async def extend(self, ttl: Optional[float] = None) -> None:
        """Moves the end of the latest hold's lease to ``ttl`` seconds from now (default: the ttl);
        raises ``LockLost`` if it expired or was taken (never re-acquires)."""
        await self._latest().extend_async(self._lease(ttl))

    async def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Waits until the latest hold is lost or ``timeout`` seconds pass; returns whether it was lost
        (``True`` at once after ``release`` raised ``LockLost``)."""
        return await self._watched().wait_lost_async(timeout)

    async def __aenter__(self: S) -> S:
        await self.acquire()
        return self

    async def __aexit__(self, kind: object, ending: Optional[BaseException], trace: object) -> None:
        await release_at_exit_async(self.release, ending)
