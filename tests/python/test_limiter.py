"""The Python Limiter on both stores: decisions, all-or-nothing rules, typed errors for bad input,
and exact admission counts under many threads."""

import math
import threading
import time
import uuid

import pytest

import ratelock


def fresh_key() -> str:
    return f"py:{uuid.uuid4().hex}"


def test_hit_peek_and_reset(store_url):
    limiter = ratelock.Limiter(store_url)
    key = fresh_key()
    first = limiter.hit(key, "2/minute")
    assert first.allowed and first and first.remaining == 1 and first.limit == 2
    assert first.retry_after == 0.0 and 29 < first.reset_after <= 30
    assert limiter.peek(key, "2/minute").remaining == 0
    assert limiter.hit(key, "2/minute").allowed
    denied = limiter.hit(key, "2/minute")
    assert not denied and 29 < denied.retry_after <= 30 and denied.rule == "2/minute"
    limiter.reset(key, "2/minute")
    assert limiter.hit(key, "2/minute").allowed


def test_a_denial_spends_nothing_on_any_rule(store_url):
    limiter = ratelock.Limiter(store_url)
    key = fresh_key()
    rules = "10/second; 2/minute using fixed_window"
    assert limiter.hit(key, rules, 2).allowed
    for _ in range(5):
        denied = limiter.hit(key, rules)
        assert not denied.allowed and denied.rule_index == 1
    assert limiter.peek(key, "10/second").remaining == 7


def test_bytes_and_str_keys_are_the_same_key(store_url):
    limiter = ratelock.Limiter(store_url)
    key = fresh_key()
    assert limiter.hit(key, "1/minute").allowed
    assert not limiter.hit(key.encode(), "1/minute").allowed
    assert limiter.hit(b"\xff\x00{}", "1/minute").allowed


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda l: l.hit("k", "10/fortnight"), ratelock.InvalidRule, "fortnight"),
        (lambda l: l.hit("k", ""), ratelock.InvalidRule, "empty"),
        (lambda l: l.hit("k", "5/second", 6), ratelock.CostExceedsCapacity, "can never be allowed"),
        (lambda l: l.hit("k", "5/second", 0), ratelock.InvalidArgument, "cost"),
        (lambda l: l.hit("k", "5/second", -1), ratelock.InvalidArgument, "cost"),
        (lambda l: l.hit("k", "5/second", 2**70), ratelock.InvalidArgument, "cost"),
        (lambda l: l.hit("k", "5/second", 1.5), ratelock.InvalidArgument, "cost"),
        (lambda l: l.hit("k", "5/second", True), ratelock.InvalidArgument, "cost"),
        (lambda l: l.hit(None, "5/second"), ratelock.InvalidArgument, "key"),
        (lambda l: l.hit(42, "5/second"), ratelock.InvalidArgument, "key"),
        (lambda l: l.hit("k", "5/second", now_us=-5), ratelock.InvalidArgument, "now_us"),
        (lambda l: l.hit("k", "5/second", now_us=2**52 + 1), ratelock.InvalidArgument, "now_us"),
        (lambda l: l.peek("k", "5/second", now_us=2**64 - 1), ratelock.InvalidArgument, "now_us"),
        (lambda l: l.hit("a\ud800", "5/second"), ratelock.InvalidArgument, "key"),
        (lambda l: l.peek("\udfffb", "5/second"), ratelock.InvalidArgument, "key"),
        (lambda l: l.reset("a\ud800", "5/second"), ratelock.InvalidArgument, "key"),
        (lambda l: l.hit("k", "5/second\ud800"), ratelock.InvalidRule, "Unicode"),
        (lambda l: l.hit("k" * (64 * 1024 + 1), "5/second"), ratelock.InvalidArgument, "key.*65536"),
        (lambda l: l.peek(b"k" * (64 * 1024 + 1), "5/second"), ratelock.InvalidArgument, "key.*65536"),
        (lambda l: l.reset("k" * (64 * 1024 + 1), "5/second"), ratelock.InvalidArgument, "key.*65536"),
    ],
)
def test_bad_input_is_a_typed_error_naming_the_problem(store_url, call, error, words):
    limiter = ratelock.Limiter(store_url)
    with pytest.raises(error, match=words):
        call(limiter)
    assert issubclass(error, ratelock.RatelockError)


def test_now_us_up_to_two_to_the_52_and_keys_up_to_64_kib_are_served(store_url):
    limiter = ratelock.Limiter(store_url)
    assert limiter.hit(fresh_key(), "5/second", now_us=2**52).allowed
    assert limiter.hit(fresh_key() + "k" * (64 * 1024 - 40), "5/second").allowed


TEN_MB = 10 * 1024 * 1024


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda l: l.hit("k", "9" * TEN_MB), ratelock.InvalidRule),
        (lambda l: l.hit("k", "10/s using " + "y" * TEN_MB), ratelock.InvalidRule),
        (lambda l: l.hit("k", "5/second", "x" * TEN_MB), ratelock.InvalidArgument),
        (lambda l: l.hit("k", "5/second", now_us="x" * TEN_MB), ratelock.InvalidArgument),
        (lambda l: l.hit("k" * TEN_MB, "5/second"), ratelock.InvalidArgument),
        (lambda l: ratelock.Limiter(on_error="x" * TEN_MB), ratelock.InvalidArgument),
        (lambda l: ratelock.Limiter(clock="x" * TEN_MB), ratelock.InvalidArgument),
        (lambda l: ratelock.Limiter("x" * TEN_MB), ratelock.InvalidArgument),
        (lambda l: ratelock.Semaphore("s", "x" * TEN_MB), ratelock.InvalidArgument),
        (lambda l: ratelock.FairLock("f", ttl="x" * TEN_MB), ratelock.InvalidArgument),
    ],
)
def test_error_messages_quote_a_bounded_excerpt_of_huge_input(store_url, call, error):
    limiter = ratelock.Limiter(store_url)
    with pytest.raises(error) as raised:
        call(limiter)
    assert len(str(raised.value)) < 400, f"a {len(str(raised.value))}-character message"


def test_lock_names_are_checked_like_keys(store_url):
    over = "n" * (64 * 1024 + 1)
    for make in (
        lambda name: ratelock.DistributedLock(name, store_url),
        lambda name: ratelock.Semaphore(name, 2, store_url),
        lambda name: ratelock.FairLock(name, store_url),
        lambda name: ratelock.ReadWriteLock(name, store_url),
    ):
        with pytest.raises(ratelock.InvalidArgument, match="65536"):
            make(over)
        with pytest.raises(ratelock.InvalidArgument, match="`(name|key)`.*surrogate"):
            make("lock\ud800")
    slots = ratelock.ConcurrencyLimiter(2, store_url)
    with pytest.raises(ratelock.InvalidArgument, match="65536"):
        slots.try_slot(over)
    with pytest.raises(ratelock.InvalidArgument, match="surrogate"):
        slots.in_flight("t\udc00")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"timeout": math.nan}, "timeout"),
        ({"timeout": -1}, "timeout"),
        ({"on_error": "ignore"}, "on_error"),
        ({"prefix": "a{b}"}, "prefix"),
        ({"default_algorithm": "magic"}, "magic"),
        ({"clock": "sundial"}, "clock"),
    ],
)
def test_bad_options_are_typed_errors(kwargs, words):
    with pytest.raises(ratelock.RatelockError, match=words):
        ratelock.Limiter(**kwargs)


def test_unreachable_redis_follows_the_failure_policy():
    url = "redis://127.0.0.1:1/"
    limiter = ratelock.Limiter(url, timeout=0.5)  # lazy start: no I/O, no error
    with pytest.raises(ratelock.StoreUnavailable):
        limiter.hit("k", "1/second")
    with pytest.raises(ratelock.StoreUnavailable):
        limiter.ping()


def test_thirty_two_threads_get_exact_admission_counts(store_url):
    limiter = ratelock.Limiter(store_url)
    key = fresh_key()
    admitted = []
    lock = threading.Lock()

    def worker():
        count = sum(1 for _ in range(50) if limiter.hit(key, "300/hour; 250/hour using sliding_log").allowed)
        with lock:
            admitted.append(count)

    threads = [threading.Thread(target=worker) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(admitted) == 250


def test_a_stalled_server_raises_store_timeout(redis_server):
    import socket as sockets

    limiter = ratelock.Limiter(redis_server.url, timeout=0.2)
    assert limiter.hit(fresh_key(), "5/second").allowed
    stall = sockets.create_connection(("127.0.0.1", redis_server.port))
    stall.sendall(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$3\r\n0.6\r\n")
    time.sleep(0.05)  # let the server start sleeping before the hit arrives on its own connection
    try:
        with pytest.raises(ratelock.StoreTimeout):
            limiter.hit(fresh_key(), "5/second")
        allowing = ratelock.Limiter(redis_server.url, timeout=0.2, on_error="allow")
        degraded = allowing.hit(fresh_key(), "5/second")
        assert degraded.allowed and degraded.degraded
    finally:
        stall.recv(64)
        stall.close()


def test_the_exported_bounds_are_the_ones_enforced():
    limiter = ratelock.Limiter()
    assert limiter.hit(b"k" * ratelock.MAX_KEY_BYTES, "5/second").allowed
    with pytest.raises(ratelock.InvalidArgument):
        limiter.hit(b"k" * (ratelock.MAX_KEY_BYTES + 1), "5/second")
    assert limiter.hit("many", "; ".join(f"{n + 1}/second" for n in range(ratelock.MAX_RULES))).allowed
    with pytest.raises(ratelock.InvalidRule):
        limiter.hit("many", "; ".join(f"{n + 1}/second" for n in range(ratelock.MAX_RULES + 1)))
