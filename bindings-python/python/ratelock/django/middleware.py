"""``RateLimitMiddleware``: ``RATELOCK["DEFAULT_LIMITS"]`` on every view that has no ``@ratelimit`` of its
own and is not exempt, each view counted on its own, and ``RATELOCK["APPLICATION_LIMITS"]`` on every view
that is not exempt, all counted together. Sync and async: under ASGI it awaits the asyncio limiter and
never blocks the event loop; under WSGI it calls the blocking one."""

from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Tuple

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase

from ratelock.django import conf
from ratelock.django.decorators import EXEMPT, limits_itself, marked_parts
from ratelock.django.responses import add_headers, check, check_async, refusal_of
from ratelock.http import Checked, Limit

#: Where the middleware keeps a request's check until its response passes back.
_CHECKED = "_ratelock_checked"


class RateLimitMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[..., Any]) -> None:
        self.get_response = get_response
        self.asynchronous = iscoroutinefunction(get_response)
        self.http = conf.for_mode(self.asynchronous)
        self.limit = conf.default_limit(self.http, self.asynchronous)
        self.application_limit = conf.application_limit(self.http, self.asynchronous)
        # The default limit under each view's own scope, made once per view.
        self._by_view: Dict[str, Limit] = {}
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

    def _limits(self, request: HttpRequest, view: Callable[..., Any]) -> Tuple[List[Limit], bool]:
        """The limits the middleware checks on this request, in order (the application limit, then the
        view's default limit), and whether the headers are the middleware's to add: not on a view whose
        own limits count the request's method, whose decorator adds its own. A view limited on ``POST``
        alone is under the default limits for ``GET``, as in Flask-Limiter."""
        method = (request.method or "GET").upper()
        parts = marked_parts(view, method)
        own = any(limits_itself(part, method) for part in parts)
        exempt = any(getattr(part, EXEMPT, False) for part in parts)
        limits: List[Limit] = []
        if self.application_limit is not None and not exempt:
            limits.append(self.application_limit)
        if self.limit is not None and not own:
            limits.append(self._of_view(request, view, self.limit))
        return limits, not own

    def _of_view(self, request: HttpRequest, view: Callable[..., Any], limit: Limit) -> Limit:
        """The default limit under the view's scope: its URL pattern (``ResolverMatch.route``, includes
        joined: one bucket per route, as Starlette's and Flask's adapters count), else the function's
        dotted path. Not the view name: an unnamed pattern's is the function's path, which the views one
        factory makes all share."""
        route = getattr(getattr(request, "resolver_match", None), "route", None)
        # "/" in front: the root pattern's route is "", a scope of its own all the same.
        name = f"/{route}" if route is not None else f"{getattr(view, '__module__', '')}.{getattr(view, '__qualname__', view)}"
        scoped = self._by_view.get(name)
        if scoped is None:
            scoped = self._by_view[name] = replace(limit, scope=name)
        return scoped

    def process_view(self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any) -> Optional[HttpResponseBase]:
        limits, adds_headers = self._limits(request, view)
        for limit in limits:
            refused = self._keep(request, check(self.http, limit, request), adds_headers)
            if refused is not None:
                return refused
        return None

    async def _process_view_async(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> Optional[HttpResponseBase]:
        limits, adds_headers = self._limits(request, view)
        for limit in limits:
            refused = self._keep(request, await check_async(self.http, limit, request), adds_headers)
            if refused is not None:
                return refused
        return None

    @staticmethod
    def _keep(request: HttpRequest, checked: Checked, adds_headers: bool) -> Optional[HttpResponseBase]:
        """Keeps the check for the response's headers (the last check's, the most specific), and answers
        its refusal if any."""
        if adds_headers:
            setattr(request, _CHECKED, checked)
        return refusal_of(checked)
