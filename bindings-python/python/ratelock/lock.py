"""``ratelock.DistributedLock``: a distributed lock with fencing tokens and a lost-lock signal, used like
``threading.Lock`` (``with lock:``, ``acquire``/``release``), and ``LockKind``, what it shares with
``ratelock.asyncio.DistributedLock``. The work is done by the Rust core."""

from typing import Optional, Union

from ratelock import _native
from ratelock._handle_call import HandleCall
from ratelock._holding import Holding
from ratelock._hold_stack import Fenced
from ratelock._native import Client, LockHandle
from ratelock.otel import MetricsRecorder


class LockKind(Fenced[_native.LockGuard]):
    """A distributed lock, sync or asyncio: the constructor (each instance has its own owner token),
    the fencing token of the latest hold, and the questions to the store."""

    _handle: LockHandle
    _what = "lock"

    def __init__(
        self,
        name: Union[str, bytes],
        url: Union[str, Client, None] = None,
        *,
        ttl: float = 30.0,
        auto_renew: bool = True,
        reentrant: bool = False,
        prefix: str = "rl",
        timeout: float = 1.0,
        metrics: Optional[MetricsRecorder] = None,
    ) -> None:
        options = _native.LockOptions(
            ttl=ttl, auto_renew=auto_renew, reentrant=reentrant, prefix=prefix, timeout=timeout, metrics=metrics
        )
        super().__init__(LockHandle(name, url, options), ttl)

    locked = HandleCall(LockHandle.is_locked, LockHandle.is_locked_async, "Whether anyone holds the lock now.")
    remaining_ttl = HandleCall(
        LockHandle.remaining_ttl,
        LockHandle.remaining_ttl_async,
        "Seconds left on the current lease (whoever holds it), ``None`` when free.",
    )
    force_release = HandleCall(
        LockHandle.force_release,
        LockHandle.force_release_async,
        "Deletes the lease whoever holds it (an operator's tool); ``True`` if it was held.",
    )

    @property
    def owner_token(self) -> str:
        """This instance's owner token (the same for all its holds)."""
        return self._handle.owner_token


class DistributedLock(LockKind, Holding[_native.LockGuard]):
    """A lock shared by every process (in any language) that uses the same store and name.

    Each instance has its own owner token. ``with lock:`` acquires (waiting as long as needed), keeps
    the lease renewed while the block runs, and releases at the end — raising ``LockLost`` if the lock
    was lost meanwhile. Send ``lock.fencing_token`` with every write to the protected resource.

    Examples:
        >>> import ratelock
        >>> with ratelock.DistributedLock("orders:42", ttl=10) as lock:
        ...     token = lock.fencing_token
        >>> token is not None and token > 0
        True
    """
