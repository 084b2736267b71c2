"""Redis Sentinel secured as charts set it up, from Python: the password `s3cret` on the master, the
replica and the sentinels, and TLS on every process (`rediss+sentinel://` with a private CA). Limits,
locks and a lock waiter's wake-up go through it; an untrusted certificate or a wrong password is a
configuration error, never an outage `on_error="allow"` admits. A group whose sentinels have a password
of their own (`m4ster` on the master, `s3ntinel` on the sentinels) is served with `sentinel_password`."""

import threading
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

import ratelock
from kit_processes import SentinelGroup, kit_binaries


@pytest.fixture(scope="module")
def secured_group() -> Iterator[SentinelGroup]:
    group = SentinelGroup(kit_binaries(), secured=True)
    try:
        yield group
    finally:
        group.stop()


def test_limits_locks_and_wake_ups_over_tls_with_a_password(secured_group: SentinelGroup) -> None:
    assert secured_group.url.startswith("rediss+sentinel://:s3cret@")
    client = ratelock.Client(secured_group.url, tls_root_ca=secured_group.ca)
    limiter = ratelock.Limiter(client)
    key = f"sentinel:{uuid.uuid4().hex}"
    assert [limiter.hit(key, "2/minute").allowed for _ in range(3)] == [True, True, False]

    name = f"sentinel-lock:{uuid.uuid4().hex}"
    holder = ratelock.DistributedLock(name, url=client, ttl=30.0)
    assert holder.acquire(blocking=False)
    granted_at: list = []

    def wait() -> None:
        waiter = ratelock.DistributedLock(name, url=client, ttl=30.0)
        if waiter.acquire(timeout=10.0):
            granted_at.append(time.monotonic())
            waiter.release()

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.3)
    released_at = time.monotonic()
    holder.release()
    thread.join(timeout=15)
    # The holder's lease (30 s) outlasts the wait: only the release's message wakes the waiter in time.
    assert granted_at and granted_at[0] - released_at < 2.0, granted_at


def test_an_untrusted_certificate_or_a_wrong_password_is_a_configuration_error(
    secured_group: SentinelGroup,
) -> None:
    untrusted = ratelock.Limiter(ratelock.Client(secured_group.url, timeout=2.0), on_error="allow")
    with pytest.raises(ratelock.ConfigurationError, match="(?i)certificate"):
        untrusted.hit(f"sentinel:{uuid.uuid4().hex}", "2/minute")
    wrong_url = secured_group.url.replace(":s3cret@", ":wrong@")
    wrong = ratelock.Limiter(ratelock.Client(wrong_url, timeout=2.0, tls_root_ca=secured_group.ca), on_error="allow")
    with pytest.raises(ratelock.ConfigurationError, match="(?i)password"):
        wrong.hit(f"sentinel:{uuid.uuid4().hex}", "2/minute")


def test_the_sentinels_own_password_when_it_differs_from_the_masters() -> None:
    group = SentinelGroup(kit_binaries(), split=True)
    try:
        assert group.url.startswith("redis+sentinel://:m4ster@")
        client = ratelock.Client(group.url, sentinel_password="s3ntinel")
        limiter = ratelock.Limiter(client)
        key = f"sentinel:{uuid.uuid4().hex}"
        assert [limiter.hit(key, "2/minute").allowed for _ in range(3)] == [True, True, False]
        lock = ratelock.DistributedLock(f"sentinel-lock:{uuid.uuid4().hex}", url=client, ttl=30.0)
        assert lock.acquire(blocking=False)
        lock.release()
        named = ratelock.Client(group.url, sentinel_username="default", sentinel_password="s3ntinel")
        assert ratelock.Limiter(named).hit(f"sentinel:{uuid.uuid4().hex}", "2/minute").allowed

        for wrong, named in [
            (ratelock.Client(group.url, timeout=2.0, sentinel_password="wrong"), "sentinel_password"),
            (
                ratelock.Client(group.url, timeout=2.0, sentinel_username="nobody", sentinel_password="s3ntinel"),
                "sentinel_username",
            ),
            (ratelock.Client(group.url, timeout=2.0), "password"),  # one password cannot serve both sides
        ]:
            with pytest.raises(ratelock.ConfigurationError, match=named):
                ratelock.Limiter(wrong, on_error="allow").hit(f"sentinel:{uuid.uuid4().hex}", "2/minute")
    finally:
        group.stop()


def test_sentinel_options_are_refused_where_no_sentinel_reads_them() -> None:
    with pytest.raises(ratelock.InvalidArgument, match="sentinel_password"):
        ratelock.Client("redis://127.0.0.1:6379/", sentinel_password="s3ntinel")
    with pytest.raises(ratelock.InvalidArgument, match="sentinel_password"):
        ratelock.Client("redis+sentinel://127.0.0.1:1/m", sentinel_username="app")
