"""``ratelock.starlette``: a pure ASGI middleware for Starlette and FastAPI apps, on the adapter core
(``ratelock.http``) and the asyncio limiter, so the event loop never blocks.

    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from ratelock.starlette import RateLimitMiddleware

    app = Starlette(routes=..., middleware=[Middleware(RateLimitMiddleware, url="redis://localhost", rules="100/minute")])
    # or: app.add_middleware(RateLimitMiddleware, url=..., rules="100/minute", key_func=...)

For one route, give the route its own: ``Route("/login", login, middleware=[Middleware(RateLimitMiddleware,
rules="5/minute")])``; each route's middleware counts in a bucket of its own (its route's path, unless
``scope`` names one). The decision is on ``request.state.rate_limit``.
"""

import inspect
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple, Union

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ratelock._native import InvalidArgument
from ratelock.http import Checked, Counted, HttpAnswer, HttpLimiter, HttpLimiterOptions, Limit, Maybe

if TYPE_CHECKING:
    from typing_extensions import Unpack


class RateLimitMiddleware:
    """Limits every HTTP request that reaches it: ``rules`` (text, or a function of the ``Request``
    answering text) under ``scope``, keyed by ``key_func(request)`` (default: the client address), taking
    ``cost``, unless ``skip(request)``; the functions may be sync or async. ``default_limits`` is another
    name for ``rules``. Without ``scope``, a middleware on the app counts every request in the scope
    ``default``, and one on a route (or on a mounted app) in its route's path, so that two routes' limits
    never share a bucket. ``deduct_when(response)`` (sync or async; Flask-Limiter's name) keeps an allowed
    request counted only when it answers true for the response (its status and headers; a 500 when the
    app raised); otherwise the request's units are given back once it is answered. Pass ``http`` (a
    ``ratelock.http.HttpLimiter`` with ``async_limiter=True``) to share one between middlewares;
    otherwise the other keywords build one (see ``HttpLimiter``)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        rules: Union[str, Callable[[Request], Maybe], None] = None,
        default_limits: Union[str, Callable[[Request], Maybe], None] = None,
        scope: Optional[str] = None,
        key_func: Optional[Callable[[Request], Maybe]] = None,
        cost: Union[int, Callable[[Request], Maybe]] = 1,
        skip: Optional[Callable[[Request], Maybe]] = None,
        deduct_when: Optional[Callable[[Response], Maybe]] = None,
        http: Optional[HttpLimiter] = None,
        **options: "Unpack[HttpLimiterOptions]",
    ) -> None:
        self.app = app
        if http is not None and options:
            raise InvalidArgument(
                f"invalid argument `http`: given with {', '.join(sorted(options))}, which only make a new HttpLimiter"
            )
        if http is not None and not inspect.iscoroutinefunction(getattr(http.limiter, "hit", None)):
            raise InvalidArgument(
                "invalid argument `http`: expected an HttpLimiter with a ratelock.asyncio.Limiter (async_limiter=True)"
            )
        self.http = http or HttpLimiter(
            async_limiter=True,
            **options,
        )
        chosen = rules if rules is not None else default_limits
        if chosen is None:
            chosen = "60/minute"
        self.limit = self.http.limit(
            chosen, scope="default" if scope is None else scope, key_func=key_func, cost=cost, skip=skip, deduct_when=deduct_when
        )
        # Without a scope: the limit of each route the middleware has seen, by the route's path.
        self._by_route: Optional[Dict[str, Limit]] = {} if scope is None else None
        self._proxy_header = None if self.http.proxy_header is None else self.http.proxy_header.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        read: List[Message] = []
        request = Request(scope, _recording_body(receive, read))
        limit = self._limit_of(scope)
        checked = await self.http.check_async(limit, request, peer=_peer(scope), forwarded=self._forwarded(scope))
        if checked.decision is not None:
            request.state.rate_limit = checked.decision
        if read:
            receive = _replaying(read, receive)
        answer = checked.answer
        if answer is None:
            await self.app(scope, receive, send)
        elif not answer.proceed:
            await send_answer(answer, send)
        elif checked.counted is None:
            await self.app(scope, receive, _adding_headers(checked, send))
        else:
            started: List[Message] = []
            try:
                await self.app(scope, receive, recording_start(_adding_headers(checked, send), started))
            finally:
                await settle_started([(self.http, limit, checked.counted)], started)

    def _limit_of(self, scope: Scope) -> Limit:
        """The limit for this request: under its route when no scope was named and the middleware sits
        on a route, which the router has matched by then (``scope["route"]``'s path; a Starlette that
        does not set it, the matched endpoint's name)."""
        if self._by_route is None:
            return self.limit
        route = route_name(scope)
        if route is None:
            return self.limit
        limit = self._by_route.get(route)
        if limit is None:
            limit = self._by_route.setdefault(route, replace(self.limit, scope=route))
        return limit

    def _forwarded(self, scope: Scope) -> Optional[str]:
        if self._proxy_header is None:
            return None
        values = [value.decode("latin-1") for name, value in scope["headers"] if name == self._proxy_header]
        return ", ".join(values) if values else None


def route_name(scope: Scope) -> Optional[str]:
    """The matched route as a bucket's scope: its methods and its path template (``"GET /login"``; HEAD
    counts with GET, as in the Node adapters), so one path's GET and POST routes count apart; the
    matched endpoint's module and name where the router sets no route; ``None`` before routing (a
    middleware on the app). A mount's prefix is not part of it: the request's ``root_path`` holds the
    mount's matched path (``/tenants/acme``), not its template, and a name per parameter value would
    be a bucket per value. Two mounts' routes of the same path share a bucket unless ``scope=`` names
    one."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if path:
        methods = getattr(route, "methods", None) or ()
        named = sorted({"GET" if method == "HEAD" else method for method in methods})
        return f"{','.join(named)} {path}" if named else str(path)
    endpoint = scope.get("endpoint")
    if endpoint is None:
        return None
    name = getattr(endpoint, "__qualname__", None) or type(endpoint).__qualname__
    return f"{getattr(endpoint, '__module__', '')}.{name}"


def _recording_body(receive: Receive, read: List[Message]) -> Receive:
    """`receive` that keeps in `read` the body messages it hands over: what the functions of the request
    read (``await request.form()`` in a key function), for the app to be given again."""

    async def receiving() -> Message:
        message = await receive()
        if message["type"] == "http.request":
            read.append(message)
        return message

    return receiving


def _replaying(read: List[Message], receive: Receive) -> Receive:
    """`receive` that hands the app the body messages already `read` first, then goes on with `receive`."""
    pending = list(read)

    async def receiving() -> Message:
        return pending.pop(0) if pending else await receive()

    return receiving


def _peer(scope: Scope) -> Optional[str]:
    client = scope.get("client")
    return None if not client else str(client[0])


def recording_start(send: Send, started: List[Message]) -> Send:
    """`send` that keeps the response's ``http.response.start`` in `started`."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            started.append(message)
        await send(message)

    return sending


async def settle_started(counted: Sequence[Tuple[HttpLimiter, Limit, Counted]], started: List[Message]) -> None:
    """Settles each of `counted` (``HttpLimiter.settle_async``) with the response the app started
    (`started`, from ``recording_start``): its status and headers, as a ``Response`` without a body; a
    500 when the app raised before starting one."""
    start = started[-1] if started else None
    response = Response(status_code=500 if start is None else int(start["status"]))
    if start is not None:
        response.raw_headers = [(bytes(name), bytes(value)) for name, value in start.get("headers", [])]
    for http, limit, spent in counted:
        await http.settle_async(limit, spent, response)


def _adding_headers(checked: Checked, send: Send) -> Send:
    """`send` that adds the check's headers to the app's response."""
    extra = list(checked.answer.headers) if checked.answer else []

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and extra:
            # A middleware nearer the endpoint (a route's own) has set its headers first: the most
            # specific limit's stay, as in the other adapters, not one value per limit.
            message = with_headers(message, extra, keep_own=True)
        await send(message)

    return sending


def with_headers(start: Message, headers: Sequence[Tuple[str, str]], *, keep_own: bool = False) -> Message:
    """An ``http.response.start`` message with `headers` added; with `keep_own`, a header the response
    already has stays as the response set it."""
    sent = list(start.get("headers", []))
    own = {bytes(name).lower() for name, _ in sent} if keep_own else set()
    for name, value in headers:
        encoded = name.lower().encode("latin-1")
        if encoded not in own:
            sent.append((encoded, value.encode("latin-1")))
    return {**start, "headers": sent}


async def send_answer(answer: HttpAnswer, send: Send) -> None:
    """Sends a refusal (a denial, an outage's 503, an unusable key's 400) as the whole response."""
    body = answer.body.encode()
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers]
    headers.append((b"content-type", answer.content_type.encode("latin-1")))
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


__all__ = ["RateLimitMiddleware", "recording_start", "route_name", "send_answer", "settle_started", "with_headers"]
