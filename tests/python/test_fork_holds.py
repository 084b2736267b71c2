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
