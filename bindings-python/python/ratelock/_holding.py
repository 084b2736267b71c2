"""``Holding``: the sync lock classes used like ``threading.Lock`` (``DistributedLock``, ``Semaphore``,
``FairLock``): ``acquire``/``release``, ``extend``, ``wait_lost`` and ``with``, over ``Holds``."""

from typing import Any, Optional, TypeVar

from ratelock._handle_call import Blocking
from ratelock._hold_stack import G, Holds, ReleaseOutcome, waits
from ratelock._interrupted import release_at_exit

S = TypeVar("S", bound="Holding[Any]")


class Holding(Holds[G], Blocking):
    """Base of the sync lock classes; each kind's definition says which handle it opens."""

    def acquire(self, timeout: Optional[float] = None, blocking: bool = True) -> bool:
        """Takes a hold. Non-blocking: ``False`` if none is free. Blocking: waits up to ``timeout``
        seconds (``None`` or ``-1``: no limit; ``0``: one try) and raises ``WaitTimeout`` when that
        passes. ``acquire(False)`` is a non-blocking try, as with ``threading.Lock``."""
        blocking, timeout = waits(timeout, blocking)
        try:
            handle = self._acquirer()
            return self._keep(handle.acquire(timeout) if blocking else handle.try_acquire())
        finally:
            self._acquired()

    def release(self) -> ReleaseOutcome:
        """Gives back this instance's latest hold: ``"released"``, or ``"still_held"`` when a re-entrant
        lock keeps other holds. Raises ``LockNotOwned`` if it holds none, and ``LockLost`` if the hold
        had been lost (nothing is changed then; ``lost_reason`` says how). If the store cannot be
        reached, ``StoreUnavailable`` is raised and the hold stays this instance's: call again."""
        with self._giving_back() as guard:
            return guard.release()

    def extend(self, ttl: Optional[float] = None) -> None:
        """Moves the end of the latest hold's lease to ``ttl`` seconds from now (default: the ttl).
        Never re-acquires: raises ``LockLost`` if the hold expired or was taken."""
        self._latest().extend(self._lease(ttl))

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the latest hold is lost or ``timeout`` seconds pass; returns whether it was lost
        (``True`` at once after ``release`` raised ``LockLost``)."""
        return self._watched().wait_lost(timeout)

    def __enter__(self: S) -> S:
        self.acquire()
        return self

    def __exit__(self, kind: object, ending: Optional[BaseException], trace: object) -> None:
        release_at_exit(self.release, ending)
