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

from dataclasses import replace
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterable,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypeVar,
    Union,
    cast,
)

from flask import Blueprint, Flask, Request, Response, g, request
from werkzeug.local import LocalProxy

from ratelock._native import Decision
from ratelock.http import Counted, HttpAnswer, HttpLimiter, HttpLimiterOptions, Limit

if TYPE_CHECKING:
    from typing_extensions import Unpack

F = TypeVar("F", bound=Callable[..., Any])
#: What ``limit`` and ``exempt`` mark: a view function, or a blueprint (every view registered through it).
Marked = TypeVar("Marked", bound=Union[Callable[..., Any], Blueprint])
#: Flask's own idiom: functions of no arguments that read ``flask.request``.
KeyFunc = Callable[[], Union[str, bytes, None]]
RulesFunc = Callable[[], str]
#: Called with the decision that refused a request; a ``Response`` it returns is sent instead of the 429.
OnBreach = Callable[[Decision], Optional[Response]]


class _Mark(NamedTuple):
    """A limit put on a view or a blueprint, as ``limit`` was asked for it."""

    limit: Limit
    #: The HTTP methods it counts (None: all).
    methods: Optional[FrozenSet[str]]
    #: Whether ``limit`` was given a scope of its own (else it counts per endpoint).
    scoped: bool
    #: Whether the limits around it (the blueprint's, the default ones) still apply (``override_defaults=False``).
    keeps_defaults: bool
    #: Whether each HTTP method counts on its own (``per_method=True``).
    per_method: bool
    on_breach: Optional[OnBreach]


#: The scope of the application limits: one bucket per key, shared by every view. Its dot keeps it apart
#: from every endpoint's scope (a view named ``application`` shared this bucket when it was the name).
APPLICATION_SCOPE = ".application"

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
    every view not exempted, all views counted together (scope ``".application"``: no view's endpoint
    starts with a dot, so none shares its bucket).

    ``limit`` and ``exempt`` mark the view function itself (by identity, not by name) and return it
    unchanged; the marks are read in a ``before_request`` hook from the function registered for the
    request's endpoint (and the functions it wraps, following ``__wrapped__``). So they work above or
    below ``@app.route``, and two blueprints' views of the same name keep their own marks. Called on a
    ``Blueprint``, they mark every view registered through it (the blueprint itself, under whatever name
    it is registered; a nested blueprint's views are under its parents' marks too).

    ``on_breach(decision)`` is called with the decision of every limit that refuses a request (a limit's
    own ``on_breach`` is called instead where it has one); a ``Response`` it returns is sent instead of
    the 429. It is not called for an outage (a 503, or the 429 of ``on_error="deny"``) or an unusable
    key's 400.

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
        on_breach: Optional[OnBreach] = None,
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
        self.on_breach = on_breach
        self._default_mark = (
            None
            if default_limits is None
            else self._mark(default_limits, None, None, 1, None, default_limits_deduct_when)
        )
        self._application_mark = (
            None
            if application_limits is None
            else self._mark(application_limits, APPLICATION_SCOPE, None, 1, None, application_limits_deduct_when)
        )
        self._exempt: Set[Callable[..., Any]] = set()
        self._limits: Dict[Callable[..., Any], List[_Mark]] = {}
        # Blueprints' marks and exemptions, by the blueprint itself (one registered twice, under
        # another name, is the same blueprint).
        self._blueprint_limits: Dict[Blueprint, List[_Mark]] = {}
        self._exempt_blueprints: Set[Blueprint] = set()
        # Each registered view's marks as `_marks` found them, so a request looks them up once.
        self._found_marks: Dict[Tuple[Optional[Callable[..., Any]], str], Tuple[List[_Mark], bool]] = {}
        # Each mark's limit in each bucket it counted in (`_scoped`), by (mark, endpoint, level, method).
        self._endpoint_limits: Dict[Tuple[int, str, str, str], Limit] = {}
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
        per_method: bool = False,
        scope: Optional[str] = None,
        deduct_when: Optional[Callable[[Response], bool]] = None,
        override_defaults: bool = True,
        on_breach: Optional[OnBreach] = None,
    ) -> Callable[[Marked], Marked]:
        """Decorates a view with its own limit (replacing the default limits for it), above or below its
        route decorator; or, called on a ``Blueprint``, limits every view registered through it (replacing
        the default limits for them, while a view's own limits replace the blueprint's).

        ``rules`` is text or a function answering text (a tenant's plan, say). The bucket is ``scope``
        (default: the view's endpoint) joined to ``key_func()``; ``per_method=True`` counts each HTTP
        method in a bucket of its own. ``methods`` limits only those HTTP methods (``GET`` includes
        ``HEAD``, which Flask answers with the GET view); where none of a view's own limits counts the
        request's method, the blueprint's or the default limits apply instead. Several limits on one
        view are checked from the outermost down, and the first refusal answers.

        ``deduct_when(response)``, as in Flask-Limiter, keeps an allowed request counted only when it
        answers true (count only failed logins: ``lambda response: response.status_code >= 400``); its
        units are given back otherwise, once the response is made. ``override_defaults=False`` keeps the
        limits around this one as well (the blueprint's and the default ones, checked after it).
        ``on_breach(decision)`` is called when this limit refuses (instead of the limiter's
        ``on_breach``); a ``Response`` it returns is sent instead of the 429, with the refusal's headers
        it does not set itself. Bad rule text raises here, when the app is built.

        Examples:
            >>> from flask import Blueprint
            >>> from ratelock.flask import RateLimiter
            >>> limits = RateLimiter(default_limits="100/minute")
            >>> admin = limits.limit("10/minute", per_method=True)(Blueprint("admin", __name__))
            >>> admin.name
            'admin'
        """
        only = frozenset(method.upper() for method in methods) if methods else None
        if only is not None and "GET" in only:
            # Flask answers HEAD by running the GET view: a GET limit that left HEAD out was bypassed.
            only = only | {"HEAD"}
        mark = self._mark(rules, scope, key_func, cost, exempt_when, deduct_when)._replace(
            methods=only, keeps_defaults=not override_defaults, per_method=per_method, on_breach=on_breach
        )

        def decorate(target: Marked) -> Marked:
            if isinstance(target, Blueprint):
                self._blueprint_limits.setdefault(target, []).insert(0, mark)
            else:
                self._limits.setdefault(target, []).insert(0, mark)
            self._found_marks.clear()
            return target

        return decorate

    def exempt(self, target: Marked) -> Marked:
        """Exempts a view, or every view registered through a blueprint (its nested blueprints' too), from
        the default and application limits, and from the limits of the blueprint and those around it
        (above or below its route decorator); a view's own limits, and those of blueprints nested in an
        exempt one, still apply."""
        if isinstance(target, Blueprint):
            self._exempt_blueprints.add(target)
        else:
            self._exempt.add(target)
        self._found_marks.clear()
        return target

    def _mark(
        self,
        rules: Union[str, RulesFunc],
        scope: Optional[str],
        key_func: Optional[KeyFunc],
        cost: Union[int, Callable[[], int]],
        skip: Optional[Callable[[], bool]],
        deduct_when: Optional[Callable[[Response], bool]],
    ) -> _Mark:
        limit = self.http.limit(
            rules if isinstance(rules, str) else (lambda _request: rules()),
            scope=scope or "",
            key_func=_of_request(key_func),
            cost=cost if isinstance(cost, int) else (lambda _request: cost()),
            skip=_of_request(skip),
            deduct_when=deduct_when,
        )
        return _Mark(limit, None, bool(scope), False, False, None)

    def _check_limits(self, app: Flask) -> Optional[Response]:
        # The request behind Flask's proxy, taken once: each read through the proxy costs a lookup.
        current = cast("LocalProxy[Request]", request)._get_current_object()
        endpoint = current.endpoint
        if endpoint is None:
            return None
        marks, exempt = self._marks_of(app.view_functions.get(endpoint), current.method)
        exempt = exempt or endpoint == "static"
        # The view's own limits, then its blueprints' (the innermost first), then the default ones, each
        # level in buckets of its own, named "" for the view's own, by the blueprint's full name, or
        # ".default", which no blueprint's name can be (Flask refuses a dot in one). The first level with
        # a limit that counts the request's method is the last checked, unless all its limits there were
        # put with override_defaults=False.
        levels: List[Tuple[str, Sequence[_Mark]]] = [("", marks)]
        if not exempt and (self._blueprint_limits or self._exempt_blueprints):
            # Looked at only when a blueprint is marked: `request.blueprints` is built on each read.
            for name in current.blueprints:
                blueprint = app.blueprints.get(name)
                if blueprint in self._exempt_blueprints:
                    exempt = True
                    break
                if blueprint in self._blueprint_limits:
                    levels.append((name, self._blueprint_limits[blueprint]))
        if not exempt and self._application_mark is not None:
            refusal = self._check(self._application_mark, endpoint, "", current)
            if refusal is not None:
                return refusal
        if not exempt and self._default_mark is not None:
            levels.append((".default", (self._default_mark,)))
        for name, level in levels:
            replaces = False
            for mark in level:
                if mark.methods is not None and current.method not in mark.methods:
                    continue
                refusal = self._check(mark, endpoint, name, current)
                if refusal is not None:
                    return refusal
                replaces = replaces or not mark.keeps_defaults
            if replaces:
                return None
        return None

    def _marks_of(self, view: Optional[Callable[..., Any]], method: str) -> "Tuple[List[_Mark], bool]":
        """`_marks` of `view` for `method`, found once per view and method (``limit`` and ``exempt``
        forget what was found)."""
        try:
            found = self._found_marks.get((view, method))
        except TypeError:  # an unhashable callable: looked through on every request
            return self._marks(view, method)
        if found is None:
            found = self._found_marks[(view, method)] = self._marks(view, method)
        return found

    def _marks(self, view: Optional[Callable[..., Any]], method: str) -> "Tuple[List[_Mark], bool]":
        """The limits on `view` and on the functions it wraps, outermost first, and whether any is exempt.
        A class-based view's (``View.as_view``) are also those on the handler of `method` (``get`` for
        HEAD without a ``head``) and on the class, as Flask-Limiter users mark a ``MethodView``."""
        limits: List[_Mark] = []
        exempt = False
        targets: List[Any] = [view]
        view_class = getattr(view, "view_class", None)
        if view_class is not None:
            handler = getattr(view_class, method.lower(), None)
            if handler is None and method == "HEAD":
                handler = getattr(view_class, "get", None)
            targets += [handler, view_class]
        for target in targets:
            for _ in range(_MAX_WRAPPED_DEPTH):
                if target is None:
                    break
                try:
                    limits.extend(self._limits.get(target, ()))
                    exempt = exempt or target in self._exempt
                except TypeError:  # an unhashable callable cannot carry a mark
                    pass
                target = getattr(target, "__wrapped__", None)
        return limits, exempt

    def _check(self, mark: _Mark, endpoint: str, level: str, current: Request) -> Optional[Response]:
        limit = self._scoped(mark, endpoint, level, current.method)
        proxy_header = self.http.proxy_header
        forwarded = current.headers.get(proxy_header) if proxy_header else None
        checked = self.http.check(limit, current, peer=current.remote_addr, forwarded=forwarded)
        answer = checked.answer
        if answer is None:
            return None
        # The request's globals behind Flask's proxy, taken once (as the request above).
        store = g._get_current_object()
        decision = checked.decision
        if decision is not None:
            store.ratelock_decision = decision
        if checked.counted is not None:
            store.setdefault("ratelock_counted", []).append((limit, checked.counted))
        if answer.proceed:
            store.ratelock_headers = answer.headers
            return None
        # The refusal carries its own headers: an earlier limit's must not be added over them.
        store.ratelock_headers = None
        on_breach = mark.on_breach or self.on_breach
        # A denial: not an outage's (a degraded decision under on_error="deny").
        if on_breach is not None and decision is not None and not decision.allowed and not decision.degraded:
            chosen = on_breach(decision)
            if chosen is not None:
                for name, value in answer.headers:
                    chosen.headers.setdefault(name, value)
                return chosen
        return refusal(answer)

    def _scoped(self, mark: _Mark, endpoint: str, level: str, method: str) -> Limit:
        """The mark's limit in its bucket: under the view's endpoint (with ``@`` and the level's name for a
        blueprint's or the default limits) when it was given no scope of its own, and under the request's
        method with ``per_method``. Made once per bucket; a request builds no scope text."""
        if mark.scoped and not mark.per_method:
            return mark.limit
        # Flask answers HEAD by running the GET view: a HEAD counts in the GET bucket.
        method = "GET" if method == "HEAD" else method
        found = (id(mark.limit), endpoint, level, method if mark.per_method else "")
        scoped = self._endpoint_limits.get(found)
        if scoped is None:
            scope = mark.limit.scope if mark.scoped else (f"{endpoint}@{level}" if level else endpoint)
            if mark.per_method:
                scope = f"{scope}:{method}"
            scoped = self._endpoint_limits[found] = replace(mark.limit, scope=scope)
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
