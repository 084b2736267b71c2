"""The FastAPI adapter app (uvicorn): one dependency per route."""

from typing import Any, Dict

from fastapi import Depends, FastAPI, Request

from ratelock import Decision
from ratelock.fastapi import RateLimiter
from adapter_apps.settings import BAN_RULES, PLANS, SEARCH_RULES, SHADOW_RULES, options, query_int

app = FastAPI()
limiter = RateLimiter(app, **options())


@app.get("/search", dependencies=[Depends(limiter.limit(SEARCH_RULES, scope="search"))])
async def search() -> Dict[str, Any]:
    return {"ok": True}


@app.get("/ban", dependencies=[Depends(limiter.limit(BAN_RULES, scope="ban"))])
async def ban() -> Dict[str, Any]:
    return {"ok": True}


@app.get("/shadow", dependencies=[Depends(limiter.limit(SHADOW_RULES, scope="shadow"))])
async def shadow() -> Dict[str, Any]:
    return {"ok": True}


async def plan_rules(request: Request) -> str:
    return PLANS[request.query_params["plan"]]


@app.get("/tenant", dependencies=[Depends(limiter.limit(plan_rules, scope="tenant", key_func=lambda r: r.query_params["plan"]))])
async def tenant() -> Dict[str, Any]:
    return {"ok": True}


@app.get("/cost", dependencies=[Depends(limiter.limit("10/hour", scope="cost", cost=lambda r: query_int(r.query_params.get("n"), 1)))])
async def cost() -> Dict[str, Any]:
    return {"ok": True}


@app.get("/key", dependencies=[Depends(limiter.limit("5/hour", scope="key", key_func=lambda r: r.query_params.get("k")))])
async def key() -> Dict[str, Any]:
    return {"ok": True}


@app.get("/skip", dependencies=[Depends(limiter.limit("1/hour", scope="skip", skip=lambda r: True))])
async def skip() -> Dict[str, Any]:
    return {"ok": True}


@app.get("/decision")
async def decision(current: Decision = Depends(limiter.limit("50/hour", scope="decision"))) -> Dict[str, Any]:
    return {"remaining": current.remaining, "degraded": current.degraded}
