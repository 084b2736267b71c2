"""A proxy's error replies in Python (the test kit's `answering_proxy` answers every script call): the
listed outage replies of twemproxy and Envoy follow the failure policy; a code nobody knows raises
ProtocolError even under on_error="allow"; a MOVED from a Cluster node is a ConfigurationError; an
unreadable reply stream raises ProtocolError on every call, never the policy's answer."""

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Iterator, List

import pytest

import ratelock
import ratelock.asyncio as ratelock_asyncio

REPO = Path(__file__).resolve().parents[2]
#: The listed outages (ratelock::store::connection_core::PROXY_OUTAGES), as a proxy sends them.
OUTAGES = ["-ERR Connection refused", "-ERR Connection timed out", "-no upstream host", "-upstream failure"]


@pytest.fixture(scope="module")
def proxy_binary() -> Path:
    subprocess.run(["cargo", "build", "--quiet", "-p", "ratelock-testkit", "--bin", "answering_proxy"], cwd=REPO, check=True)
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=REPO, check=True, capture_output=True)
    return Path(json.loads(meta.stdout)["target_directory"]) / "debug" / "answering_proxy"


class AnsweringProxy:
    def __init__(self, binary: Path, upstream: int, reply: str, argument: str = "") -> None:
        command = [str(binary), str(upstream), reply, argument]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.url = f"redis://127.0.0.1:{self.process.stdout.readline().split()[1]}/"

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


@pytest.fixture
def answering(proxy_binary: Path, redis_server) -> Iterator:
    started = []

    def start(reply: str) -> AnsweringProxy:
        proxy = AnsweringProxy(proxy_binary, redis_server.port, reply)
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.stop()


@pytest.mark.parametrize("reply", OUTAGES)
def test_listed_proxy_outages_follow_the_failure_policy(answering, reply: str) -> None:
    decision = ratelock.Limiter(answering(reply).url, on_error="allow").hit("k", "5/second")
    assert decision.allowed and decision.degraded


@pytest.mark.parametrize("reply", ["-NEWCODE never seen", "-ERR upstream failure while decoding"])
def test_an_unknown_reply_raises_whatever_the_policy(answering, reply: str) -> None:
    with pytest.raises(ratelock.ProtocolError):
        ratelock.Limiter(answering(reply).url, on_error="allow").hit("k", "5/second")


def test_moved_on_a_plain_url_names_the_cluster_url(answering) -> None:
    with pytest.raises(ratelock.ConfigurationError, match="redis\\+cluster://"):
        ratelock.Limiter(answering("-MOVED 3999 127.0.0.1:6381").url, on_error="allow").hit("k", "5/second")


def outcomes_of(url: str, calls: int, asyncio_api: bool) -> List[str]:
    """What `calls` hits through `url` under on_error="allow" came to, in order: "decided",
    "degraded", or the name of the error raised."""
    outcomes: List[str] = []

    def note(decision: ratelock.Decision) -> None:
        outcomes.append("degraded" if decision.degraded else "decided")

    if asyncio_api:

        async def hits() -> None:
            limiter = ratelock_asyncio.Limiter(url, on_error="allow")
            for _ in range(calls):
                try:
                    note(await limiter.hit("k", "5/second"))
                except ratelock.RatelockError as error:
                    outcomes.append(type(error).__name__)

        asyncio.run(hits())
    else:
        limiter = ratelock.Limiter(url, on_error="allow")
        for _ in range(calls):
            try:
                note(limiter.hit("k", "5/second"))
            except ratelock.RatelockError as error:
                outcomes.append(type(error).__name__)
    return outcomes


@pytest.mark.parametrize("asyncio_api", [False, True])
def test_an_unreadable_reply_stream_raises_on_every_call(answering, asyncio_api: bool) -> None:
    outcomes = outcomes_of(answering("!!!garbage").url, 6, asyncio_api)
    assert outcomes == ["ProtocolError"] * 6


def test_a_renewal_refused_for_good_loses_the_hold_and_says_why(proxy_binary: Path, redis_server) -> None:
    # The proxy answers only the fair lock's `extend`: the first renewal (at a third of the ttl) is
    # refused with a code nobody knows, and the hold is lost then, not at its lease's end.
    proxy = AnsweringProxy(proxy_binary, redis_server.port, "-NEWCODE never seen", "extend")
    try:
        lock = ratelock.FairLock("renewal-refused", proxy.url, ttl=3)
        assert lock.acquire(timeout=1)
        assert lock.wait_lost(timeout=2.5)
        assert lock.lost_reason == "failed"
        assert isinstance(lock.lost_error, ratelock.ProtocolError)
    finally:
        proxy.stop()


@pytest.mark.parametrize("asyncio_api", [False, True])
def test_a_crossed_reply_on_a_live_connection_is_a_protocol_error(answering, asyncio_api: bool) -> None:
    # The proxy answers every call after the first with the first call's reply: well formed, another call's.
    outcomes = outcomes_of(answering("REPLAY").url, 5, asyncio_api)
    assert outcomes == ["decided"] + ["ProtocolError"] * 4
