"""``ratelock.asyncio``: the limiter for asyncio code. Every call is an awaitable that runs on ratelock's
tokio runtime and never blocks the event loop — connecting included (done on first use).

    >>> import asyncio, ratelock.asyncio
    >>> async def main() -> bool:
    ...     limiter = ratelock.asyncio.Limiter()
    ...     return (await limiter.hit("user:42", "10/second")).allowed
    >>> asyncio.run(main())
    True
"""

import asyncio
from typing import Literal, Optional, Union

from ratelock import _native
from ratelock._native import Decision


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


__all__ = ["Decision", "Limiter"]
