"""``ratelock.Semaphore``: N permits per name shared by every process, each a lease that ends on its own
when its holder dies, used like ``threading.Semaphore`` (``with sem:``, ``acquire``/``release``)."""

from typing import Optional, Union

from ratelock import _native
from ratelock._holding import Holding


class Semaphore(Holding[_native.PermitGuard]):
    """At most ``permits`` holders at once, across processes and languages.

        >>> import ratelock
        >>> pool = ratelock.Semaphore("db-connections", 2)
        >>> with pool:
        ...     pool.in_use()
        1
    """

    _what = "permit"

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
        handle = _native.SemaphoreHandle(
            name, permits, url, ttl=ttl, auto_renew=auto_renew, prefix=prefix, timeout=timeout
        )
        super().__init__(handle, ttl)

    def in_use(self) -> int:
        """Permits in use now (leases not yet ended)."""
        return int(self._handle.in_use())

    def _give_back(self, guard: _native.PermitGuard) -> Optional[str]:
        return None if guard.release() else "expired or reclaimed"

    def _renew(self, guard: _native.PermitGuard, ttl: float) -> Optional[str]:
        return None if guard.extend(ttl) else "expired or was reclaimed"

    def __enter__(self) -> "Semaphore":
        self.acquire()
        return self
