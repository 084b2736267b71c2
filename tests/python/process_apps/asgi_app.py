"""An ASGI app on ``ratelock.asyncio`` for uvicorn (``--workers``, spawned) and gunicorn's
UvicornWorker (``--preload``: forked after the master used ratelock's sync API at import). Routes and
answers as in ``wsgi_app``."""

import json
import os
from typing import Any, Awaitable, Callable, Dict, List

import ratelock
import ratelock.asyncio

URL = os.environ["RATELOCK_TEST_URL"]
SHARED_RULE = os.environ.get("RATELOCK_TEST_RULE", "50/minute")
PREFIX = os.environ.get("RATELOCK_TEST_PREFIX", "pm")

# The master (with --preload) uses the store before the fork.
ratelock.Limiter(URL, prefix=PREFIX).hit("import-time", "1000/minute")
with ratelock.DistributedLock(f"{PREFIX}:lock", url=URL, ttl=10):
    pass

limiter = ratelock.asyncio.Limiter(URL, prefix=PREFIX)
lock = ratelock.asyncio.DistributedLock(f"{PREFIX}:lock", url=URL, ttl=10)

Send = Callable[[Dict[str, Any]], Awaitable[None]]


async def answer(send: Send, status: int, body: Dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


async def app(scope: Dict[str, Any], receive: Callable[[], Awaitable[Dict[str, Any]]], send: Send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    path = scope["path"]
    if path == "/shared":
        decision = await limiter.hit("shared", SHARED_RULE)
        await answer(send, 200 if decision.allowed else 429, {"allowed": decision.allowed, "pid": os.getpid()})
    elif path == "/own":
        limit = 1000 + os.getpid() % 5000
        crossed: List[str] = []
        for _ in range(20):
            try:
                decision = await limiter.hit(f"own:{os.getpid()}", f"{limit}/hour")
                if decision.limit != limit:
                    crossed.append(f"limit {decision.limit} for a rule of {limit}")
            except ratelock.RatelockError as error:
                crossed.append(f"{type(error).__name__}: {error}")
        await answer(send, 200, {"calls": 20, "crossed": crossed, "pid": os.getpid()})
    elif path == "/lock":
        async with lock:
            token = lock.fencing_token
        await answer(send, 200, {"token": token, "pid": os.getpid()})
    else:
        await answer(send, 404, {})
