"""What an interrupted wait or ``with`` block does with what it could not give back: the interruption (a
``KeyboardInterrupt``, a cancellation, ``SystemExit``, a timeout signal: anything that is not an
``Exception``) still propagates as itself. The failure is logged on the ``ratelock`` logger and, from
Python 3.11, noted on the interruption. A coroutine closed while it waited (``GeneratorExit``: it was
never awaited to its end, and may not await again) hands its clean-up to a task of the running loop."""

import asyncio
import logging
from typing import Awaitable, Callable, Optional, Set

log = logging.getLogger("ratelock")

#: The clean-up tasks of closed coroutines, kept until they end (a loop keeps only weak references).
_BACKGROUND: "Set[asyncio.Task[None]]" = set()


def finish_in_background(work: Callable[[], Awaitable[object]], what: str) -> None:
    """Runs `work` as a task of the running loop, for a coroutine closed while it waited: awaiting it there
    would raise ``RuntimeError: coroutine ignored GeneratorExit``. A failure, or no loop running, is logged
    (`what` names the work)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        log.warning("ratelock: %s was not done: no event loop was running when the coroutine closed", what)
        return

    async def run() -> None:
        try:
            await work()
        except Exception as failed:
            log.warning("ratelock: %s failed (%s: %s)", what, type(failed).__name__, failed)

    task = loop.create_task(run())
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


def note_failed_refund(interrupted: BaseException, failed: Exception) -> None:
    """Says that the booking stays spent because its refund failed with ``failed``."""
    _note(interrupted, f"ratelock: the interrupted wait's booking was not given back ({type(failed).__name__}: {failed})")


def release_at_exit(release: Callable[[], object], ending: Optional[BaseException]) -> None:
    """The release at the end of a ``with`` block that ended with ``ending`` (``None``: it ran to its
    end). After an interruption a failed release is noted on it instead of raised in its place; after an
    ``Exception`` or none, it raises (chained to that exception)."""
    if ending is None or isinstance(ending, Exception):
        release()
        return
    try:
        release()
    except Exception as failed:
        _note_failed_release(ending, failed)


async def release_at_exit_async(release: Callable[[], Awaitable[object]], ending: Optional[BaseException]) -> None:
    """``release_at_exit`` for ``async with``: the same rule, with the release awaited. (A block ended by
    ``GeneratorExit`` is an async generator's closed by ``aclose()``, which may await: it releases here.)"""
    if ending is None or isinstance(ending, Exception):
        await release()
        return
    try:
        await release()
    except Exception as failed:
        _note_failed_release(ending, failed)


def _note_failed_release(interrupted: BaseException, failed: Exception) -> None:
    _note(interrupted, f"ratelock: the interrupted block's hold was not given back ({type(failed).__name__}: {failed})")


def _note(interrupted: BaseException, said: str) -> None:
    log.warning(said)
    add_note = getattr(interrupted, "add_note", None)
    if add_note is not None:
        add_note(said)
