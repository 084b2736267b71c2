"""``ratelock.Semaphore``: N permits per name shared by every process, each a lease that ends on its own
when its holder dies, used like ``threading.Semaphore`` (``with sem:``, ``acquire``/``release``), and
``SemaphoreKind``, what it shares with ``ratelock.asyncio.Semaphore``."""

from typing import Optional, Union

from ratelock import _native
from ratelock._handle_call import HandleCall
from ratelock._holding import Holding
from ratelock._hold_stack import Holds, LostReason, ReleaseOutcome
from ratelock._native import Client, SemaphoreHandle
from ratelock.otel import MetricsRecorder
from ratelock._interrupted import release_at_exit


class SemaphoreKind(Holds[_native.PermitGuard]):
    """A semaphore, sync or asyncio: the constructor and the questions to the store."""

    _handle: SemaphoreHandle
    _what = "permit"

    def __init__(
        self,
        name: Union[str, bytes],
        permits: int,
        url: Union[str, Client, None] = None,
        *,
        ttl: float = 30.0,
        auto_renew: bool = True,
        prefix: str = "rl",
        timeout: float = 1.0,
        metrics: Optional[MetricsRecorder] = None,
    ) -> None:
        options = _native.LockOptions(
            ttl=ttl, auto_renew=auto_renew, prefix=prefix, timeout=timeout, metrics=metrics
        )
        super().__init__(SemaphoreHandle(name, permits, url, options), ttl)

    in_use = HandleCall(
        SemaphoreHandle.in_use, SemaphoreHandle.in_use_async, "Permits in use now (leases not yet ended)."
    )


class Semaphore(SemaphoreKind, Holding[_native.PermitGuard]):
    """At most ``permits`` holders at once, across processes and languages.

    Examples:
        >>> import ratelock
        >>> pool = ratelock.Semaphore("db-connections", 2)
        >>> with pool:
        ...     pool.in_use()
        1
    """


class ConcurrencyLimiter:
    """At most ``limit`` requests in flight per key (one ``Semaphore`` per key), e.g. per tenant:

    Examples:
        >>> import ratelock
        >>> in_flight = ratelock.ConcurrencyLimiter(1)
        >>> with in_flight.slot("tenant:acme"):
        ...     in_flight.try_slot("tenant:acme") is None
        True
    """

    def __init__(
        self, limit: int, url: Union[str, Client, None] = None, *, ttl: float = 30.0, prefix: str = "rl", timeout: float = 1.0
    ) -> None:
        self._limit, self._url, self._ttl, self._prefix, self._timeout = limit, url, ttl, prefix, timeout
        self._semaphore("check")

    def slot(self, key: Union[str, bytes], timeout: Optional[float] = None) -> "Slot":
        """Waits up to ``timeout`` seconds for a slot for ``key``; use the result in ``with`` (or call
        its ``release``). Raises ``WaitTimeout`` when the wait passes its deadline."""
        semaphore = self._semaphore(key)
        semaphore.acquire(timeout)
        return Slot(semaphore)

    def try_slot(self, key: Union[str, bytes]) -> "Optional[Slot]":
        """A slot for ``key`` if one is free now, else ``None``."""
        semaphore = self._semaphore(key)
        return Slot(semaphore) if semaphore.acquire(blocking=False) else None

    def in_flight(self, key: Union[str, bytes]) -> int:
        """Requests in flight for ``key``."""
        return self._semaphore(key).in_use()

    def _semaphore(self, key: Union[str, bytes]) -> Semaphore:
        return Semaphore(key, self._limit, self._url, ttl=self._ttl, prefix=self._prefix, timeout=self._timeout)



class Slot:
    """A held slot of a ``ConcurrencyLimiter``: ``release()`` it, or leave a ``with`` block."""

    def __init__(self, semaphore: Semaphore) -> None:
        self._semaphore = semaphore

    def release(self) -> ReleaseOutcome:
        """Gives the slot back (``"released"``); ``LockLost`` if its lease had ended."""
        return self._semaphore.release()

    @property
    def lost(self) -> bool:
        """True once the slot's lease is known lost."""
        return self._semaphore.lost

    @property
    def lost_reason(self) -> Optional[LostReason]:
        """Why the slot's lease was lost (``None`` while it is not)."""
        return self._semaphore.lost_reason

    @property
    def lost_error(self) -> Optional[_native.RatelockError]:
        """The error that refused the slot's renewal, when ``lost_reason`` is ``"failed"``."""
        return self._semaphore.lost_error

    def __enter__(self) -> "Slot":
        return self

    def __exit__(self, kind: object, ending: Optional[BaseException], trace: object) -> None:
        release_at_exit(self.release, ending)
