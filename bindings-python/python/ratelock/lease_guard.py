"""``ratelock.LeaseGuard``: one hold of a ``ratelock.ReadWriteLock`` (read or write) with its fencing token, the
lost signal, ``extend`` and ``release``, usable as a context manager; and ``LeaseGuardBase``, what it
shares with ``ratelock.asyncio.LeaseGuard``. The work is done by the Rust core."""

import os
import warnings
from typing import Optional

from ratelock import _native
from ratelock._hold_stack import LostReason, ReleaseOutcome
from ratelock._interrupted import release_at_exit


class LeaseGuardBase:
    """A read or write hold, sync or asyncio: the native guard, the lease length ``extend`` defaults to,
    and what needs no store call. The native guard raises ``LockLost`` for a hold that was lost and
    ``LockNotOwned`` for one given back."""

    _shown_as = "ratelock.LeaseGuard"

    def __init__(self, guard: _native.LeaseGuard, ttl: float) -> None:
        self._guard = guard
        self._ttl = ttl
        # A forked child's copy is not its hold: dropping it gives nothing back, and warns of nothing.
        self._pid = os.getpid()

    @property
    def fencing_token(self) -> int:
        """The fencing token of this grant: higher than every earlier grant of the same lock."""
        return self._guard.fencing_token

    @property
    def lost(self) -> bool:
        """True once the hold is known lost (its lease ended or its key was deleted)."""
        return self._guard.is_lost()

    @property
    def lost_reason(self) -> Optional[LostReason]:
        """Why the hold was lost (``None`` while it is not)."""
        return self._guard.lost_reason

    @property
    def lost_error(self) -> Optional[_native.RatelockError]:
        """The error that refused the renewal, when ``lost_reason`` is ``"failed"``."""
        return self._guard.lost_error

    def _lease(self, ttl: Optional[float]) -> float:
        """``ttl``, or the lock's own when ``None``."""
        return self._ttl if ttl is None else ttl

    def __repr__(self) -> str:
        state = "released" if self._guard.is_released() else "lost" if self.lost else "held"
        return f"<{self._shown_as} {self._guard.what} fencing_token={self.fencing_token} {state}>"

    def __del__(self) -> None:
        # A hold dropped while held is given back at once, in the background: a bare
        # ``rw.acquire_write()`` (Redisson's lock() ... unlock()) protected nothing, without a word.
        # Warned as an unclosed file is (ResourceWarning: shown under -X dev and in test runs).
        try:
            held = self._pid == os.getpid() and not self._guard.is_released() and not self._guard.is_lost()
            shown = repr(self) if held else ""
        except Exception:  # noqa: BLE001 - interpreter shutdown: the guard's module may be gone
            return
        if held:
            warnings.warn(
                f"{shown} was dropped while held and is given back now: keep it (with ...) until the work it "
                "protects is done",
                ResourceWarning,
            )


class LeaseGuard(LeaseGuardBase):
    """A read or write hold. Leave a ``with`` block (or call ``release()``) to give it back; while it is
    held its lease is renewed in the background. Send ``fencing_token`` with every write it protects.

    Examples:
        >>> import ratelock
        >>> config = ratelock.ReadWriteLock("config:hold-doc")
        >>> with config.acquire_write(timeout=5) as hold:
        ...     hold.fencing_token > 0, hold.lost
        (True, False)

    A hold dropped without being released is given back in the background.
    """

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the hold is lost or ``timeout`` seconds pass; returns whether it was lost (at
        once for a released hold, which can no longer be lost)."""
        return self._guard.wait_lost(timeout)

    def extend(self, ttl: Optional[float] = None) -> None:
        """Moves the end of the lease to ``ttl`` seconds from now (default: the lock's ttl). Never
        re-takes a hold: raises ``LockLost`` if it is gone, ``LockNotOwned`` after ``release``."""
        self._guard.extend(self._lease(ttl))

    def release(self) -> ReleaseOutcome:
        """Gives the hold back (``"released"``). Raises ``LockNotOwned`` if it was released already, and
        ``LockLost`` if it had been lost (nothing is changed then). If the store cannot be reached,
        ``StoreUnavailable`` is raised and the hold is still held, no longer renewed: call again (if
        nobody does, the lease runs out)."""
        return self._guard.release()

    def __enter__(self) -> "LeaseGuard":
        return self

    def __exit__(self, kind: object, ending: Optional[BaseException], trace: object) -> None:
        release_at_exit(self.release, ending)
