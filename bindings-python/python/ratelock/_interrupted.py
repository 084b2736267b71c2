"""What a wait that was interrupted does with a booking it could not give back: the interruption (a
``KeyboardInterrupt``, a cancellation, a timeout signal) still propagates as itself, and the failed
refund is logged on the ``ratelock`` logger and, from Python 3.11, noted on the interruption."""

import logging

log = logging.getLogger("ratelock")


def note_failed_refund(interrupted: BaseException, failed: Exception) -> None:
    """Says that the booking stays spent because its refund failed with ``failed``."""
    said = f"ratelock: the interrupted wait's booking was not given back ({type(failed).__name__}: {failed})"
    log.warning(said)
    add_note = getattr(interrupted, "add_note", None)
    if add_note is not None:
        add_note(said)
