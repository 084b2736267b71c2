"""``ratelock.asyncio``: the limiter and the locks for asyncio code. Every call is an awaitable that runs on ratelock's
tokio runtime and never blocks the event loop — connecting included (done on first use).

Examples:
    >>> import asyncio, ratelock.asyncio
    >>> async def main() -> bool:
    ...     limiter = ratelock.asyncio.Limiter()
    ...     return (await limiter.hit("user:42", "10/second")).allowed
    >>> asyncio.run(main())
    True
"""

import asyncio
from typing import Callable, Literal, Optional, Union

from ratelock import _native
from ratelock._earlier_names import earlier_names
from ratelock._async_fair_lock import FairLock
from ratelock._async_holding import AsyncHolding
from ratelock._async_lease_guard import LeaseGuard
from ratelock._async_rwlock import ReadWriteLock
from ratelock._interrupted import finish_in_background, note_failed_refund
from ratelock._native import Client, Decision
from ratelock.otel import MetricsRecorder
from ratelock.lock import LockKind
from ratelock.semaphore import SemaphoreKind

async def connect(
    url: Optional[str] = None,
    *,
    timeout: float = 1.0,
    tls_root_ca: Union[str, bytes, None] = None,
    tls_client_cert: Union[str, bytes, None] = None,
    tls_client_key: Union[str, bytes, None] = None,
    sentinel_username: Optional[str] = None,
    sentinel_password: Optional[str] = None,
    max_keys: Optional[int] = None,
    when_full: Optional[Literal["refuse", "evict"]] = None,
) -> Client:
    """A ``ratelock.Client`` (a connection of its own to pass in place of a URL), connected without
    blocking the event loop; the same arguments as ``ratelock.Client``."""
    return await Client.connect_async(
        url,
        timeout=timeout,
        tls_root_ca=tls_root_ca,
        tls_client_cert=tls_client_cert,
        tls_client_key=tls_client_key,
        sentinel_username=sentinel_username,
        sentinel_password=sentinel_password,
        max_keys=max_keys,
        when_full=when_full,
    )


class Limiter:
    """The same limiter as ``ratelock.Limiter`` (same store per URL, same keys), with awaitable calls."""

    def __init__(
        self,
        url: Union[str, Client, None] = None,
        *,
        prefix: str = "rl",
        on_error: Literal["raise", "allow", "deny", "local"] = "raise",
        timeout: float = 1.0,
        default_algorithm: str = "gcra",
        clock: Literal["store", "local"] = "store",
        instances: int = 1,
        shadow: bool = False,
        deny_cache: Optional[int] = None,
        deny_cache_max_age: Optional[float] = None,
        metrics: Optional[MetricsRecorder] = None,
    ) -> None:
        # Making the native limiter does no I/O: the store connects on the first call, on the runtime.
        self._native = _native.Limiter(
            url,
            prefix=prefix,
            on_error=on_error,
            timeout=timeout,
            default_algorithm=default_algorithm,
            clock=clock,
            instances=instances,
            shadow=shadow,
            deny_cache=deny_cache,
            deny_cache_max_age=deny_cache_max_age,
            metrics=metrics,
        )

    async def hit(
        self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, now_us: Optional[int] = None
    ) -> Decision:
        """Takes ``cost`` units from every rule for ``key`` if every enforcing rule allows it (a ``shadow``
        rule that denies is not charged); otherwise takes nothing."""
        return await self._native.check_async(key, rules, cost, now_us=now_us, spend=True)

    async def peek(
        self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, now_us: Optional[int] = None
    ) -> Decision:
        """Answers what ``hit`` would answer, without spending anything."""
        return await self._native.check_async(key, rules, cost, now_us=now_us, spend=False)

    async def reset(self, key: Union[str, bytes], rules: str) -> None:
        """Forgets the state of every given rule for ``key``."""
        await self._native.reset_async(key, rules)

    async def refund(
        self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, now_us: Optional[int] = None
    ) -> Decision:
        """Gives back ``cost`` units of every rule for ``key`` where the algorithm can; answers as ``peek``."""
        return await self._native.refund_async(key, rules, cost, now_us=now_us)

    async def reserve(
        self,
        key: Union[str, bytes],
        rules: str,
        cost: Optional[int] = None,
        *,
        max_wait: float,
        now_us: Optional[int] = None,
    ) -> Decision:
        """Books the earliest slot within ``max_wait`` seconds (gcra, token_bucket, leaky_bucket rules):
        allowed with ``retry_after`` the wait before acting, or the denial when the slot is further."""
        return await self._native.reserve_async(key, rules, cost, max_wait=max_wait, now_us=now_us)

    async def wait(
        self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, max_wait: float
    ) -> Decision:
        """Reserves, then sleeps until the slot (see ``ratelock.Limiter.wait``). A cancelled wait gives
        its booking back with ``refund`` before the cancellation propagates (as itself, even when the
        refund fails: that failure is logged on the ``ratelock`` logger)."""
        # Shielded: interrupted while booking, the booking may still be made; it is given back once it is.
        reserving = asyncio.ensure_future(self.reserve(key, rules, cost, max_wait=max_wait))
        try:
            decision = await asyncio.shield(reserving)
        except BaseException:
            reserving.add_done_callback(self._give_back_booking(key, rules, cost))
            raise
        if decision.allowed and decision.retry_after > 0:
            try:
                await asyncio.sleep(decision.retry_after)
            except GeneratorExit:
                # Closed, never to be awaited again (it may not await here): the refund goes on in a task.
                if not decision.degraded:
                    finish_in_background(lambda: self.refund(key, rules, cost), "giving back a closed wait's booking")
                raise
            except BaseException as interrupted:
                # The cancellation propagates as itself, whatever the refund does. A degraded booking
                # (the local fallback's, in memory) is not the store's to refund.
                if not decision.degraded:
                    try:
                        await asyncio.shield(self.refund(key, rules, cost))
                    except Exception as failed:
                        note_failed_refund(interrupted, failed)
                raise
        return decision

    def _give_back_booking(
        self, key: Union[str, bytes], rules: str, cost: Optional[int]
    ) -> "Callable[[asyncio.Future[Decision]], None]":
        """The done callback of a reservation whose wait was interrupted: a booking it made is refunded."""

        def give_back(reserving: "asyncio.Future[Decision]") -> None:
            if reserving.cancelled() or reserving.exception() is not None:
                return
            booked = reserving.result()
            if booked.allowed and not booked.degraded:
                finish_in_background(lambda: self.refund(key, rules, cost), "giving back an interrupted wait's booking")

        return give_back

    async def set_override(
        self, key: Union[str, bytes], rules: str, ttl: Optional[float] = None, *, now_us: Optional[int] = None
    ) -> None:
        """Gives ``key`` other limits for its rules of the same windows (see ``ratelock.Limiter.set_override``)."""
        await self._native.change_override_async(key, rules, ttl, now_us=now_us)

    async def clear_override(self, key: Union[str, bytes]) -> bool:
        """Takes ``key``'s override away; ``True`` when it had one."""
        return await self._native.change_override_async(key)

    async def block(self, key: Union[str, bytes], duration: float, *, now_us: Optional[int] = None) -> None:
        """Bans ``key`` for ``duration`` seconds: every hit and peek is denied with ``reason == "ban"``."""
        await self._native.change_entry_async("block", key, duration, now_us=now_us)

    async def unblock(self, key: Union[str, bytes], *, now_us: Optional[int] = None) -> bool:
        """Lifts ``key``'s ban; ``True`` when it had one (a list entry stays)."""
        return await self._native.change_entry_async("unblock", key, now_us=now_us)

    async def deny(self, key: Union[str, bytes], ttl: float, *, now_us: Optional[int] = None) -> None:
        """Puts ``key`` on the deny list for ``ttl`` seconds (``reason == "deny_list"``)."""
        await self._native.change_entry_async("deny", key, ttl, now_us=now_us)

    async def allow(self, key: Union[str, bytes], ttl: float, *, now_us: Optional[int] = None) -> None:
        """Puts ``key`` on the allow list for ``ttl`` seconds: it passes and spends nothing."""
        await self._native.change_entry_async("allow", key, ttl, now_us=now_us)

    async def clear(self, key: Union[str, bytes], *, now_us: Optional[int] = None) -> bool:
        """Takes ``key`` off the deny or allow list; ``True`` when it was on one (a ban stays)."""
        return await self._native.change_entry_async("clear", key, now_us=now_us)

    async def ping(self) -> None:
        """Reaches the store now: raises configuration errors and outages alike (to fail at boot)."""
        await self._native.ping_async()

    @property
    def breaker_state(self) -> Optional[Literal["closed", "open", "half-open"]]:
        """Where the store's circuit breaker stands in this process (None for the memory store). Before
        the first call it is the shared store's breaker: closed unless another limiter on the same
        store saw it fail."""
        return self._native.breaker_state


class DistributedLock(LockKind, AsyncHolding[_native.LockGuard]):
    """``ratelock.DistributedLock`` for asyncio: ``async with lock:`` waits without blocking the event
    loop, keeps the lease renewed, and raises ``LockLost`` on exit if the lock was lost meanwhile.

    Examples:
        >>> async def work() -> int:
        ...     async with DistributedLock("orders:42", ttl=10) as lock:
        ...         return lock.fencing_token or 0
        >>> asyncio.run(work()) > 0
        True
    """


class Semaphore(SemaphoreKind, AsyncHolding[_native.PermitGuard]):
    """``ratelock.Semaphore`` for asyncio: ``async with sem:`` waits for one of ``permits`` permits
    without blocking the event loop, and raises ``LockLost`` on exit if the permit was lost meanwhile."""


__all__ = [
    "Client",
    "Decision",
    "DistributedLock",
    "FairLock",
    "LeaseGuard",
    "Limiter",
    "ReadWriteLock",
    "Semaphore",
    "connect",
]


# `Hold`, the earlier name of `LeaseGuard`, still works for now, with a DeprecationWarning.
__getattr__ = earlier_names(__name__, {"Hold": LeaseGuard})
