"""``Holds``: what the lock classes used like ``threading.Lock`` share, sync and asyncio alike: the native
handle, this instance's holds (native guards, latest last, each with the task or thread that took it)
and the errors for holding none. Extending, releasing and deciding that a hold was lost are the native
guards' own work."""

import asyncio
import threading
from contextlib import contextmanager
from typing import Any, Awaitable, Generic, Iterator, List, Literal, Optional, Protocol, Tuple, TypeVar, Union

from ratelock import _native
from ratelock._native import InvalidArgument, LockLost, LockNotOwned, RatelockError, StoreUnavailable

#: What a release did: the hold was given back ("released"), or one hold of a re-entrant lock was and
#: others remain ("still_held"). A hold found lost raises ``LockLost`` instead.
ReleaseOutcome = Literal["released", "still_held"]

#: Why a hold was lost: its lease ran out without a renewal ("expired"), the store said it is gone or
#: held by another ("taken"), or a renewal was refused for good ("failed": see ``lost_error``).
LostReason = Literal["expired", "taken", "failed"]

G = TypeVar("G", bound=_native.Guard)
G_co = TypeVar("G_co", bound=_native.Guard, covariant=True)
F = TypeVar("F", bound=Union[_native.LockGuard, _native.LeaseGuard])


class Acquirer(Protocol[G_co]):
    """A native handle that takes one kind of hold: ``LockHandle``, ``SemaphoreHandle``, ``FairLockHandle``."""

    def acquire(self, timeout: Optional[float] = None) -> G_co: ...
    def try_acquire(self) -> Optional[G_co]: ...
    def acquire_async(self, timeout: Optional[float] = None) -> Awaitable[G_co]: ...
    def try_acquire_async(self) -> Awaitable[Optional[G_co]]: ...


def _holder() -> object:
    """Who is asking: the running asyncio task, else the current thread."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop runs in this thread
        task = None
    return task if task is not None else threading.get_ident()


def waits(timeout: Any, blocking: Any) -> Tuple[bool, Optional[float]]:
    """``acquire``'s arguments as ``threading.Lock.acquire`` users also write them: whether it waits,
    and for how long. A bool first is ``threading``'s order, ``(blocking, timeout)``: ``acquire(False)``
    is a try, ``acquire(True, 5)`` waits up to 5 s. As in ``threading``, a timeout of ``-1`` is no limit;
    ``0`` is a wait that ends at once (one try, then ``WaitTimeout`` as for any wait that ran out). A
    timeout given with a non-blocking acquire is refused, as ``threading`` refuses it."""
    if isinstance(timeout, bool):
        timeout, blocking = (None if isinstance(blocking, bool) else blocking), timeout
    if isinstance(timeout, (int, float)) and timeout == -1:
        timeout = None
    if not blocking and timeout is not None:
        raise InvalidArgument("invalid argument `timeout`: a non-blocking acquire takes no timeout")
    return bool(blocking), timeout


class Holds(Generic[G]):
    """The native handle of one lock, its default lease length and this instance's holds.

    One instance is commonly shared by many tasks or threads (a semaphore guarding a pool, above all).
    So each hold is kept with the task (under asyncio) or thread that took it, and ``release``,
    ``extend``, ``wait_lost``, ``lost`` and ``fencing_token`` mean the asker's latest hold. A task or
    thread holding none means the instance's latest, whoever took it (a hold taken in one thread and
    given back in another, as ``threading.Lock`` allows)."""

    _what = "lock"

    def __init__(self, handle: Acquirer[G], ttl: float) -> None:
        self._handle = handle
        self._ttl = ttl
        # (who took it, the hold), latest last.
        self._holds: List[Tuple[object, G]] = []
        # The hold whose release found it lost (raised ``LockLost``), until the next hold is taken: what
        # ``lost_reason`` then tells about.
        self._found_lost: Optional[G] = None
        self._mutex = threading.Lock()

    def _mine(self) -> Optional[int]:
        """Where the asker's latest hold is in ``_holds`` (with none of its own, the latest of all);
        ``None`` when the instance holds none. Called with the mutex held."""
        if not self._holds:
            return None
        me = _holder()
        for at in range(len(self._holds) - 1, -1, -1):
            if self._holds[at][0] == me:
                return at
        return len(self._holds) - 1

    def _last(self) -> Optional[G]:
        """The asker's latest hold, or with none the one whose release just found it lost."""
        at = self._mine()
        return self._found_lost if at is None else self._holds[at][1]

    @property
    def lost(self) -> bool:
        """True once the latest hold is known lost (also after its release raised ``LockLost``)."""
        with self._mutex:
            last = self._last()
            return last is not None and last.is_lost()

    @property
    def lost_reason(self) -> Optional[LostReason]:
        """Why the latest hold was lost, also after its release raised ``LockLost`` (``None`` while it
        is not lost, or with no hold)."""
        with self._mutex:
            last = self._last()
            return None if last is None else last.lost_reason

    @property
    def lost_error(self) -> Optional[RatelockError]:
        """The error that refused the latest hold's renewal, when ``lost_reason`` is ``"failed"``."""
        with self._mutex:
            last = self._last()
            return None if last is None else last.lost_error

    def _keep(self, guard: Optional[G]) -> bool:
        """Adds a hold just taken (``None``: none was free); whether there was one."""
        if guard is None:
            return False
        with self._mutex:
            self._holds.append((_holder(), guard))
            self._found_lost = None
        return True

    def _latest(self) -> G:
        with self._mutex:
            at = self._mine()
            if at is None:
                raise LockNotOwned(f"this instance holds no {self._what}")
            return self._holds[at][1]

    def _watched(self) -> G:
        """The hold ``wait_lost`` watches: the latest, or with none the one whose release found it lost
        (whose wait answers at once)."""
        with self._mutex:
            last = self._last()
            if last is None:
                raise LockNotOwned(f"this instance holds no {self._what}")
            return last

    def _acquirer(self) -> Acquirer[G]:
        """The handle the asker takes a hold through: the instance's (a re-entrant lock gives each
        thread or task its own, see ``LockKind``)."""
        return self._handle

    def _acquired(self) -> None:
        """Called once the asker's acquire has ended, granted or not (a re-entrant lock forgets the
        handles of threads and tasks that hold nothing)."""

    def _released(self) -> None:
        """Called once a hold was given back (a re-entrant lock forgets the handles of threads and tasks
        that hold nothing)."""

    def _lease(self, ttl: Optional[float]) -> float:
        """``ttl``, or the lock's own when ``None``."""
        return self._ttl if ttl is None else ttl

    @contextmanager
    def _giving_back(self) -> Iterator[G]:
        """The asker's latest hold, taken off to be released. If the store cannot be reached it is put
        back where it was: the hold is still this instance's and release can be called again (it is no
        longer renewed, so if nobody does, its lease runs out)."""
        with self._mutex:
            at = self._mine()
            if at is None:
                raise LockNotOwned(f"release of a {self._what} this instance does not hold")
            held = self._holds.pop(at)
        guard = held[1]
        try:
            yield guard
            self._released()
        except StoreUnavailable:
            with self._mutex:
                # Among the holds taken before it: any taken since stay later.
                self._holds.insert(min(at, len(self._holds)), held)
            raise
        except LockLost:
            with self._mutex:
                self._found_lost = guard
            raise


class Fenced(Holds[F]):
    """``Holds`` of a kind whose grants carry fencing tokens (locks, fair locks)."""

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of the asker's latest hold (``None`` when this instance holds none)."""
        with self._mutex:
            at = self._mine()
            return None if at is None else self._holds[at][1].fencing_token
