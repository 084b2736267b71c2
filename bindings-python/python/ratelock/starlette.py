"""``ratelock.starlette``: a pure ASGI middleware for Starlette and FastAPI apps, on the adapter core
(``ratelock.http``) and the asyncio limiter, so the event loop never blocks.

    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from ratelock.starlette import RateLimitMiddleware

    app = Starlette(routes=..., middleware=[Middleware(RateLimitMiddleware, url="redis://localhost", rules="100/minute")])
    # or: app.add_middleware(RateLimitMiddleware, url=..., rules="100/minute", key_func=...)

For one route, give the route its own: ``Route("/login", login, middleware=[Middleware(RateLimitMiddleware,
rules="5/minute", scope="login")])``. The decision is on ``request.state.rate_limit``.
"""

from typing import Any, Callable, Literal, Optional, Sequence, Union

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ratelock._native import Client
from ratelock.http import Checked, HttpAnswer, HttpLimiter, Maybe, StandardHeaders


class RateLimitMiddleware:
    """Limits every HTTP request that reaches it: ``rules`` (text, or a function of the ``Request``
    answering text) under ``scope``, keyed by ``key_func(request)`` (default: the client address), taking
    ``cost``, unless ``skip(request)``; the functions may be sync or async. ``default_limits`` is another
    name for ``rules``. Pass ``http`` (a ``ratelock.http.HttpLimiter`` with ``async_limiter=True``) to
    share one between middlewares; otherwise the other keywords build one (see ``HttpLimiter``)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        rules: Union[str, Callable[[Request], Maybe], None] = None,
        default_limits: Union[str, Callable[[Request], Maybe], None] = None,
        scope: str = "default",
        key_func: Optional[Callable[[Request], Maybe]] = None,
        cost: Union[int, Callable[[Request], Maybe]] = 1,
        skip: Optional[Callable[[Request], Maybe]] = None,
        http: Optional[HttpLimiter] = None,
        url: Union[str, Client, None] = None,
        limiter: Any = None,
        prefix: str = "rl",
        on_error: Literal["raise", "allow", "deny", "local"] = "raise",
        timeout: float = 1.0,
        instances: int = 1,
        standard_headers: StandardHeaders = "draft-11",
        legacy_headers: bool = False,
        partition_key: bool = False,
        denied_body: Literal["text", "json", "problem"] = "text",
        status_code: int = 429,
        ipv6_subnet: int = 56,
        trusted_proxies: Union[int, Sequence[str], None] = None,
        proxy_header: Literal["x-forwarded-for", "forwarded"] = "x-forwarded-for",
    ) -> None:
        self.app = app
        self.http = http or HttpLimiter(
            limiter=limiter,
            url=url,
            prefix=prefix,
            on_error=on_error,
            timeout=timeout,
            instances=instances,
            async_limiter=True,
            standard_headers=standard_headers,
            legacy_headers=legacy_headers,
            partition_key=partition_key,
            denied_body=denied_body,
            status_code=status_code,
            ipv6_subnet=ipv6_subnet,
            trusted_proxies=trusted_proxies,
            proxy_header=proxy_header,
        )
        chosen = rules if rules is not None else default_limits
        if chosen is None:
            chosen = "60/minute"
        self.limit = self.http.limit(chosen, scope=scope, key_func=key_func, cost=cost, skip=skip)
        self._proxy_header = None if self.http.proxy_header is None else self.http.proxy_header.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        checked = await self.http.check_async(self.limit, request, peer=_peer(scope), forwarded=self._forwarded(scope))
        if checked.decision is not None:
            request.state.rate_limit = checked.decision
        answer = checked.answer
        if answer is None:
            await self.app(scope, receive, send)
        elif not answer.proceed:
            await send_answer(answer, send)
        else:
            await self.app(scope, receive, _adding_headers(checked, send))

    def _forwarded(self, scope: Scope) -> Optional[str]:
        if self._proxy_header is None:
            return None
        values = [value.decode("latin-1") for name, value in scope["headers"] if name == self._proxy_header]
        return ", ".join(values) if values else None


def _peer(scope: Scope) -> Optional[str]:
    client = scope.get("client")
    return None if not client else str(client[0])


def _adding_headers(checked: Checked, send: Send) -> Send:
    """`send` that adds the check's headers to the app's response."""
    extra = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in checked.answer.headers] if checked.answer else []

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and extra:
            message = dict(message)
            message["headers"] = list(message.get("headers", [])) + extra
        await send(message)

    return sending


async def send_answer(answer: HttpAnswer, send: Send) -> None:
    """Sends a refusal (a denial, an outage's 503, an unusable key's 400) as the whole response."""
    body = answer.body.encode()
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers]
    headers.append((b"content-type", answer.content_type.encode("latin-1")))
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


__all__ = ["RateLimitMiddleware", "send_answer"]
