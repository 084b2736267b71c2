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

import functools
import math
import time
from typing import Any, Callable, Iterable, Literal, Optional, Set, TypeVar, Union

from flask import Flask, Response, current_app, g, jsonify, request

from ratelock._native import Client, Decision
from ratelock.limiter import Limiter

F = TypeVar("F", bound=Callable[..., Any])
KeyFunc = Callable[[], Union[str, bytes]]


def remote_address() -> str:
    """The default key: the client's address as Flask sees it."""
    return request.remote_addr or "unknown"


class RateLimiter:
    """Limits Flask views. ``default_limits`` apply to every view not exempted or limited itself."""

    def __init__(
        self,
        app: Optional[Flask] = None,
        *,
        url: Union[str, Client, None] = None,
        default_limits: Optional[str] = None,
        key_func: KeyFunc = remote_address,
        headers: bool = True,
        prefix: str = "rl",
        on_error: Literal["raise", "allow", "deny"] = "raise",
        timeout: float = 1.0,
        limiter: Optional[Limiter] = None,
    ) -> None:
        self.limiter = limiter or Limiter(url, prefix=prefix, on_error=on_error, timeout=timeout)
        self.default_limits = default_limits
        self.key_func = key_func
        self.headers = headers
        self._exempt: Set[str] = set()
        self._limited: Set[str] = set()
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Registers the default limits and the response headers on `app`."""
        app.extensions["ratelock"] = self
        app.before_request(self._check_default_limits)
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
        """Decorates a view with its own limit (replacing the default limits for it). The key is
        ``<scope or endpoint>:<key_func()>``; ``methods`` limits only those HTTP methods."""
        only = {method.upper() for method in methods} if methods else None

        def decorate(view: F) -> F:
            self._limited.add(view.__name__)

            @functools.wraps(view)
            def limited(*args: Any, **kwargs: Any) -> Any:
                if (only is None or request.method in only) and not (exempt_when and exempt_when()):
                    name = scope or request.endpoint or view.__name__
                    rejection = self._check(name, rules, key_func or self.key_func, cost)
                    if rejection is not None:
                        return rejection
                return view(*args, **kwargs)

            return limited  # type: ignore[return-value]

        return decorate

    def exempt(self, view: F) -> F:
        """Exempts a view from the default limits."""
        self._exempt.add(view.__name__)
        return view

    def _check_default_limits(self) -> Optional[Response]:
        if not self.default_limits or request.endpoint is None:
            return None
        view = current_app.view_functions.get(request.endpoint)
        name = getattr(view, "__name__", request.endpoint)
        if name in self._exempt or name in self._limited or request.endpoint == "static":
            return None
        return self._check("default", self.default_limits, self.key_func, 1)

    def _check(
        self, name: str, rules: str, key_func: KeyFunc, cost: Union[int, Callable[[], int]]
    ) -> Optional[Response]:
        key = key_func()
        key_text = key.decode("utf-8", "replace") if isinstance(key, bytes) else key
        units = cost() if callable(cost) else cost
        decision = self.limiter.hit(f"{name}:{key_text}", rules, units)
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
