"""``ratelock.flask``: rate limits for Flask views on the adapter core (``ratelock.http``), one round trip
per limit. A refused request gets the core's answer (429 with ``Retry-After`` and the chosen body); every
limited response carries the chosen rate-limit headers (the latest IETF draft by default).

    from flask import Flask, request
    from ratelock.flask import RateLimiter

    app = Flask(__name__)
    rl = RateLimiter(app, default_limits="100/minute", application_limits="5000/hour")

    @app.get("/login")
    @rl.limit("5/minute", key_func=lambda: request.form["user"])
    def login(): ...
"""

from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple, TypeVar, Union, cast

from flask import Flask, Request, Response, g, request
from werkzeug.local import LocalProxy

from ratelock._native import Decision
from ratelock.http import Counted, HttpAnswer, HttpLimiter, HttpLimiterOptions, Limit

if TYPE_CHECKING:
    from typing_extensions import Unpack

F = TypeVar("F", bound=Callable[..., Any])
#: Flask's own idiom: functions of no arguments that read ``flask.request``.
KeyFunc = Callable[[], Union[str, bytes, None]]
RulesFunc = Callable[[], str]

#: A limit on a view: the limit, the HTTP methods it applies to (None: all), its own scope if given, and
#: whether the default limits still apply to the view (``override_defaults=False``).
_Mark = Tuple[Limit, Optional[FrozenSet[str]], Optional[str], bool]

#: The scope of the application limits: one bucket per key, shared by every view.
APPLICATION_SCOPE = "application"

#: How many ``__wrapped__`` layers of a registered view are searched for marks.
_MAX_WRAPPED_DEPTH = 32


def remote_address() -> str:
    """The client's address as Flask sees it (``request.remote_addr``)."""
    return request.remote_addr or "unknown"


def _of_request(function: Optional[Callable[[], Any]]) -> Optional[Callable[[Any], Any]]:
    """A Flask function of no arguments as the adapter core's function of the request."""
    return None if function is None else (lambda _request: function())


class RateLimiter:
    """Limits Flask views. ``default_limits`` apply to every view not exempted or limited itself, each view
    counted on its own (as Flask-Limiter's default limits are: per route); ``application_limits`` apply to
    every view not exempted, all views counted together (scope ``"application"``).

    ``limit`` and ``exempt`` mark the view function itself (by identity, not by name) and return it
    unchanged; the marks are read in a ``before_request`` hook from the function registered for the
    request's endpoint (and the functions it wraps, following ``__wrapped__``). So they work above or
    below ``@app.route``, and two blueprints' views of the same name keep their own marks.

    The default key is the client address (``ratelock.http.ClientAddress``: IPv6 by /56, IPv4-mapped
    folded, ``X-Forwarded-For`` read only through ``trusted_proxies``). Under ``on_error="raise"`` a store
    outage answers 503; ``allow`` and ``deny`` answer as the limiter decides (``g.ratelock_decision``
    says ``degraded``). The other keywords (``url``, ``limiter``, ``prefix``, ``on_error``, ``timeout``,
    ``instances`` and the answer and client-address options) are ``HttpLimiter``'s, listed in
    ``ratelock.http.HttpLimiterOptions``."""

    def __init__(
        self,
        app: Optional[Flask] = None,
        *,
        default_limits: Union[str, RulesFunc, None] = None,
        default_limits_deduct_when: Optional[Callable[[Response], bool]] = None,
        application_limits: Union[str, RulesFunc, None] = None,
        application_limits_deduct_when: Optional[Callable[[Response], bool]] = None,
        key_func: Optional[KeyFunc] = None,
        skip: Optional[Callable[[], bool]] = None,
        **options: "Unpack[HttpLimiterOptions]",
    ) -> None:
        # No I/O here (lazy start): an app boots while Redis is down, and its first requests follow
        # ``on_error``. Call ``self.limiter.ping()`` to fail at boot instead.
        self.http = HttpLimiter(
            key_func=_of_request(key_func),
            skip=_of_request(skip),
            **options,
        )
        self.limiter = self.http.limiter
        self.default_limit = (
            None
            if default_limits is None
            else self._limit(default_limits, "", None, 1, None, default_limits_deduct_when)
        )
        self.application_limit = (
            None
            if application_limits is None
            else self._limit(application_limits, APPLICATION_SCOPE, None, 1, None, application_limits_deduct_when)
        )
        self._exempt: Set[Callable[..., Any]] = set()
        self._limits: Dict[Callable[..., Any], List[_Mark]] = {}
        # Each registered view's marks as `_marks` found them, so a request looks them up once.
        self._found_marks: Dict[Optional[Callable[..., Any]], Tuple[List[_Mark], bool]] = {}
        self._endpoint_limits: Dict[Tuple[int, str], Limit] = {}
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Registers the view limits, the default limits and the response headers on `app`."""
        app.extensions["ratelock"] = self

        # The hook holds its app: reading `current_app` on every request costs a context lookup. A plain
        # function rather than a `functools.partial`: Flask asks on every request whether a hook is a
        # coroutine function, and a partial costs that question twice as much to answer.
        def check_limits() -> Optional[Response]:
            return self._check_limits(app)

        app.before_request(check_limits)
        app.after_request(self._add_headers)
        app.teardown_request(self._settle_unanswered)

    def limit(
        self,
        rules: Union[str, RulesFunc],
        *,
        key_func: Optional[KeyFunc] = None,
        cost: Union[int, Callable[[], int]] = 1,
        exempt_when: Optional[Callable[[], bool]] = None,
        methods: Optional[Iterable[str]] = None,
        scope: Optional[str] = None,
        deduct_when: Optional[Callable[[Response], bool]] = None,
        override_defaults: bool = True,
    ) -> Callable[[F], F]:
        """Decorates a view with its own limit (replacing the default limits for it), above or below its
        route decorator. ``rules`` is text or a function answering text (a tenant's plan, say). The bucket is
        ``scope`` (default: the view's endpoint) joined to ``key_func()``; ``methods`` limits only those HTTP
        methods (``GET`` includes ``HEAD``, which Flask answers with the GET view). Several limits on one view are checked from the outermost down, and the first refusal
        answers. ``deduct_when(response)``, as in Flask-Limiter, keeps an allowed request counted only when
        it answers true (count only failed logins: ``lambda response: response.status_code >= 400``); its
        units are given back otherwise, once the response is made. ``override_defaults=False`` keeps the
        default limits on the view as well (checked after its own). Bad rule text raises here, when the app
        is built."""
        only = frozenset(method.upper() for method in methods) if methods else None
        if only is not None and "GET" in only:
            # Flask answers HEAD by running the GET view: a GET limit that left HEAD out was bypassed.
            only = only | {"HEAD"}
        mark = self._limit(rules, scope or "", key_func, cost, exempt_when, deduct_when)

        def decorate(view: F) -> F:
            self._limits.setdefault(view, []).insert(0, (mark, only, scope, not override_defaults))
            self._found_marks.clear()
            return view

        return decorate

    def exempt(self, view: F) -> F:
        """Exempts a view from the default and application limits (above or below its route decorator); its
        own limits still apply."""
        self._exempt.add(view)
        self._found_marks.clear()
        return view

    def _limit(
        self,
        rules: Union[str, RulesFunc],
        scope: str,
        key_func: Optional[KeyFunc],
        cost: Union[int, Callable[[], int]],
        skip: Optional[Callable[[], bool]],
        deduct_when: Optional[Callable[[Response], bool]],
    ) -> Limit:
        return self.http.limit(
            rules if isinstance(rules, str) else (lambda _request: rules()),
            scope=scope,
            key_func=_of_request(key_func),
            cost=cost if isinstance(cost, int) else (lambda _request: cost()),
            skip=_of_request(skip),
            deduct_when=deduct_when,
        )

    def _check_limits(self, app: Flask) -> Optional[Response]:
        # The request behind Flask's proxy, taken once: each read through the proxy costs a lookup.
        current = cast("LocalProxy[Request]", request)._get_current_object()
        endpoint = current.endpoint
        if endpoint is None:
            return None
        marks, exempt = self._marks_of(app.view_functions.get(endpoint))
        limited = not exempt and endpoint != "static"
        if limited and self.application_limit is not None:
            refusal = self._check(self.application_limit, current)
            if refusal is not None:
                return refusal
        with_defaults = not marks
        for mark, only, scope, keeps_defaults in marks:
            with_defaults = with_defaults or keeps_defaults
            if only is not None and current.method not in only:
                continue
            refusal = self._check(mark if scope else self._scoped(mark, endpoint), current)
            if refusal is not None:
                return refusal
        if not with_defaults or not limited or self.default_limit is None:
            return None
        return self._check(self._scoped(self.default_limit, endpoint), current)

    def _marks_of(self, view: Optional[Callable[..., Any]]) -> "Tuple[List[_Mark], bool]":
        """`_marks` of `view`, found once per view (``limit`` and ``exempt`` forget what was found)."""
        try:
            found = self._found_marks.get(view)
        except TypeError:  # an unhashable callable: looked through on every request
            return self._marks(view)
        if found is None:
            found = self._found_marks[view] = self._marks(view)
        return found

    def _marks(self, view: Optional[Callable[..., Any]]) -> "Tuple[List[_Mark], bool]":
        """The limits on `view` and on the functions it wraps, outermost first, and whether any is exempt."""
        limits: List[_Mark] = []
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

    def _check(self, limit: Limit, current: Request) -> Optional[Response]:
        proxy_header = self.http.proxy_header
        forwarded = current.headers.get(proxy_header) if proxy_header else None
        checked = self.http.check(limit, current, peer=current.remote_addr, forwarded=forwarded)
        answer = checked.answer
        if answer is None:
            return None
        # The request's globals behind Flask's proxy, taken once (as the request above).
        store = g._get_current_object()
        if checked.decision is not None:
            store.ratelock_decision = checked.decision
        if checked.counted is not None:
            store.setdefault("ratelock_counted", []).append((limit, checked.counted))
        if answer.proceed:
            store.ratelock_headers = answer.headers
            return None
        # The refusal carries its own headers: an earlier limit's must not be added over them.
        store.ratelock_headers = None
        return refusal(answer)

    def _scoped(self, limit: Limit, endpoint: str) -> Limit:
        """`limit` under the view's endpoint, when it was given no scope of its own (made once)."""
        scoped = self._endpoint_limits.get((id(limit), endpoint))
        if scoped is None:
            scoped = Limit(limit.rules, endpoint, limit.key_func, limit.cost, limit.skip, limit.deduct_when)
            self._endpoint_limits[(id(limit), endpoint)] = scoped
        return scoped

    def _add_headers(self, response: Response) -> Response:
        """Adds the check's headers to the app's response, and gives back what a ``deduct_when`` does not
        count (Flask runs this for a view's error response too)."""
        store = g._get_current_object()
        headers: Optional[List[Tuple[str, str]]] = store.pop("ratelock_headers", None)
        if headers:
            for name, value in headers:
                response.headers[name] = value
        counted: List[Tuple[Limit, Counted]] = store.pop("ratelock_counted", [])
        for limit, spent in counted:
            self.http.settle(limit, spent, response)
        return response

    def _settle_unanswered(self, _error: Optional[BaseException]) -> None:
        """Settles, as a 500, what no response settled: an error Flask lets propagate (``TESTING``,
        ``PROPAGATE_EXCEPTIONS``, debug) or an ``after_request`` hook that raised skips ``_add_headers``."""
        counted: List[Tuple[Limit, Counted]] = g._get_current_object().pop("ratelock_counted", [])
        for limit, spent in counted:
            self.http.settle(limit, spent, Response(status=500))


def refusal(answer: HttpAnswer) -> Response:
    """The Flask response of a refusal (a denial, an outage's 503, an unusable key's 400)."""
    response = Response(answer.body, status=answer.status, content_type=answer.content_type)
    for name, value in answer.headers:
        response.headers[name] = value
    return response


def current_decision() -> Optional[Decision]:
    """The decision of the current request's last checked limit, if any."""
    decision: Optional[Decision] = g.get("ratelock_decision")
    return decision


__all__ = ["RateLimiter", "current_decision", "refusal", "remote_address"]
