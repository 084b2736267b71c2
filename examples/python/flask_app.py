"""A Flask app limited by ratelock: the embedded memory store by default, Redis with REDIS_URL.
Run it (`python examples/python/flask_app.py`, PORT sets the port) and call /search a few times."""

import os

from flask import Flask, Response, jsonify

from ratelock.flask import RateLimiter

app = Flask(__name__)
limits = RateLimiter(app, url=os.environ.get("REDIS_URL"), default_limits="100/minute")


@app.get("/")
def index() -> Response:
    return jsonify(hello="world")


@app.get("/search")
@limits.limit("3 per 10 seconds; 20/hour")
def search() -> Response:
    return jsonify(results=[])


@app.get("/health")
@limits.exempt
def health() -> Response:
    return jsonify(ok=True)


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ.get("PORT", "5000")))
