"""The Starlette adapter app (uvicorn): the middleware on each route, so each has its own limit."""

from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ratelock.http import HttpLimiter
from ratelock.starlette import RateLimitMiddleware
from adapter_apps.settings import BAN_RULES, PLANS, SEARCH_RULES, SHADOW_RULES, options, query_int

http = HttpLimiter(async_limiter=True, **options())


def limited(path: str, endpoint: Any, **limit: Any) -> Route:
    return Route(path, endpoint, middleware=[Middleware(RateLimitMiddleware, http=http, **limit)])


async def ok(_request: Request) -> JSONResponse:
    return JSONResponse({"ok": True})


async def decision(request: Request) -> JSONResponse:
    current = request.state.rate_limit
    return JSONResponse({"remaining": current.remaining, "degraded": current.degraded})


async def plan_rules(request: Request) -> str:
    return PLANS[request.query_params["plan"]]


app = Starlette(
    routes=[
        limited("/search", ok, rules=SEARCH_RULES, scope="search"),
        limited("/ban", ok, rules=BAN_RULES, scope="ban"),
        limited("/shadow", ok, rules=SHADOW_RULES, scope="shadow"),
        limited("/tenant", ok, rules=plan_rules, scope="tenant", key_func=lambda request: request.query_params["plan"]),
        limited("/cost", ok, rules="10/hour", scope="cost", cost=lambda request: query_int(request.query_params.get("n"), 1)),
        limited("/key", ok, rules="5/hour", scope="key", key_func=lambda request: request.query_params.get("k")),
        limited("/skip", ok, rules="1/hour", scope="skip", skip=lambda request: True),
        limited("/decision", decision, rules="50/hour", scope="decision"),
    ]
)
