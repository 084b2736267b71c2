"""A Flask app for the outage tests, served by gunicorn: it boots whatever state Redis is in (no I/O at
construction) and its limited view answers under the failure policy from ``RATELOCK_TEST_ON_ERROR``.
Routes: ``/limited`` (3/minute; the body says whether the decision was degraded) and ``/breaker``."""

import os

from flask import Flask, g, jsonify

from ratelock.flask import RateLimiter

app = Flask(__name__)
limits = RateLimiter(
    app,
    url=os.environ["RATELOCK_TEST_URL"],
    on_error=os.environ.get("RATELOCK_TEST_ON_ERROR", "allow"),  # type: ignore[arg-type]
    timeout=0.3,
    prefix=os.environ.get("RATELOCK_TEST_PREFIX", "outage"),
)


@app.get("/limited")
@limits.limit("3/minute", key_func=lambda: "everyone")
def limited():  # type: ignore[no-untyped-def]
    decision = g.get("ratelock_decision")
    return jsonify(degraded=bool(decision is not None and decision.degraded))


@app.get("/breaker")
@limits.exempt
def breaker():  # type: ignore[no-untyped-def]
    return jsonify(state=limits.limiter.breaker_state)
