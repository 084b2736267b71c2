"""``ratelock.fastapi``: per-route limits as FastAPI dependencies, on the adapter core (``ratelock.http``)
and the asyncio limiter.

    from fastapi import Depends, FastAPI
    from ratelock.fastapi import RateLimiter

    app = FastAPI()
    limiter = RateLimiter(app, url="redis://localhost")

    @app.get("/search", dependencies=[Depends(limiter.limit("3/minute"))])
    async def search(): ...

    @app.get("/report")
    async def report(decision: Decision = Depends(limiter.limit("10/hour", cost=5))):
        return {"remaining": decision.remaining}

A refused request raises ``Refused`` (an ``HTTPException``); with the app given to ``RateLimiter`` (or
``install(app)``) it is answered with the core's exact body, headers and status, and an allowed one's
rate-limit headers reach every response, also one the endpoint returns itself (FastAPI copies a
dependency's headers only onto the responses it builds). For limits on every route,
``ratelock.starlette.RateLimitMiddleware`` works in FastAPI apps as well.
"""

from typing import TYPE_CHECKING, Any, Callable, Dict, List, MutableMapping, Optional, Tuple, Union

from fastapi import FastAPI, HTTPException, Request, Response
from starlette.requests import HTTPConnection

from ratelock._native import Decision
from ratelock.http import Counted, HttpAnswer, HttpLimiter, HttpLimiterOptions, Limit, Maybe
from ratelock.starlette import route_name, recording_start, settle_started, with_headers

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: The request state's entry holding the headers of the latest allowed check, for ``HeadersOnEveryResponse``.
_HEADERS = "ratelock_headers"
#: The request state's entry holding what its checks spent that a ``deduct_when`` may give back.
_COUNTED = "ratelock_counted"


class Refused(HTTPException):
    """A request the limiter refused (429, or 503 for an outage, 400 for an unusable key)."""

    def __init__(self, answer: HttpAnswer) -> None:
        super().__init__(status_code=answer.status, detail=answer.body.strip(), headers=dict(answer.headers))
        self.answer = answer


def refused_response(_request: Request, error: Exception) -> Response:
    """The exception handler of ``Refused``: the core's body, content type, headers and status."""
    assert isinstance(error, Refused)
    answer = error.answer
    return Response(answer.body, status_code=answer.status, headers=dict(answer.headers), media_type=answer.content_type)


class RateLimiter:
    """Makes limit dependencies for one app. ``key_func(request)`` and ``skip(request)`` (sync or async)
    are the defaults of every limit; the other keywords build the ``HttpLimiter`` (see there)."""

    def __init__(
        self,
        app: Optional[FastAPI] = None,
        *,
        key_func: Optional[Callable[[Request], Maybe]] = None,
        skip: Optional[Callable[[Request], Maybe]] = None,
        **options: "Unpack[HttpLimiterOptions]",
    ) -> None:
        self.http = HttpLimiter(
            async_limiter=True,
            key_func=key_func,
            skip=skip,
            **options,
        )
        self.limiter = self.http.limiter
        if app is not None:
            self.install(app)

    def install(self, app: FastAPI) -> None:
        """Answers ``Refused`` with the core's exact response in `app`, and puts an allowed request's
        rate-limit headers on whatever response the endpoint gives (``HeadersOnEveryResponse``). Once per
        app: a second ``RateLimiter`` given the same app shares the first one's middleware. Before the app
        starts (Starlette takes no middleware after)."""
        app.add_exception_handler(Refused, refused_response)
        if not any(getattr(middleware, "cls", None) is HeadersOnEveryResponse for middleware in app.user_middleware):
            app.add_middleware(HeadersOnEveryResponse)

    def limit(
        self,
        rules: Union[str, Callable[[Request], Maybe]],
        *,
        key_func: Optional[Callable[[Request], Maybe]] = None,
        cost: Union[int, Callable[[Request], Maybe]] = 1,
        scope: Optional[str] = None,
        skip: Optional[Callable[[Request], Maybe]] = None,
        deduct_when: Optional[Callable[[Response], Maybe]] = None,
    ) -> Callable[..., Any]:
        """A dependency that checks `rules` (text, or a function of the request answering text) and
        answers the ``Decision`` (None when skipped). The bucket is ``scope`` (default: the route's endpoint
        function) joined to the request's key. ``deduct_when(response)`` (sync or async; Flask-Limiter's
        name) keeps an allowed request counted only when it answers true for the response (its status and
        headers; a 500 when the endpoint raised), with the app installed (``install``); otherwise the
        units are given back once the request is answered. Bad rule text raises here, when the app is
        built. On a websocket route (a dependency of the whole app reaches them too) it checks nothing
        and answers None: a websocket has no HTTP response to refuse with."""
        base = self.http.limit(rules, scope=scope or "", key_func=key_func, cost=cost, skip=skip, deduct_when=deduct_when)
        limits: Dict[str, Any] = {}
        http = self.http

        async def rate_limit(request: HTTPConnection, response: Response) -> Optional[Decision]:
            if request.scope["type"] != "http":
                return None
            limit = base
            if scope is None:
                name = _endpoint_name(request)
                limit = limits.get(name) or limits.setdefault(
                    name, http.limit(rules, scope=name, key_func=key_func, cost=cost, skip=skip, deduct_when=deduct_when)
                )
            # Every line of the header, joined: a proxy that adds its own line after the client's would
            # otherwise leave the client's, which the client chose, as the one read.
            lines = request.headers.getlist(http.proxy_header) if http.proxy_header else []
            forwarded = ", ".join(lines) if lines else None
            client = request.client
            checked = await http.check_async(limit, request, peer=client.host if client else None, forwarded=forwarded)
            answer = checked.answer
            if answer is None:
                return None
            if checked.decision is not None:
                request.state.rate_limit = checked.decision
            if not answer.proceed:
                raise Refused(answer)
            if checked.counted is not None:
                counted: List[Tuple[HttpLimiter, Limit, Counted]] = getattr(request.state, _COUNTED, [])
                counted.append((http, limit, checked.counted))
                setattr(request.state, _COUNTED, counted)
            for name, value in answer.headers:
                response.headers[name] = value
            setattr(request.state, _HEADERS, list(answer.headers))
            return checked.decision

        return rate_limit


class HeadersOnEveryResponse:
    """ASGI middleware (``install`` adds it) that adds the rate-limit headers of a request's latest
    allowed check to its response when the response lacks them: FastAPI copies the headers a dependency
    set only onto a response it builds, not onto a ``Response`` the endpoint returns. Once the request is
    answered, it gives back what a limit's ``deduct_when`` does not count."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: MutableMapping[str, Any]) -> None:
            if message["type"] != "http.response.start":
                await send(message)
                return
            decided: Optional[List[Tuple[str, str]]] = (scope.get("state") or {}).get(_HEADERS)
            await send(with_headers(message, decided, keep_own=True) if decided else message)

        started: List[MutableMapping[str, Any]] = []
        try:
            await self.app(scope, receive, recording_start(sending, started))
        finally:
            # Taken, not read: where another copy of this middleware wraps this one (a mounted app with
            # its own, an app installed twice), the request is settled once, by the innermost. Settled
            # twice, a success's refund would give back a failure's unit too.
            counted = (scope.get("state") or {}).pop(_COUNTED, None)
            if counted:
                await settle_started(counted, started)


def _endpoint_name(request: HTTPConnection) -> str:
    """The route as a scope name (see ``ratelock.starlette.route_name``: its methods and path template,
    so endpoints one factory makes under their routers' prefixes, which share a qualified name, count
    apart), or the endpoint's module and qualified name, or the path, where the router sets no route."""
    named = route_name(request.scope)
    if named is not None:
        return named
    return str(request.url.path)


__all__ = ["HeadersOnEveryResponse", "RateLimiter", "Refused", "refused_response"]
