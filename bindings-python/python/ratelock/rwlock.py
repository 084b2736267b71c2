"""``ratelock.ReadWriteLock``: many readers or one writer across every process, each acquire returning
its own ``ratelock.LeaseGuard``; and ``ReadWriteLockKind``, what it shares with
``ratelock.asyncio.ReadWriteLock``. The work is done by the Rust core."""

from typing import Optional, Union

from ratelock import _native
from ratelock._handle_call import Blocking, HandleCall
from ratelock._hold_stack import waits
from ratelock._native import Client, ReadWriteLockHandle
from ratelock.otel import MetricsRecorder
from ratelock.lease_guard import LeaseGuard


class ReadWriteLockKind:
    """A read-write lock, sync or asyncio: the constructor (the native handle and its two sides, each
    taking holds like a lock handle) and the questions to the store."""

    def __init__(
        self,
        name: Union[str, bytes],
        url: Union[str, Client, None] = None,
        *,
        ttl: float = 30.0,
        waiter_ttl: float = 5.0,
        prefer_writers: bool = True,
        auto_renew: bool = True,
        prefix: str = "rl",
        timeout: float = 1.0,
        metrics: Optional[MetricsRecorder] = None,
    ) -> None:
        options = _native.LockOptions(
            ttl=ttl,
            waiter_ttl=waiter_ttl,
            prefer_writers=prefer_writers,
            auto_renew=auto_renew,
            prefix=prefix,
            timeout=timeout,
            metrics=metrics,
        )
        self._handle = ReadWriteLockHandle(name, url, options)
        self._reading = self._handle.reading
        self._writing = self._handle.writing
        self._ttl = ttl

    state = HandleCall(
        ReadWriteLockHandle.state,
        ReadWriteLockHandle.state_async,
        "The lock as it stands: ``readers``, ``writer``, ``writer_fence``, ``writer_remaining`` (seconds), "
        "``waiting_writers`` and ``last_fence``.",
    )


class ReadWriteLock(ReadWriteLockKind, Blocking):
    """Readers share the lock; a writer excludes readers and other writers. Every hold is its own lease
    with its own fencing token (readers and writers draw from one rising counter).

    With ``prefer_writers`` (the default) a writer waiting in ``acquire_write`` holds back new readers,
    so a steady stream of readers cannot starve it; its mark lapses after ``waiter_ttl`` seconds if the
    waiting process dies.

    Examples:
        >>> import ratelock
        >>> config = ratelock.ReadWriteLock("config:doc", ttl=10)
        >>> with config.acquire_read(timeout=5) as first, config.acquire_read(timeout=5) as second:
        ...     config.state().readers, config.try_acquire_write() is None
        (2, True)
        >>> with config.acquire_write(timeout=5) as hold:
        ...     hold.fencing_token > second.fencing_token
        True
    """

    def acquire_read(self, timeout: Optional[float] = None) -> LeaseGuard:
        """Waits up to ``timeout`` seconds (``None`` or ``-1``: no limit; ``0``: one try) for a read hold;
        raises ``WaitTimeout``."""
        return LeaseGuard(self._reading.acquire(waits(timeout, True)[1]), self._ttl)

    def try_acquire_read(self) -> Optional[LeaseGuard]:
        """A read hold if no writer holds (or, with writer preference, waits for) the lock; else ``None``."""
        return self._held(self._reading.try_acquire())

    def acquire_write(self, timeout: Optional[float] = None) -> LeaseGuard:
        """Waits up to ``timeout`` seconds (``None``: no limit) for the write hold; raises ``WaitTimeout``.
        With writer preference, new readers are held back while it waits."""
        return LeaseGuard(self._writing.acquire(waits(timeout, True)[1]), self._ttl)

    def try_acquire_write(self) -> Optional[LeaseGuard]:
        """The write hold if nobody holds the lock; else ``None`` (never holds readers back)."""
        return self._held(self._writing.try_acquire())

    def _held(self, guard: Optional[_native.LeaseGuard]) -> Optional[LeaseGuard]:
        return None if guard is None else LeaseGuard(guard, self._ttl)
