"""FairLock and ReadWriteLock arguments from Python: bad values and wrong types are the typed
InvalidArgument naming the argument (sync and asyncio), and the docstring examples run."""

import asyncio

import pytest

import ratelock
import ratelock.asyncio

BAD_OPTIONS = [
    ({"ttl": -1}, "ttl"),
    ({"ttl": 0.001}, "ttl"),
    ({"ttl": float("nan")}, "ttl"),
    ({"ttl": "10"}, "ttl"),
    ({"ttl": True}, "ttl"),
    ({"waiter_ttl": 0.005}, "waiter_ttl"),
    ({"waiter_ttl": -5}, "waiter_ttl"),
    ({"waiter_ttl": [5]}, "waiter_ttl"),
    ({"auto_renew": 1}, "auto_renew"),
    ({"prefix": 7}, "prefix"),
    ({"prefix": "a{b"}, "prefix"),
    ({"timeout": "soon"}, "timeout"),
]


@pytest.mark.parametrize("kind", [ratelock.FairLock, ratelock.ReadWriteLock])
@pytest.mark.parametrize(("options", "argument"), BAD_OPTIONS)
def test_bad_options_are_typed_errors_naming_the_argument(kind, options, argument):
    with pytest.raises(ratelock.InvalidArgument, match=f"`{argument}`"):
        kind("x", **options)


@pytest.mark.parametrize("kind", [ratelock.asyncio.FairLock, ratelock.asyncio.ReadWriteLock])
@pytest.mark.parametrize(("options", "argument"), BAD_OPTIONS[:6])
def test_async_bad_options_fail_on_first_use(kind, options, argument):
    async def first_use() -> None:
        await kind("x", **options).state()

    with pytest.raises(ratelock.InvalidArgument, match=f"`{argument}`"):
        asyncio.run(first_use())


def test_other_bad_arguments_are_typed_errors():
    with pytest.raises(ratelock.InvalidArgument, match="`prefer_writers`"):
        ratelock.ReadWriteLock("x", prefer_writers="yes")
    for kind in (ratelock.FairLock, ratelock.ReadWriteLock):
        with pytest.raises(ratelock.InvalidArgument, match="`name`"):
            kind(42)
        with pytest.raises(ratelock.InvalidArgument, match="`url`"):
            kind("x", 5)
    with pytest.raises(ratelock.InvalidArgument, match="`timeout`"):
        ratelock.FairLock("x").acquire(timeout=-2)  # -1 is threading's "no limit"; other negatives are refused
    rw = ratelock.ReadWriteLock("args:rw")
    for acquire in (rw.acquire_read, rw.acquire_write):
        with pytest.raises(ratelock.InvalidArgument, match="`timeout`"):
            acquire(timeout="soon")
    with rw.acquire_read() as hold:
        with pytest.raises(ratelock.InvalidArgument, match="`ttl`"):
            hold.extend(-2)
        with pytest.raises(ratelock.InvalidArgument, match="`ttl`"):
            hold.extend("long")
        with pytest.raises(ratelock.InvalidArgument, match="`timeout`"):
            hold.wait_lost(timeout=float("inf"))
