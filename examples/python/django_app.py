"""examples/python/django_app.py: a Django project in one file, limited by ratelock: the middleware puts
RATELOCK["DEFAULT_LIMITS"] on every view, and @ratelimit gives /search its own limit. Memory store by
default, REDIS_URL for Redis. Run: gunicorn django_app (WSGI) or uvicorn django_app:asgi (ASGI)."""

import os

import django
from django.conf import settings

settings.configure(
    SECRET_KEY="example",
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=["ratelock.django"],
    MIDDLEWARE=["ratelock.django.RateLimitMiddleware"],
    RATELOCK={"URL": os.environ.get("REDIS_URL"), "DEFAULT_LIMITS": "100/minute"},
)
django.setup()

from django.core.asgi import get_asgi_application  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import HttpRequest, JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402

from ratelock.django import ratelimit, ratelimit_exempt  # noqa: E402


@ratelimit("3 per 10 seconds; 20/hour", scope="search")
def search(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"results": [], "query": request.GET.get("q")})


@ratelimit_exempt
def health(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


urlpatterns = [path("search", search), path("health", health)]
application = get_wsgi_application()
asgi = get_asgi_application()
