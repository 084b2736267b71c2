"""Random and hostile input to the public Python API (Hypothesis): every call answers or raises one of
ratelock's typed errors (a `RatelockError`, or `TypeError` for an argument of the wrong Python type),
never another exception, a crash or a hang. Bounded: a fixed number of examples, each with a deadline."""

from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ratelock

ANY_INPUT = settings(max_examples=300, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
RULE_WORDS = st.sampled_from(
    ["10/second", "5/minute", "1/hour", "burst", "using", "gcra", "sliding_log", "token_bucket", ";", "0", "-1",
     "99999999999999999999", "/", "per", "second", "fixed_window", " ", "\x00", "{}", "1e9"]
)
RULE_TEXT = st.one_of(st.text(max_size=60), st.lists(RULE_WORDS, max_size=8).map(" ".join))
KEYS = st.one_of(st.text(max_size=80), st.binary(max_size=80), st.integers(), st.none(), st.floats())
NUMBERS = st.one_of(st.none(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True), st.text(max_size=3))

LIMITER = ratelock.Limiter()


def answers_or_raises_typed(call: Any) -> Optional[object]:
    try:
        return call()
    except (ratelock.RatelockError, TypeError, OverflowError):
        return None


@ANY_INPUT
@given(key=KEYS, rules=RULE_TEXT, cost=NUMBERS, now_us=NUMBERS)
def test_hit_and_peek_answer_or_raise_typed_errors(key: Any, rules: Any, cost: Any, now_us: Any) -> None:
    for method in (LIMITER.hit, LIMITER.peek):
        decision = answers_or_raises_typed(lambda: method(key, rules, cost, now_us=now_us))
        if decision is not None:
            assert isinstance(decision, ratelock.Decision)
            assert 0 <= decision.remaining <= decision.limit


@ANY_INPUT
@given(rules=RULE_TEXT)
def test_rule_text_either_parses_or_names_what_is_wrong(rules: str) -> None:
    try:
        LIMITER.peek("k", rules)
    except ratelock.InvalidRule as error:
        assert "invalid rule" in str(error)
    except ratelock.RatelockError:
        pass


@ANY_INPUT
@given(name=KEYS, ttl=NUMBERS, timeout=NUMBERS, permits=NUMBERS)
def test_lock_kinds_take_any_arguments_without_crashing(name: Any, ttl: Any, timeout: Any, permits: Any) -> None:
    def take_and_give_back(lock: Any) -> None:
        if lock.acquire(blocking=False):
            lock.release()

    kinds = (
        (lambda: ratelock.DistributedLock(name, ttl=ttl, timeout=timeout), take_and_give_back),
        (lambda: ratelock.Semaphore(name, permits, ttl=ttl), take_and_give_back),
        (lambda: ratelock.FairLock(name, ttl=ttl, waiter_ttl=timeout), take_and_give_back),
        (lambda: ratelock.ReadWriteLock(name, ttl=ttl), lambda lock: lock.state()),
    )
    for make, use in kinds:
        lock = answers_or_raises_typed(make)
        if lock is not None:
            answers_or_raises_typed(lambda: use(lock))


def test_limiter_options_out_of_range_name_the_argument() -> None:
    """`instances` of 0, -1 or 2**64 and a timeout no call can meet are refused when the limiter is made
    (they were accepted, or raised a bare OverflowError), with a message that names the argument and
    shows a huge number as a bounded excerpt."""
    for instances in (0, -1, 2**64, 2**32, True):
        try:
            ratelock.Limiter(instances=instances)
        except ratelock.InvalidArgument as err:
            assert "`instances`" in str(err)
        else:
            raise AssertionError(f"instances={instances!r} was accepted")
    assert ratelock.Limiter(instances=2**32 - 1) is not None
    for timeout in (1e-12, 0.0009):
        try:
            ratelock.Limiter(timeout=timeout)
        except ratelock.InvalidArgument as err:
            assert "timeout" in str(err)
        else:
            raise AssertionError(f"timeout={timeout!r} was accepted")
    try:
        ratelock.Limiter(timeout=1e308)
    except ratelock.InvalidArgument as err:
        assert len(str(err)) < 200, str(err)
    else:
        raise AssertionError("timeout=1e308 was accepted")


@pytest.mark.parametrize(
    "url, unknown",
    [
        ("redis://127.0.0.1:1/?sever_code=lua", "sever_code"),
        ("redis://127.0.0.1:1/?protocol=resp2&timeout=5", "timeout"),
        ("redis+cluster://127.0.0.1:1,127.0.0.1:2?protocol=resp3", "protocol"),
        ("redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3?db=1", "db"),
    ],
)
def test_a_url_parameter_its_scheme_does_not_take_is_named(url: str, unknown: str) -> None:
    with pytest.raises(ratelock.InvalidArgument, match=f"`{unknown}`"):
        if url.startswith("redlock://"):
            ratelock.DistributedLock("job", url).try_acquire()
        else:
            ratelock.Limiter(url, on_error="allow")
