"""``ratelock.flask``: rate limits for Flask views, with one round trip per request. Rejections answer
429 with ``Retry-After``; every limited response carries ``RateLimit``/``RateLimit-Policy`` (IETF draft)
and ``X-RateLimit-Limit/-Remaining/-Reset`` headers, all from the same single decision.

    from flask import Flask
    from ratelock.flask import RateLimiter

    app = Flask(__name__)
    rl = RateLimiter(app, default_limits="100/minute")

    @app.get("/login")
    @rl.limit("5/minute", key_func=lambda: request.form["user"])
    def login(): ...
"""

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Literal, Optional, Set, TypeVar, Union

from flask import Flask, Response, current_app, g, jsonify, request

from ratelock._native import Client, Decision
from ratelock.limiter import Limiter

F = TypeVar("F", bound=Callable[..., Any])
KeyFunc = Callable[[], Union[str, bytes]]

#: How many ``__wrapped__`` layers of a registered view are searched for marks.
_MAX_WRAPPED_DEPTH = 32


def remote_address() -> str:
    """The default key: the client's address as Flask sees it."""
    return request.remote_addr or "unknown"


@dataclass(frozen=True)
class _Limit:
    """One ``limit(...)`` placed on a view."""

    rules: str
    key_func: Optional[KeyFunc]
    cost: Union[int, Callable[[], int]]
    exempt_when: Optional[Callable[[], bool]]
    only: Optional[FrozenSet[str]]
    scope: Optional[str]


class RateLimiter:
    """Limits Flask views. ``default_limits`` apply to every view not exempted or limited itself.

    ``limit`` and ``exempt`` mark the view function itself (by identity, not by name) and return it
    unchanged; the marks are read in a ``before_request`` hook from the function registered for the
    request's endpoint (and the functions it wraps, following ``__wrapped__``). So they work above or
    below ``@app.route``, and two blueprints' views of the same name keep their own marks."""

    def __init__(
        self,
        app: Optional[Flask] = None,
        *,
        url: Union[str, Client, None] = None,
        default_limits: Optional[str] = None,
        key_func: KeyFunc = remote_address,
        headers: bool = True,
        prefix: str = "rl",
        on_error: Literal["raise", "allow", "deny", "local"] = "raise",
        timeout: float = 1.0,
        instances: int = 1,
        limiter: Optional[Limiter] = None,
    ) -> None:
        # No I/O here (lazy start): an app boots while Redis is down, and its first requests follow
        # ``on_error``. Call ``self.limiter.ping()`` to fail at boot instead.
        self.limiter = limiter or Limiter(
            url, prefix=prefix, on_error=on_error, timeout=timeout, instances=instances
        )
        self.default_limits = default_limits
        self.key_func = key_func
        self.headers = headers
        self._exempt: Set[Callable[..., Any]] = set()
        self._limits: Dict[Callable[..., Any], List[_Limit]] = {}
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Registers the view limits, the default limits and the response headers on `app`."""
        app.extensions["ratelock"] = self
        app.before_request(self._check_limits)
        app.after_request(self._add_headers)

    def limit(
        self,
        rules: str,
        *,
        key_func: Optional[KeyFunc] = None,
        cost: Union[int, Callable[[], int]] = 1,
        exempt_when: Optional[Callable[[], bool]] = None,
        methods: Optional[Iterable[str]] = None,
        scope: Optional[str] = None,
    ) -> Callable[[F], F]:
        """Decorates a view with its own limit (replacing the default limits for it), above or below
        its route decorator. The key is ``<scope or endpoint>:<key_func()>`` (bytes when ``key_func``
        answers bytes); ``methods`` limits only those HTTP methods. Several limits on one view are
        checked from the outermost down, and the first rejection answers."""
        only = frozenset(method.upper() for method in methods) if methods else None
        mark = _Limit(rules, key_func, cost, exempt_when, only, scope)

        def decorate(view: F) -> F:
            self._limits.setdefault(view, []).insert(0, mark)
            return view

        return decorate

    def exempt(self, view: F) -> F:
        """Exempts a view from the default limits (above or below its route decorator)."""
        self._exempt.add(view)
        return view

    def _check_limits(self) -> Optional[Response]:
        endpoint = request.endpoint
        if endpoint is None:
            return None
        limits, exempt = self._marks(current_app.view_functions.get(endpoint))
        if limits:
            for mark in limits:
                if mark.only is not None and request.method not in mark.only:
                    continue
                if mark.exempt_when is not None and mark.exempt_when():
                    continue
                rejection = self._check(mark.scope or endpoint, mark.rules, mark.key_func or self.key_func, mark.cost)
                if rejection is not None:
                    return rejection
            return None
        if not self.default_limits or exempt or endpoint == "static":
            return None
        return self._check("default", self.default_limits, self.key_func, 1)

    def _marks(self, view: Optional[Callable[..., Any]]) -> "tuple[List[_Limit], bool]":
        """The limits on `view` and on the functions it wraps, outermost first, and whether any is exempt."""
        limits: List[_Limit] = []
        exempt = False
        for _ in range(_MAX_WRAPPED_DEPTH):
            if view is None:
                break
            try:
                limits.extend(self._limits.get(view, ()))
                exempt = exempt or view in self._exempt
            except TypeError:  # an unhashable callable cannot carry a mark
                pass
            view = getattr(view, "__wrapped__", None)
        return limits, exempt

    def _check(
        self, name: str, rules: str, key_func: KeyFunc, cost: Union[int, Callable[[], int]]
    ) -> Optional[Response]:
        key = key_func()
        # Bytes keys stay bytes: decoding them would let two invalid UTF-8 keys share one bucket.
        full_key = f"{name}:".encode() + key if isinstance(key, bytes) else f"{name}:{key}"
        units = cost() if callable(cost) else cost
        decision = self.limiter.hit(full_key, rules, units)
        g.ratelock_decision = decision
        if decision.allowed:
            return None
        response = jsonify(error="rate limited", rule=decision.rule, retry_after=decision.retry_after)
        response.status_code = 429
        response.headers["Retry-After"] = str(max(1, math.ceil(decision.retry_after)))
        return response

    def _add_headers(self, response: Response) -> Response:
        decision: Optional[Decision] = g.pop("ratelock_decision", None)
        if decision is not None and self.headers:
            for header, value in rate_limit_headers(decision).items():
                response.headers[header] = value
        return response


def rate_limit_headers(decision: Decision) -> "dict[str, str]":
    """The IETF draft and X-RateLimit headers of one decision."""
    reset = max(0, math.ceil(decision.reset_after))
    window = max(1, math.ceil(decision.period))
    return {
        "RateLimit": f"limit={decision.limit}, remaining={decision.remaining}, reset={reset}",
        "RateLimit-Policy": f"{decision.limit};w={window}",
        "X-RateLimit-Limit": str(decision.limit),
        "X-RateLimit-Remaining": str(decision.remaining),
        "X-RateLimit-Reset": str(math.ceil(time.time() + decision.reset_after)),
    }


__all__ = ["RateLimiter", "rate_limit_headers", "remote_address"]
