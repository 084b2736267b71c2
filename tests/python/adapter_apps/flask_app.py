"""The Flask adapter app (gunicorn or Flask's own server)."""

from flask import Flask, Response, jsonify, request

from ratelock.flask import RateLimiter, current_decision
from adapter_apps.settings import BAN_RULES, PLANS, SEARCH_RULES, SHADOW_RULES, options, query_int

app = Flask(__name__)
limits = RateLimiter(app, default_limits="100/hour", skip=lambda: request.path == "/skip", **options())


@app.get("/search")
@limits.limit(SEARCH_RULES, scope="search")
def search() -> Response:
    return jsonify(ok=True)


@app.get("/ban")
@limits.limit(BAN_RULES, scope="ban")
def ban() -> Response:
    return jsonify(ok=True)


@app.get("/shadow")
@limits.limit(SHADOW_RULES, scope="shadow")
def shadow() -> Response:
    return jsonify(ok=True)


@app.get("/tenant")
@limits.limit(lambda: PLANS[request.args["plan"]], scope="tenant", key_func=lambda: request.args["plan"])
def tenant() -> Response:
    return jsonify(ok=True)


@app.get("/cost")
@limits.limit("10/hour", scope="cost", cost=lambda: query_int(request.args.get("n"), 1))
def cost() -> Response:
    return jsonify(ok=True)


@app.get("/key")
@limits.limit("5/hour", scope="key", key_func=lambda: request.args.get("k"))
def key() -> Response:
    return jsonify(ok=True)


@app.get("/skip")
def skip() -> Response:
    return jsonify(ok=True)


@app.get("/decision")
@limits.limit("50/hour", scope="decision")
def decision() -> Response:
    current = current_decision()
    assert current is not None
    return jsonify(remaining=current.remaining, degraded=current.degraded)
