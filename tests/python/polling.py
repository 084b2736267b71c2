"""Test helpers for the fair and read-write lock tests: poll a condition with a deadline, and delete a
key on the test's redis-server (to take a hold away under its holder)."""

import subprocess
import time
import uuid
from typing import Callable


def until(what: str, check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Polls `check` every 5 ms until it holds; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.005)


def fresh_name(kind: str) -> str:
    """A lock name no other test uses (plain characters: its Redis keys are `rl:{<name>}:...`)."""
    return f"{kind}:{uuid.uuid4().hex}"


def delete_key(port: int, key: str) -> None:
    """Deletes `key` with redis-cli and checks that it existed."""
    deleted = subprocess.run(["redis-cli", "-p", str(port), "DEL", key], check=True, capture_output=True, text=True)
    assert deleted.stdout.strip() == "1", f"{key} was not there to delete: {deleted.stdout!r}"
