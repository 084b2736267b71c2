"""The Django adapter app, settings, URLs and views in one module: gunicorn serves its WSGI app (sync
views, the blocking limiter), uvicorn its ASGI app (async views, the asyncio limiter). The middleware
puts the default limit on `/default` and `/default-other` (each counted on its own); each other view has its own
``@ratelimit``. ``RATELOCK_APPLICATION_LIMITS`` sets the application limits."""

import os
from typing import Any

import django
from django.conf import settings
from django.utils.asyncio import async_unsafe

from adapter_apps.settings import BAN_RULES, PLANS, SEARCH_RULES, SHADOW_RULES, options, query_int

_options = options()


@async_unsafe
def application_rules(_request: Any) -> str:
    """The application limits as a plan read the way Django code reads one (the ORM, ``request.user``):
    Django refuses to run it on an event loop."""
    return os.environ["RATELOCK_APPLICATION_LIMITS"]


settings.configure(
    DEBUG=False,
    SECRET_KEY="ratelock-tests",
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=["ratelock.django"],
    MIDDLEWARE=["ratelock.django.RateLimitMiddleware"],
    RATELOCK={
        "URL": _options["url"],
        "PREFIX": _options["prefix"],
        "ON_ERROR": _options["on_error"],
        "TIMEOUT": _options["timeout"],
        "TRUSTED_PROXIES": _options["trusted_proxies"],
        "DENIED_BODY": _options["denied_body"],
        "LEGACY_HEADERS": _options["legacy_headers"],
        "DEFAULT_LIMITS": "100/hour",
        "APPLICATION_LIMITS": application_rules if os.environ.get("RATELOCK_APPLICATION_LIMITS") else None,
        "SKIP": lambda request: request.path == "/skip",
    },
)
django.setup()

from django.http import HttpRequest, HttpResponse, JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.views import View  # noqa: E402


from ratelock.django import ratelimit, ratelimit_exempt  # noqa: E402

ASYNC = os.environ.get("RATELOCK_DJANGO_ASYNC") == "1"


def view(function: Any) -> Any:
    """A view of its own calling `function` (so marks on one route never reach another): sync, or async
    under ASGI."""
    if ASYNC:

        async def asynchronous(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            result: HttpResponse = function(request, *args, **kwargs)
            return result

        return asynchronous

    def synchronous(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        result: HttpResponse = function(request, *args, **kwargs)
        return result

    return synchronous


def ok(_request: HttpRequest) -> HttpResponse:
    return JsonResponse({"ok": True})


@async_unsafe
def key_from_the_database(request: HttpRequest) -> str:
    """A key function as Django code writes them (``request.user``, the ORM): Django refuses to run it
    on an event loop, as it refuses the ORM there."""
    return "one user"


def current(request: HttpRequest) -> HttpResponse:
    decision = getattr(request, "rate_limit")
    return JsonResponse({"remaining": decision.remaining, "degraded": decision.degraded})


@ratelimit("10/hour", scope="cost", cost=lambda request: query_int(request.GET.get("n"), 1))
class CostView(View):
    def get(self, request: HttpRequest) -> HttpResponse:
        return JsonResponse({"ok": True})


@ratelimit("10/hour", scope="cost", cost=lambda request: query_int(request.GET.get("n"), 1))
class AsyncCostView(View):
    async def get(self, request: HttpRequest) -> HttpResponse:
        return JsonResponse({"ok": True})


urlpatterns = [
    path("search", ratelimit(SEARCH_RULES, scope="search")(view(ok))),
    path("ban", ratelimit(BAN_RULES, scope="ban")(view(ok))),
    path("shadow", ratelimit(SHADOW_RULES, scope="shadow")(view(ok))),
    path("tenant", ratelimit(lambda r: PLANS[r.GET["plan"]], scope="tenant", key=lambda r: r.GET["plan"])(view(ok))),
    path("cost", (AsyncCostView if ASYNC else CostView).as_view()),
    path("key", ratelimit("5/hour", scope="key", key=lambda r: r.GET.get("k"))(view(ok))),
    path("sync-only-key", ratelimit("3/hour", scope="sync-only-key", key=key_from_the_database)(view(ok))),
    path("skip", view(ok)),
    path("decision", ratelimit("50/hour", scope="decision")(view(current))),
    path("default", view(ok)),
    path("default-other", view(ok)),
    path("post-only", ratelimit("1/hour", scope="post-only", methods=["POST"])(view(ok))),
    path("exempt", ratelimit_exempt(view(ok))),
]

if ASYNC:
    from django.core.asgi import get_asgi_application

    application = get_asgi_application()
else:
    from django.core.wsgi import get_wsgi_application

    application = get_wsgi_application()
