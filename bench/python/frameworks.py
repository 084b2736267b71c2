"""The framework rows of the Python benchmark: one limited route in FastAPI (ratelock's dependency beside
slowapi and fastapi-limiter) and in Django (ratelock's decorator beside django-ratelimit), each driven
in process (httpx's ASGI transport; Django's test client) against the run's redis-server, beside the
same route with no limiter. Added time = µs per request with a limiter − µs per request bare."""


import asyncio
import sys
from typing import Any, Dict

Hit = Any


def asgi_get(build: Any, path: str = "/item") -> Hit:
    """One GET through the app `build()` makes (in the variant's own event loop, which it serves on) over
    httpx's ASGI transport; checks once that the route answers 200."""
    import httpx

    loop = asyncio.new_event_loop()

    async def built() -> Any:
        app = build()
        return await app if asyncio.iscoroutine(app) else app

    app = loop.run_until_complete(built())
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")

    async def get() -> int:
        response = await client.get(path)
        return response.status_code

    first = loop.run_until_complete(get())
    if first != 200:
        raise RuntimeError(f"{path} answered {first}")
    return lambda: loop.run_until_complete(get()) == 200


def bare_fastapi() -> Any:
    from fastapi import FastAPI

    app = FastAPI()

    @app.get("/item")
    async def item() -> str:
        return "ok"

    return app


def ratelock_fastapi(url: str, rule: str) -> Any:
    from fastapi import Depends, FastAPI

    from ratelock.fastapi import RateLimiter

    app = FastAPI()
    limiter = RateLimiter(app, url=url, key_func=lambda request: "bench:fastapi")

    @app.get("/item", dependencies=[Depends(limiter.limit(rule))])
    async def item() -> str:
        return "ok"

    return app


def slowapi_fastapi(url: str, rule: str) -> Any:
    from fastapi import FastAPI, Request, Response
    from slowapi import Limiter, _rate_limit_exceeded_handler
    from slowapi.errors import RateLimitExceeded

    limiter = Limiter(key_func=lambda request: "bench:slowapi", storage_uri=url, headers_enabled=True)
    app = FastAPI()
    app.state.limiter = limiter
    app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)

    @app.get("/item")
    @limiter.limit(rule)
    async def item(request: Request, response: Response) -> str:
        return "ok"

    return app


async def fastapi_limiter_app(url: str, limit: int) -> Any:
    from fastapi import Depends, FastAPI
    from fastapi_limiter.depends import RateLimiter
    from pyrate_limiter import Duration, Limiter, Rate
    from pyrate_limiter.buckets.redis_bucket import RedisBucket
    from redis.asyncio import Redis

    # Awaited inside the variant's running loop: the bucket's leak task is scheduled on it.
    bucket = await RedisBucket.init([Rate(limit, Duration.SECOND)], Redis.from_url(url), "bench:fastapi-limiter")
    limiter = Limiter(bucket)

    async def identifier(request: Any) -> str:
        return "bench:fastapi-limiter"

    app = FastAPI()

    @app.get("/item", dependencies=[Depends(RateLimiter(limiter=limiter, identifier=identifier))])
    async def item() -> str:
        return "ok"

    return app


def fastapi_variants(url: str, rule: str, limit: int) -> Dict[str, Hit]:
    return {
        "FastAPI, no limiter": asgi_get(bare_fastapi),
        "FastAPI + ratelock.fastapi (Depends)": asgi_get(lambda: ratelock_fastapi(url, rule)),
        "FastAPI + slowapi (redis://)": asgi_get(lambda: slowapi_fastapi(url, rule)),
        "FastAPI + fastapi-limiter 0.2 (pyrate-limiter RedisBucket)": asgi_get(lambda: fastapi_limiter_app(url, limit)),
    }


def django_variants(url: str, rule: str, limit: int) -> Dict[str, Hit]:
    """Django's test client on three views of one project: bare, ``@ratelock.django.ratelimit``, and
    django-ratelimit's ``@ratelimit`` on Django's Redis cache."""
    import django
    from django.conf import settings

    settings.configure(
        SECRET_KEY="bench",
        ALLOWED_HOSTS=["*"],
        ROOT_URLCONF=__name__,
        MIDDLEWARE=[],
        INSTALLED_APPS=[],
        CACHES={"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}},
        RATELOCK={"URL": url},
        SILENCED_SYSTEM_CHECKS=["django_ratelimit.E003", "django_ratelimit.W001"],
    )
    django.setup()
    from django.http import HttpResponse
    from django.test import Client
    from django.urls import path
    from django_ratelimit.decorators import ratelimit as peer_ratelimit

    from ratelock.django import ratelimit

    def item(request: Any) -> Any:
        return HttpResponse("ok")

    module = sys.modules[__name__]
    module.urlpatterns = [  # type: ignore[attr-defined]
        path("bare", item),
        path("ratelock", ratelimit(rule, key=lambda request: "bench:django")(item)),
        path("peer", peer_ratelimit(key=lambda group, request: "bench:django-ratelimit", rate=f"{limit}/s", block=True)(item)),
    ]
    client = Client()

    def get(route: str) -> Hit:
        if client.get(f"/{route}").status_code != 200:
            raise RuntimeError(f"/{route} did not answer 200")
        return lambda: client.get(f"/{route}").status_code == 200

    return {
        "Django, no limiter": get("bare"),
        "Django + ratelock.django.ratelimit": get("ratelock"),
        "Django + django-ratelimit (RedisCache)": get("peer"),
    }
