"""examples/python/fastapi_app.py: a FastAPI app with per-route limits as dependencies; a route can take
the decision as a parameter. Memory store by default, REDIS_URL for Redis.
Run: uvicorn fastapi_app:app"""

import os
from typing import Any, Dict

from fastapi import Depends, FastAPI

from ratelock import Decision
from ratelock.fastapi import RateLimiter

app = FastAPI()
limiter = RateLimiter(app, url=os.environ.get("REDIS_URL"), denied_body="problem")


@app.get("/search", dependencies=[Depends(limiter.limit("3 per 10 seconds; 20/hour", scope="search"))])
async def search(q: str = "") -> Dict[str, Any]:
    return {"results": [], "query": q}


@app.get("/report")
async def report(decision: Decision = Depends(limiter.limit("10/hour", cost=5))) -> Dict[str, Any]:
    return {"reports_left": decision.remaining // 5}


@app.get("/health")
async def health() -> Dict[str, bool]:
    return {"ok": True}
