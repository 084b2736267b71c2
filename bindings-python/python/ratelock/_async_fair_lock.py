"""``ratelock.asyncio.FairLock``: ``ratelock.FairLock`` for asyncio code; waiting for its turn never
blocks the event loop."""

from ratelock import _native
from ratelock._async_holding import AsyncHolding
from ratelock.fair_lock import FairLockKind


class FairLock(FairLockKind, AsyncHolding[_native.LeaseGuard]):
    """A lock served first come, first served, as ``ratelock.FairLock``: ``async with lock:`` queues and
    waits its turn, keeps the lease renewed, and raises ``LockLost`` on exit if it was lost meanwhile.

    Examples:
        >>> import asyncio, ratelock.asyncio
        >>> async def main() -> bool:
        ...     payouts = ratelock.asyncio.FairLock("payouts:async-doc", ttl=10)
        ...     async with payouts:
        ...         return (payouts.fencing_token or 0) > 0 and await payouts.locked()
        >>> asyncio.run(main())
        True
    """

    async def try_acquire(self) -> bool:
        """Takes the lock if it is free and nobody waits for it; ``False`` otherwise (never queues)."""
        return await self.acquire(blocking=False)
