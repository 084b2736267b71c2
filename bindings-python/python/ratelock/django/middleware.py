"""``RateLimitMiddleware``: the ``RATELOCK["DEFAULT_LIMITS"]`` on every view that has no ``@ratelimit`` of
its own and is not exempt. Sync and async: under ASGI it awaits the asyncio limiter and never blocks the
event loop; under WSGI it calls the blocking one."""

from typing import Any, Callable, Optional

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase

from ratelock.django import conf
from ratelock.django.decorators import MARK
from ratelock.django.responses import add_headers, check, check_async, refusal_of

#: Where the middleware keeps a request's check until its response passes back.
_CHECKED = "_ratelock_checked"


class RateLimitMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[..., Any]) -> None:
        self.get_response = get_response
        self.asynchronous = iscoroutinefunction(get_response)
        self.http = conf.for_mode(self.asynchronous)
        self.limit = conf.default_limit(self.http)
        if self.asynchronous:
            markcoroutinefunction(self)
            self.process_view = self._process_view_async  # type: ignore[method-assign, assignment]

    def __call__(self, request: HttpRequest) -> Any:
        if self.asynchronous:
            return self._call_async(request)
        response = self.get_response(request)
        return add_headers(getattr(request, _CHECKED, None), response)

    async def _call_async(self, request: HttpRequest) -> HttpResponseBase:
        response = await self.get_response(request)
        return add_headers(getattr(request, _CHECKED, None), response)

    def _applies(self, view: Callable[..., Any]) -> bool:
        owner = getattr(view, "view_class", None) or getattr(view, "cls", None)
        return self.limit is not None and not getattr(view, MARK, False) and not getattr(owner, MARK, False)

    def process_view(self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any) -> Optional[HttpResponseBase]:
        if not self._applies(view):
            return None
        assert self.limit is not None
        checked = check(self.http, self.limit, request)
        setattr(request, _CHECKED, checked)
        return refusal_of(checked)

    async def _process_view_async(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> Optional[HttpResponseBase]:
        if not self._applies(view):
            return None
        assert self.limit is not None
        checked = await check_async(self.http, self.limit, request)
        setattr(request, _CHECKED, checked)
        return refusal_of(checked)


