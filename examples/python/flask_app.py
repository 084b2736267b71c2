"""examples/python/flask_app.py: a Flask app limited by ratelock. The embedded memory store by default;
set REDIS_URL to share the limits with every process, in any language, on that Redis.
Run: python flask_app.py (PORT sets the port)."""

import os

from flask import Flask, Response, jsonify, request

from ratelock.flask import RateLimiter

app = Flask(__name__)
limits = RateLimiter(app, url=os.environ.get("REDIS_URL"), default_limits="100/minute")


@app.get("/search")
@limits.limit("3 per 10 seconds; 20/hour", scope="search")
def search() -> Response:
    return jsonify(results=[], query=request.args.get("q"))


@app.get("/health")
@limits.exempt
def health() -> Response:
    return jsonify(ok=True)


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ.get("PORT", "5000")))
