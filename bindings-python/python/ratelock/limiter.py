"""``ratelock.Limiter``: the native limiter plus ``limit(...)``, a decorator for plain functions that
raises ``RateLimited`` when a call is over the limit. ``hit``, ``peek`` and ``reset`` are the native
methods themselves (no Python layer on the hot path)."""

import functools
from typing import Any, Callable, TypeVar, Union

from ratelock import _native
from ratelock._native import Decision, RatelockError

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

