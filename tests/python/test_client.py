"""ratelock.Client: a store of its own passed in place of a URL, shared by exactly the limiters and
locks given it, apart from the process-wide store per URL; sync and asyncio; bad arguments."""

import asyncio
import uuid

import pytest

import ratelock
import ratelock.asyncio


def fresh(kind: str) -> str:
    return f"{kind}:{uuid.uuid4().hex}"


def test_limiters_given_one_client_share_its_state(store_url):
    client = ratelock.Client(store_url)
    key = fresh("client")
    first, second = ratelock.Limiter(client), ratelock.Limiter(client)
    assert first.hit(key, "2/minute").remaining == 1
    assert second.hit(key, "2/minute").remaining == 0
    assert not first.hit(key, "2/minute").allowed


def test_a_memory_client_is_apart_from_the_shared_memory_store():
    key = fresh("client")
    assert ratelock.Limiter(ratelock.Client()).hit(key, "1/minute").allowed
    assert ratelock.Limiter().hit(key, "1/minute").allowed, "the process-wide memory store is another store"
    assert ratelock.Limiter(ratelock.Client()).hit(key, "1/minute").allowed, "each memory Client is its own"


def test_a_redis_client_sees_what_the_url_sees(redis_server):
    client = ratelock.Client(redis_server.url, timeout=0.5)
    assert client.url == redis_server.url and client.timeout == 0.5
    key = fresh("client")
    assert ratelock.Limiter(client).hit(key, "1/minute").allowed
    assert not ratelock.Limiter(redis_server.url).hit(key, "1/minute").allowed, "one Redis, one limit"


def test_locks_and_semaphores_take_a_client(store_url):
    client = ratelock.Client(store_url)
    name = fresh("lock")
    holder, rival = ratelock.DistributedLock(name, client), ratelock.DistributedLock(name, client)
    assert holder.acquire()
    assert not rival.acquire(blocking=False)
    holder.release()
    seats_name = fresh("seats")
    seats = [ratelock.Semaphore(seats_name, 1, client) for _ in range(2)]
    assert seats[0].acquire()
    assert not seats[1].acquire(blocking=False)
    seats[0].release()


def test_asyncio_objects_take_a_client_connected_without_blocking(store_url):
    async def run() -> None:
        client = await ratelock.asyncio.connect(store_url)
        key = fresh("client")
        limiter = ratelock.asyncio.Limiter(client)
        assert (await limiter.hit(key, "1/minute")).allowed
        assert not ratelock.Limiter(client).hit(key, "1/minute").allowed, "sync and asyncio share the client"
        async with ratelock.asyncio.DistributedLock(fresh("lock"), client) as lock:
            assert lock.fencing_token > 0

    asyncio.run(run())


def test_bad_client_arguments_are_clear():
    with pytest.raises(ratelock.InvalidArgument, match="url"):
        ratelock.Limiter(42)  # type: ignore[arg-type]
    with pytest.raises(ratelock.InvalidArgument, match="timeout"):
        ratelock.Client(timeout=-1)
    with pytest.raises(ratelock.InvalidArgument, match="url"):
        ratelock.Client("http://example.invalid")
    unreachable = ratelock.Client("redis://127.0.0.1:1/", timeout=0.3)  # lazy: nothing opened yet
    with pytest.raises(ratelock.StoreUnavailable):
        unreachable.ping()


def test_a_client_shows_its_url_without_the_password(redis_server):
    plain = ratelock.Client(redis_server.url)
    assert repr(plain) == f"Client({redis_server.url!r}, timeout=1.0)"
    with pytest.raises(ratelock.ConfigurationError) as failed:
        ratelock.Client(f"redis://ann:secret@127.0.0.1:{redis_server.port}/", timeout=0.5).ping()
    assert "secret" not in str(failed.value)
