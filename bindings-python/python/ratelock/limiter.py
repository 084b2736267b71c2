"""``ratelock.Limiter``: the native limiter plus ``limit(...)``, a decorator for plain functions that
raises ``RateLimited`` when a call is over the limit, and the key's entry (``block``, ``unblock``,
``deny``, ``allow``, ``clear``), each a call of the native ``change_entry``, and ``wait`` (a
reservation, then a sleep until its slot). ``hit``, ``peek``, ``reset`` and ``reserve`` are the native
methods themselves (no Python layer on the hot path)."""

import functools
import time
from typing import Any, Callable, Optional, TypeVar, Union

from ratelock import _native
from ratelock._native import Decision, RatelockError
from ratelock._interrupted import note_failed_refund

F = TypeVar("F", bound=Callable[..., Any])


class RateLimited(RatelockError):
    """A call was over its limit. ``retry_after`` is the wait in seconds; ``decision`` the full answer."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(f"rate limited by {decision.rule}: retry after {decision.retry_after:.3f} s")
        self.decision = decision
        self.retry_after = decision.retry_after


class Limiter(_native.Limiter):
    """Checks keys against rules: every rule of a key in one round trip, all or nothing.

    Examples:
        >>> limiter = Limiter()
        >>> @limiter.limit("2/minute", key=lambda user: f"report:{user}")
        ... def report(user: str) -> str:
        ...     return "done"
        >>> report("ann"), report("ann")
        ('done', 'done')
        >>> try:
        ...     report("ann")
        ... except RateLimited as limited:
        ...     print(limited.retry_after > 29)
        True
    """

    def limit(
        self,
        rules: str,
        *,
        key: Union[str, Callable[..., Union[str, bytes]], None] = None,
        cost: Union[int, Callable[..., int]] = 1,
    ) -> Callable[[F], F]:
        """Decorates a function so each call takes ``cost`` units of ``rules`` for ``key`` (a string, a
        function of the call's arguments, or by default the function's qualified name)."""

        def decorate(function: F) -> F:
            default_key = f"{function.__module__}.{function.__qualname__}"

            @functools.wraps(function)
            def limited(*args: Any, **kwargs: Any) -> Any:
                which: Union[str, bytes] = default_key if key is None else key if isinstance(key, str) else key(*args, **kwargs)
                units = cost(*args, **kwargs) if callable(cost) else cost
                decision = self.hit(which, rules, units)
                if not decision.allowed:
                    raise RateLimited(decision)
                return function(*args, **kwargs)

            return limited  # type: ignore[return-value]

        return decorate

    def block(self, key: Union[str, bytes], duration: float, *, now_us: Optional[int] = None) -> None:
        """Bans ``key`` for ``duration`` seconds (1 ms to 366 days): every hit and peek is denied with
        ``reason == "ban"``, in every process and language sharing the store. A rule's ``block`` word
        starts the same ban when the rule denies a hit.

        Examples:
            >>> limiter = Limiter()
            >>> limiter.block("abuser", 600)
            >>> limiter.hit("abuser", "100/minute").reason
            'ban'
            >>> limiter.unblock("abuser")
            True
        """
        self.change_entry("block", key, duration, now_us=now_us)

    def unblock(self, key: Union[str, bytes], *, now_us: Optional[int] = None) -> bool:
        """Lifts ``key``'s ban; ``True`` when it had one (a list entry stays)."""
        return self.change_entry("unblock", key, now_us=now_us)

    def deny(self, key: Union[str, bytes], ttl: float, *, now_us: Optional[int] = None) -> None:
        """Puts ``key`` on this prefix's deny list for ``ttl`` seconds: every hit and peek is denied with
        ``reason == "deny_list"``, checked in the same call as the rules."""
        self.change_entry("deny", key, ttl, now_us=now_us)

    def allow(self, key: Union[str, bytes], ttl: float, *, now_us: Optional[int] = None) -> None:
        """Puts ``key`` on this prefix's allow list for ``ttl`` seconds: every hit and peek passes with
        ``reason == "allow_list"`` and spends nothing.

        Examples:
            >>> limiter = Limiter()
            >>> limiter.allow("health-check", 3600)
            >>> [limiter.hit("health-check", "1/minute").allowed for _ in range(3)]
            [True, True, True]
        """
        self.change_entry("allow", key, ttl, now_us=now_us)

    def clear(self, key: Union[str, bytes], *, now_us: Optional[int] = None) -> bool:
        """Takes ``key`` off the deny or allow list; ``True`` when it was on one (a ban stays)."""
        return self.change_entry("clear", key, now_us=now_us)

    def set_override(
        self, key: Union[str, bytes], rules: str, ttl: Optional[float] = None, *, now_us: Optional[int] = None
    ) -> None:
        """Gives ``key`` other limits for its rules of the same windows (a tenant's plan), kept in the store
        and read in the same call as every decision, so it applies on the next request in every process
        and language. Each rule of a later call takes the limit and burst of the first of ``rules`` with
        its algorithm and period, and keeps its state (see the guide's overrides page for how each
        algorithm carries it over). For ``ttl`` seconds, or until ``clear_override``.

        Examples:
            >>> limiter = Limiter()
            >>> limiter.hit("tenant:42", "2/minute using fixed_window", 2).allowed
            True
            >>> limiter.set_override("tenant:42", "10/minute using fixed_window")
            >>> decision = limiter.hit("tenant:42", "2/minute using fixed_window")
            >>> decision.limit, decision.remaining
            (10, 7)
            >>> limiter.clear_override("tenant:42")
            True
        """
        self.change_override(key, rules, ttl, now_us=now_us)

    def clear_override(self, key: Union[str, bytes]) -> bool:
        """Takes ``key``'s override away; ``True`` when it had one."""
        return self.change_override(key)

    def wait(self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, max_wait: float) -> Decision:
        """Reserves the earliest slot within ``max_wait`` seconds (see ``reserve``), then sleeps until it.
        Answers the reservation's decision: allowed when the caller may act now (its ``retry_after`` is
        how long this call slept), or the denial when the slot was further (nothing spent, nothing
        slept). Waiters are served in booking
        order. An exception during the sleep (a ``KeyboardInterrupt``, a timeout signal) gives the
        booking back with ``refund`` before it propagates; it propagates as itself even when the refund
        fails (that failure is logged on the ``ratelock`` logger).

        Examples:
            >>> limiter = Limiter()
            >>> [limiter.wait("job", "20/second burst 1", max_wait=1).allowed for _ in range(3)]
            [True, True, True]
            >>> limiter.wait("job", "20/second burst 1", max_wait=0).allowed
            False
        """
        decision = self.reserve(key, rules, cost, max_wait=max_wait)
        if decision.allowed and decision.retry_after > 0:
            try:
                time.sleep(decision.retry_after)
            except BaseException as interrupted:
                # The interruption propagates as itself, whatever the refund does. A degraded booking
                # (the local fallback's, in memory) is not the store's to refund.
                if not decision.degraded:
                    try:
                        self.refund(key, rules, cost)
                    except Exception as failed:
                        note_failed_refund(interrupted, failed)
                raise
        return decision
