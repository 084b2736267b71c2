"""The Python package on Redlock (redlock:// over 3 independent redis-servers): a lock with one holder
and rising tokens, still granted with one server stopped, and a typed error with two stopped."""

import threading
import time
import uuid

import pytest

import ratelock
from conftest import RedisServer


def test_redlock_from_python():
    servers = [RedisServer() for _ in range(3)]
    try:
        url = "redlock://" + ",".join(f"127.0.0.1:{server.port}" for server in servers)
        name = f"redlock:{uuid.uuid4().hex}"
        tokens, failures, inside, most = [], [], 0, 0
        guard = threading.Lock()

        def worker() -> None:
            nonlocal inside, most
            try:
                lock = ratelock.DistributedLock(name, url, ttl=5, timeout=0.3)
                for _ in range(5):
                    with lock:
                        with guard:
                            inside += 1
                            most = max(most, inside)
                            tokens.append(lock.fencing_token)
                        time.sleep(0.002)
                        with guard:
                            inside -= 1
            except Exception as error:  # reported below: an exception in a thread fails nothing by itself
                failures.append(error)

        threads = [threading.Thread(target=worker) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        assert most == 1 and len(set(tokens)) == 15

        servers[0].stop()
        lock = ratelock.DistributedLock(name, url, ttl=5, timeout=0.3)
        assert lock.acquire(blocking=False)
        lock.release()
        servers[1].stop()
        with pytest.raises(ratelock.StoreUnavailable, match="1 of 3 servers answered"):
            lock.acquire(blocking=False)
        with pytest.raises(ratelock.InvalidArgument, match="locks only"):
            ratelock.Limiter(url, timeout=0.3).hit("k", "1/second")
    finally:
        for server in servers:
            server.stop()
