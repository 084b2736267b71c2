"""``ratelock.asyncio.FairLock``: ``ratelock.FairLock`` for asyncio code; waiting for its turn never
blocks the event loop."""

from typing import Optional, Union

from ratelock import _native
from ratelock._async_holding import AsyncHolding
from ratelock._native import Client, FairLockState, LockLost


class FairLock(AsyncHolding[_native.LeaseGuard]):
    """A lock served first come, first served, as ``ratelock.FairLock``: ``async with lock:`` queues and
    waits its turn, keeps the lease renewed, and raises ``LockLost`` on exit if it was lost meanwhile.

        >>> import asyncio, ratelock.asyncio
        >>> async def main() -> bool:
        ...     payouts = ratelock.asyncio.FairLock("payouts:async-doc", ttl=10)
        ...     async with payouts:
        ...         return (payouts.fencing_token or 0) > 0 and await payouts.locked()
        >>> asyncio.run(main())
        True
    """

    _what = "fair lock"

    def __init__(
        self,
        name: Union[str, bytes],
        url: Union[str, Client, None] = None,
        *,
        ttl: float = 30.0,
        waiter_ttl: float = 5.0,
        auto_renew: bool = True,
        prefix: str = "rl",
        timeout: float = 1.0,
    ) -> None:
        super().__init__()
        self._name, self._url, self._ttl, self._waiter_ttl = name, url, ttl, waiter_ttl
        self._auto_renew, self._prefix, self._timeout = auto_renew, prefix, timeout

    async def _open(self) -> _native.FairLockHandle:
        return await _native.FairLockHandle.connect_async(
            self._name,
            self._url,
            ttl=self._ttl,
            waiter_ttl=self._waiter_ttl,
            auto_renew=self._auto_renew,
            prefix=self._prefix,
            timeout=self._timeout,
        )

    async def _give_back(self, guard: _native.LeaseGuard) -> Optional[str]:
        return None if await guard.release_async() else "expired or taken"

    async def try_acquire(self) -> bool:
        """Takes the lock if it is free and nobody waits for it; ``False`` otherwise (never queues)."""
        return await self.acquire(blocking=False)

    async def locked(self) -> bool:
        """Whether anyone holds the lock now."""
        return bool(await (await self._connected()).is_locked_async())

    async def state(self) -> FairLockState:
        """The lock as it stands (see ``ratelock.FairLock.state``)."""
        state: FairLockState = await (await self._connected()).state_async()
        return state

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of the latest hold (``None`` when it holds none)."""
        return self._guards[-1].fencing_token if self._guards else None

    async def extend(self, ttl: Optional[float] = None) -> None:
        """Moves the end of the latest hold's lease to ``ttl`` seconds from now (default: the ttl);
        raises ``LockLost`` if it expired or was taken (never re-acquires)."""
        if not await self._current().extend_async(self._ttl if ttl is None else ttl):
            raise LockLost(f"cannot extend: the {self._what} expired or was taken")

    async def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Waits until the latest hold is lost or ``timeout`` seconds pass; returns whether it was lost."""
        return await self._current().wait_lost_async(timeout)

    async def __aenter__(self) -> "FairLock":
        await self.acquire()
        return self
