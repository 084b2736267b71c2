"""examples/python/starlette_app.py: a Starlette app limited by ratelock's ASGI middleware (the asyncio
limiter: the event loop never blocks). Memory store by default, REDIS_URL for Redis.
Run: uvicorn starlette_app:app"""

import os

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ratelock.starlette import RateLimitMiddleware

URL = os.environ.get("REDIS_URL")


async def search(request: Request) -> JSONResponse:
    return JSONResponse({"results": [], "remaining": request.state.rate_limit.remaining})


async def health(_request: Request) -> JSONResponse:
    return JSONResponse({"ok": True})


app = Starlette(
    routes=[
        Route("/search", search, middleware=[
            Middleware(RateLimitMiddleware, url=URL, rules="3 per 10 seconds; 20/hour", scope="search"),
        ]),
        Route("/health", health),
    ],
)
