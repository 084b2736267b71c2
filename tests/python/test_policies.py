"""Bans, lists and shadow mode through the Python limiter, sync and asyncio, on both stores: what the
vectors cannot show (a limiter in shadow, the asyncio forms, bad arguments, a store outage on an entry
change, an entry seen by a second limiter on the same Redis)."""

import asyncio
import re
import signal
import subprocess
import time
import uuid

import pytest

import ratelock
import ratelock.asyncio
from conftest import RedisServer


def fresh_key() -> str:
    return f"policy:{uuid.uuid4().hex}"


def test_a_limiter_in_shadow_lets_denials_through_and_spends_as_enforcement(store_url):
    shadow = ratelock.Limiter(store_url, prefix="shadowed", shadow=True)
    enforcing = ratelock.Limiter(store_url, prefix="shadowed")
    key = fresh_key()
    assert not shadow.hit(key, "1/minute").would_deny
    second = shadow.hit(key, "1/minute")
    assert second.allowed and second.would_deny and 59 < second.retry_after <= 60 and second.remaining == 0
    # The state is what enforcement leaves: the enforcing limiter on the same keys denies.
    assert not enforcing.hit(key, "1/minute").allowed
    shadow.deny(key, 60)
    listed = shadow.hit(key, "1/minute")
    assert listed.allowed and listed.would_deny and listed.reason == "deny_list"


def test_a_shadow_rule_lets_only_its_own_denial_through(store_url):
    limiter = ratelock.Limiter(store_url)
    key = fresh_key()
    rules = "1/minute shadow; 2/minute"
    assert limiter.hit(key, rules).allowed
    trial = limiter.hit(key, rules)
    assert trial.allowed and trial.would_deny and trial.rule == "1/minute shadow"
    # The request went through, so the enforced rule was charged for it: both its units are spent.
    assert not limiter.peek(key, "2/minute").allowed
    # The shadow rule was not charged for the hit it denied: it would deny the next for the same wait.
    assert 59 < limiter.peek(key, "1/minute").retry_after <= 60


def test_entries_from_asyncio_agree_with_sync(store_url):
    key = fresh_key()

    async def run() -> None:
        limiter = ratelock.asyncio.Limiter(store_url, prefix="entries")
        await limiter.block(key, 30)
        banned = await limiter.hit(key, "10/second")
        assert not banned.allowed and banned.reason == "ban" and 29 < banned.retry_after <= 30
        assert await limiter.unblock(key) and not await limiter.unblock(key)
        await limiter.allow(key, 30)
        assert (await limiter.peek(key, "1/hour")).reason == "allow_list"
        assert await limiter.clear(key) and not await limiter.clear(key)
        await limiter.deny(key, 30)

    asyncio.run(run())
    # The sync limiter on the same store and prefix sees what the asyncio one wrote.
    if store_url is not None:
        assert ratelock.Limiter(store_url, prefix="entries").hit(key, "10/second").reason == "deny_list"


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda limiter: limiter.block("k", 0), "duration"),
        (lambda limiter: limiter.deny("k", -1), "ttl"),
        (lambda limiter: limiter.allow("k", 400 * 86400), "ttl"),
        (lambda limiter: limiter.block("k", float("nan")), "duration"),
        (lambda limiter: limiter.change_entry("ban", "k", 5), "op"),
        (lambda limiter: limiter.change_entry("unblock", "k", 5), "seconds"),
    ],
)
def test_bad_arguments_are_named(call, argument):
    with pytest.raises(ratelock.InvalidArgument, match=f"`{argument}`"):
        call(ratelock.Limiter())


def test_a_rule_that_is_both_shadow_and_blocking_is_refused():
    with pytest.raises(ratelock.InvalidRule, match="shadow"):
        ratelock.Limiter().hit("k", "5/minute block 1 hour shadow")


def test_a_limiter_in_shadow_refuses_a_blocking_rule(store_url):
    # Its ban would be the key's entry, which enforcing limiters on the same prefix obey.
    rollout = ratelock.Limiter(store_url, shadow=True, prefix="shadow-ban")
    for _ in range(3):
        with pytest.raises(ratelock.InvalidRule, match="shadow cannot block"):
            rollout.hit("k", "2/minute block 1 hour")
    assert ratelock.Limiter(store_url, prefix="shadow-ban").hit("k", "100/minute").allowed


def test_an_entry_change_during_an_outage_raises_whatever_on_error_says():
    server = RedisServer()
    server.halt()
    try:
        limiter = ratelock.Limiter(server.url, on_error="allow", timeout=0.2)
        assert limiter.hit("k", "1/second").degraded
        with pytest.raises(ratelock.StoreUnavailable):
            limiter.block("k", 60)
    finally:
        server.stop()


def test_the_deny_cache_answers_a_denied_key_without_the_store(redis_server):
    limiter = ratelock.Limiter(redis_server.url, prefix=f"cache{uuid.uuid4().hex[:8]}", deny_cache=1000)
    key = fresh_key()
    assert not limiter.hit(key, "1/minute").cached
    denied = limiter.hit(key, "1/minute")
    assert not denied.allowed and not denied.cached
    calls_before = _limit_calls(redis_server)
    for _ in range(200):
        again = limiter.hit(key, "1/minute")
        assert not again.allowed and again.cached and again.retry_after <= denied.retry_after
    assert _limit_calls(redis_server) == calls_before, "no round trip while the denial holds"
    assert limiter.unblock(key) is False  # an entry change forgets the key's denials here
    assert not limiter.hit(key, "1/minute").cached


def test_a_deny_cache_of_no_keys_is_refused():
    with pytest.raises(ratelock.InvalidArgument, match="`deny_cache`"):
        ratelock.Limiter(deny_cache=0)


def _limit_calls(server: RedisServer) -> int:
    """Every limit call `server` ran (function, script or module), from INFO commandstats."""
    info = subprocess.run(
        ["redis-cli", "-p", str(server.port), "INFO", "commandstats"], capture_output=True, text=True, check=True
    ).stdout
    found = re.findall(r"^cmdstat_(?:evalsha|fcall|ratelock\.limit):calls=(\d+)", info, flags=re.M | re.I)
    return sum(int(calls) for calls in found)


def test_a_refund_gives_units_back_sync_and_asyncio(store_url):
    key = fresh_key()
    limiter = ratelock.Limiter(store_url, prefix="refunds")
    assert limiter.hit(key, "2/minute using fixed_window", 2).remaining == 0
    after = limiter.refund(key, "2/minute using fixed_window")
    assert after.allowed and after.remaining == 0, "one back: a request of 1 fits, leaving none"

    async def run() -> ratelock.Decision:
        return await ratelock.asyncio.Limiter(store_url, prefix="refunds").refund(key, "2/minute using fixed_window")

    assert asyncio.run(run()).allowed
    assert limiter.hit(key, "2/minute using fixed_window", 2).allowed, "both units back"


def test_a_refund_during_an_outage_raises_whatever_on_error_says():
    server = RedisServer()
    server.halt()
    try:
        limiter = ratelock.Limiter(server.url, on_error="allow", timeout=0.2)
        with pytest.raises(ratelock.StoreUnavailable):
            limiter.refund("k", "1/second")
    finally:
        server.stop()


def test_the_deny_cache_holds_a_denial_no_longer_than_its_max_age():
    limiter = ratelock.Limiter(deny_cache=100, deny_cache_max_age=0.1)
    now = 1_763_800_000_000_000
    limiter.hit("k", "1/hour", now_us=now)
    assert not limiter.hit("k", "1/hour", now_us=now).cached
    assert limiter.hit("k", "1/hour", now_us=now + 99_999).cached
    later = limiter.hit("k", "1/hour", now_us=now + 100_000)
    assert not later.allowed and not later.cached, "past max_age the store answers again"
    with pytest.raises(ratelock.InvalidArgument, match="`deny_cache_max_age`"):
        ratelock.Limiter(deny_cache_max_age=1.0)
    with pytest.raises(ratelock.InvalidArgument, match="`deny_cache_max_age`"):
        ratelock.Limiter(deny_cache=10, deny_cache_max_age=-1)


def test_waiters_are_paced_in_booking_order(store_url):
    limiter = ratelock.Limiter(store_url)
    key = fresh_key()
    # Paced: the k-th caller acts no sooner than k slots of 0.1 s after the first (a late wake-up only
    # shortens the next wait, it never lets one act early).
    started = time.monotonic()
    for k in range(4):
        booked = limiter.wait(key, "10/second burst 1", max_wait=2)
        assert booked.allowed and booked.retry_after <= 0.1
        assert time.monotonic() - started >= 0.1 * k - 0.005, f"caller {k} acted early"
    assert booked.retry_after > 0
    refused = limiter.reserve(key, "10/second burst 1", max_wait=0)
    assert not refused.allowed and refused.retry_after > 0
    with pytest.raises(ratelock.InvalidArgument, match="counts in windows"):
        limiter.reserve(key, "5/minute using fixed_window", max_wait=1)
    with pytest.raises(ratelock.InvalidArgument, match="max_wait"):
        limiter.reserve(key, "5/minute", max_wait=-1)
    with pytest.raises(ratelock.InvalidArgument, match="shadow"):
        ratelock.Limiter(store_url, shadow=True).reserve(key, "5/minute", max_wait=1)


def test_an_interrupted_wait_gives_its_booking_back(store_url):
    limiter = ratelock.Limiter(store_url)
    key = fresh_key()
    limiter.hit(key, "1/second burst 1")

    def interrupt(signum: int, frame: object) -> None:
        raise TimeoutError("gave up")

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(TimeoutError):
            limiter.wait(key, "1/second burst 1", max_wait=5)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    # The booked slot (a second ahead) was refunded: the next one is under a second away, not two.
    assert limiter.peek(key, "1/second burst 1").retry_after < 1


def test_a_cancelled_asyncio_wait_gives_its_booking_back(store_url):
    async def scenario() -> float:
        limiter = ratelock.asyncio.Limiter(store_url)
        key = fresh_key()
        await limiter.hit(key, "1/second burst 1")
        waiting = asyncio.ensure_future(limiter.wait(key, "1/second burst 1", max_wait=5))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        paced = [(await limiter.wait(key, "20/second burst 1", max_wait=1)).allowed for _ in range(2)]
        assert paced == [True, True]
        return (await limiter.peek(key, "1/second burst 1")).retry_after

    assert asyncio.run(scenario()) < 1


def test_an_interrupted_wait_propagates_as_itself_when_its_refund_fails(caplog):
    # The server goes away during the sleep: the refund fails, and the interruption (not the outage)
    # is what the caller gets, sync and asyncio; the failed refund is logged.
    server = RedisServer()
    try:
        limiter = ratelock.Limiter(server.url, timeout=0.3)
        key = fresh_key()
        limiter.hit(key, "1/second burst 1")

        def interrupt(signum: int, frame: object) -> None:
            server.halt(signal.SIGKILL)
            raise TimeoutError("gave up")

        previous = signal.signal(signal.SIGALRM, interrupt)
        try:
            # Well inside the wait's sleep of about a second, after its booking.
            signal.setitimer(signal.ITIMER_REAL, 0.3)
            with pytest.raises(TimeoutError, match="gave up"):
                limiter.wait(key, "1/second burst 1", max_wait=5)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        assert "booking was not given back" in caplog.text

        server.start_again()

        async def cancelled() -> bool:
            # Another timeout, another store: the first one's breaker stays open for a moment.
            limiter = ratelock.asyncio.Limiter(server.url, timeout=0.4)
            await limiter.hit(key, "1/second burst 1")
            waiting = asyncio.ensure_future(limiter.wait(key, "1/second burst 1", max_wait=5))
            await asyncio.sleep(0.3)  # well inside the wait's sleep, after its booking
            server.halt(signal.SIGKILL)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            return waiting.cancelled()

        assert asyncio.run(cancelled())
    finally:
        server.stop()


def limit_calls(url: "str | None") -> int:
    """The limit calls the Redis at `url` has run (its script, function or module command); 0 for the
    memory store, which makes none."""
    if url is None:
        return 0
    import redis

    stats = redis.Redis.from_url(url).info("commandstats")
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("fcall", "evalsha", "ratelock.limit"))


def test_concurrent_asyncio_waiters_are_served_in_booking_order_with_one_call_each(store_url):
    rules = "10/second burst 1"

    async def scenario() -> "tuple[list[tuple[int, float]], int]":
        limiter = ratelock.asyncio.Limiter(store_url)
        key = fresh_key()
        started = time.monotonic()
        await limiter.hit(key, rules)
        served: "list[tuple[int, float]]" = []

        async def waiter(n: int) -> None:
            decision = await limiter.wait(key, rules, max_wait=2)
            assert decision.allowed
            served.append((n, time.monotonic() - started))

        before = limit_calls(store_url)
        await asyncio.gather(*(waiter(n) for n in range(5)))
        return served, limit_calls(store_url) - before

    served, calls = asyncio.run(scenario())
    # Booked in the order they asked (the n-th a slot n + 1 tenths of a second on), served in that order,
    # none before its slot, and each with the one call that booked it (no polling).
    assert [n for n, _ in served] == list(range(5))
    for n, at in served:
        assert at >= 0.1 * (n + 1) - 0.005, f"waiter {n} acted at {at:.3f} s, before its slot"
    assert calls == (0 if store_url is None else 5)


def test_overrides_from_asyncio_agree_with_sync(store_url):
    key = fresh_key()
    rules = "2/hour using fixed_window"

    async def run() -> None:
        limiter = ratelock.asyncio.Limiter(store_url, prefix="overrides")
        assert (await limiter.hit(key, rules)).limit == 2
        await limiter.set_override(key, "10/hour using fixed_window")
        raised = await limiter.hit(key, rules)
        assert (raised.allowed, raised.limit, raised.remaining) == (True, 10, 8)
        assert await limiter.clear_override(key) and not await limiter.clear_override(key)
        assert (await limiter.peek(key, rules)).limit == 2
        await limiter.set_override(key, "20/hour using fixed_window", ttl=60)

    asyncio.run(run())
    # The sync limiter on the same store and prefix reads the override the asyncio one set.
    if store_url is not None:
        assert ratelock.Limiter(store_url, prefix="overrides").peek(key, rules).limit == 20


def test_an_override_ends_after_its_ttl(store_url):
    limiter = ratelock.Limiter(store_url, prefix="overrides")
    key = fresh_key()
    rules = "2/hour using fixed_window"
    limiter.set_override(key, "10/hour using fixed_window", ttl=0.25)
    assert limiter.hit(key, rules).limit == 10
    time.sleep(0.35)
    # Past its end the rule decides as given again, counting what the override's window spent.
    after = limiter.hit(key, rules)
    assert (after.allowed, after.limit, after.remaining) == (True, 2, 0)
    assert not limiter.clear_override(key), "an override past its end is not there to clear"
