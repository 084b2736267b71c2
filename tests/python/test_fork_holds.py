"""A lock held by a parent stays the parent's across forks: a child cannot release or extend it through
the inherited handle (LockNotOwned), a child that exits normally (atexit, finalizers, garbage collection
of the handle) leaves it held, and the parent keeps working after forking children."""

import subprocess
import sys
import textwrap
import uuid


def test_children_cannot_release_and_do_not_free_the_parents_lock(redis_server):
    name = f"held-{uuid.uuid4().hex[:8]}"
    script = textwrap.dedent(
        f"""
        import gc, os, sys
        import ratelock
        URL, NAME = {redis_server.url!r}, {name!r}
        lock = ratelock.DistributedLock(NAME, url=URL, ttl=30)
        lock.acquire()
        limiter = ratelock.Limiter(URL)
        limiter.hit("parent", "100/minute")
        for child in range(5):
            pid = os.fork()
            if pid == 0:
                try:
                    lock.release()
                    print("child released the parent's lock", flush=True)
                    os._exit(3)
                except ratelock.LockNotOwned:
                    pass
                try:
                    lock.extend(10)
                    print("child extended the parent's lock", flush=True)
                    os._exit(4)
                except ratelock.LockNotOwned:
                    pass
                del lock  # the child's copy of the handle is finalized ...
                gc.collect()
                sys.exit(0)  # ... and the child exits normally (atexit handlers, finalizers)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0, status
            other = ratelock.DistributedLock(NAME, url=URL, ttl=30)
            assert not other.acquire(blocking=False), "the parent's lock was freed by a child"
            assert limiter.hit("parent", "100/minute").allowed
        assert lock.fencing_token is not None and not lock.lost
        lock.release()
        print("ok", flush=True)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stdout + result.stderr


def test_a_handle_made_before_a_fork_is_another_owner_in_each_child(redis_server):
    # gunicorn --preload, Celery prefork: the handle is made once, in the parent. Its owner token and
    # grant counter were inherited as they were, so every child asked for the same permit id and was
    # told it held the one permit (a renewal), and a child re-entered the parent's re-entrant hold.
    name = f"owners-{uuid.uuid4().hex[:8]}"
    script = textwrap.dedent(
        f"""
        import os
        import ratelock
        URL, NAME = {redis_server.url!r}, {name!r}
        permits = ratelock.Semaphore(NAME + ":permits", 1, url=URL, ttl=30)
        lock = ratelock.DistributedLock(NAME + ":lock", url=URL, ttl=30, reentrant=True)
        assert lock.acquire()
        parent_token = lock.owner_token
        children = []
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                got_permit = permits.acquire(blocking=False)
                entered = lock.acquire(blocking=False)
                other_owner = lock.owner_token != parent_token
                os._exit((1 if got_permit else 0) | (2 if entered else 0) | (4 if other_owner else 0))
            children.append(pid)
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
        permits_taken = sum(code & 1 for code in codes)
        assert permits_taken == 1, f"{{permits_taken}} children took the one permit"
        assert not any(code & 2 for code in codes), "a child re-entered the parent's hold"
        assert all(code & 4 for code in codes), "a child kept the parent's owner token"
        lock.release()
        print("ok", flush=True)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stdout + result.stderr
