"""The Python package on a real Redis Cluster (redis+cluster:// URL, 3 masters, 3 replicas): limits
over keys on many slots (multi-rule, no CROSSSLOT), sync and asyncio, a lock with one holder, and a
cluster over TLS (rediss+cluster://) with a private CA."""

import asyncio
import threading
import time
import uuid

import pytest

import ratelock
import ratelock.asyncio


def test_limits_hold_on_keys_across_the_slots(redis_cluster):
    limiter = ratelock.Limiter(redis_cluster.url)
    rules = "3/minute; 100/hour using sliding_log"
    for n in range(100):
        key = f"user:{uuid.uuid4().hex}:{n}"
        assert [limiter.hit(key, rules).allowed for _ in range(4)] == [True, True, True, False]


def test_asyncio_on_the_cluster(redis_cluster):
    async def run() -> int:
        limiter = ratelock.asyncio.Limiter(redis_cluster.url)
        key = f"py:{uuid.uuid4().hex}"
        decisions = await asyncio.gather(*(limiter.hit(key, "50/hour") for _ in range(80)))
        return sum(1 for d in decisions if d.allowed)

    assert asyncio.run(run()) == 50


def test_a_lock_on_the_cluster_has_one_holder(redis_cluster):
    name = f"cluster-lock:{uuid.uuid4().hex}"
    inside, most, tokens = 0, 0, []
    guard = threading.Lock()

    def worker() -> None:
        nonlocal inside, most
        lock = ratelock.DistributedLock(name, redis_cluster.url, ttl=5)
        for _ in range(10):
            with lock:
                with guard:
                    inside += 1
                    most = max(most, inside)
                    tokens.append(lock.fencing_token)
                time.sleep(0.002)  # another holder now would be counted
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 1 and len(tokens) == 40 and len(set(tokens)) == 40


def test_a_cluster_over_tls_with_a_private_ca(tls_redis_cluster):
    client = ratelock.Client(tls_redis_cluster.tls_url, tls_root_ca=tls_redis_cluster.ca_pem)
    limiter = ratelock.Limiter(client)
    for n in range(30):
        key = f"tls:{uuid.uuid4().hex}:{n}"
        assert [limiter.hit(key, "2/minute").allowed for _ in range(3)] == [True, True, False]
    with ratelock.DistributedLock(f"tls-lock:{uuid.uuid4().hex}", url=client) as lock:
        assert lock.fencing_token is not None and lock.locked()
    # Without the CA, the nodes' certificates are refused: a configuration error, never an outage.
    untrusted = ratelock.Limiter(ratelock.Client(tls_redis_cluster.tls_url), on_error="allow")
    with pytest.raises(ratelock.ConfigurationError, match="(?i)certificate"):
        untrusted.hit(f"tls:{uuid.uuid4().hex}", "2/minute")
