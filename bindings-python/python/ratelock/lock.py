"""``ratelock.DistributedLock``: a distributed lock with fencing tokens and a lost-lock signal, used like
``threading.Lock`` (``with lock:``, ``acquire``/``release``), and ``LockKind``, what it shares with
``ratelock.asyncio.DistributedLock``. The work is done by the Rust core."""

from typing import Dict, Optional, Union

from ratelock import _native
from ratelock._handle_call import HandleCall
from ratelock._holding import Holding
from ratelock._hold_stack import Fenced, _holder
from ratelock._native import Client, LockHandle
from ratelock.otel import MetricsRecorder


class LockKind(Fenced[_native.LockGuard]):
    """A distributed lock, sync or asyncio: the constructor (each instance has its own owner token; a
    re-entrant one, one per thread or task), the fencing token of the latest hold, and the questions
    to the store."""

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
        # A re-entrant lock's holds are re-entered by the thread or task that holds them, never by
        # another: each one takes its holds through a handle (an owner token) of its own, so the store
        # keeps the others out as it keeps out another process. One shared token let a second thread
        # re-enter the first one's hold: both were inside at once.
        self._opened = (name, url, options) if reentrant else None
        self._own_handles: Dict[object, LockHandle] = {}
        # How many acquires of each thread or task are under way (its handle must outlive them).
        self._entering: Dict[object, int] = {}

    def _acquirer(self) -> LockHandle:
        if self._opened is None:
            return self._handle
        me = _holder()
        with self._mutex:
            self._entering[me] = self._entering.get(me, 0) + 1
            handle = self._own_handles.get(me)
        if handle is None:
            handle = LockHandle(*self._opened)
            with self._mutex:
                handle = self._own_handles.setdefault(me, handle)
        return handle

    def _acquired(self) -> None:
        if self._opened is None:
            return
        me = _holder()
        with self._mutex:
            entering = self._entering.get(me, 0) - 1
            if entering > 0:
                self._entering[me] = entering
            else:
                self._entering.pop(me, None)
            self._forget_idle()

    def _released(self) -> None:
        if self._opened is not None:
            with self._mutex:
                self._forget_idle()

    def _forget_idle(self) -> None:
        """Drops the asker's handle when it neither holds the lock nor is acquiring it. Only its own:
        another thread's may be between taking its hold off and putting it back (a release that failed
        on the way), and would come back without its owner token. Called with the mutex held."""
        me = _holder()
        if me not in self._entering and all(holder != me for holder, _ in self._holds):
            self._own_handles.pop(me, None)

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
        """This instance's owner token (the same for all its holds). A re-entrant lock has one per
        thread or task that holds it: the asker's while it holds the lock, else the instance's own,
        which no hold uses."""
        with self._mutex:
            handle = self._own_handles.get(_holder(), self._handle)
        return handle.owner_token


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
