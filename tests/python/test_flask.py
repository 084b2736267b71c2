"""ratelock.flask: 429 with Retry-After and rate-limit headers from one decision, default limits,
exemptions, methods, keys, the failure policy with a stopped Redis, and a real HTTP server process."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

from flask import Blueprint, Flask, jsonify, request

from conftest import RedisServer
from ratelock.flask import RateLimiter

ROOT = pathlib.Path(__file__).resolve().parents[2]


def make_app(url=None, **options):
    app = Flask(__name__)
    limits = RateLimiter(app, url=url, prefix=f"f{uuid.uuid4().hex[:8]}", **options)

    @app.route("/limited", methods=["GET", "POST"])
    @limits.limit("2/minute", methods=["GET"], exempt_when=lambda: request.args.get("vip") == "1")
    def limited():
        return jsonify(ok=True)

    @app.get("/per-user")
    @limits.limit("1/minute", key_func=lambda: request.args["user"])
    def per_user():
        return jsonify(ok=True)

    @app.get("/open")
    def open_view():
        return jsonify(ok=True)

    @app.get("/health")
    @limits.exempt
    def health():
        return jsonify(ok=True)

    return app


def test_limited_view_answers_429_with_headers(store_url):
    client = make_app(store_url).test_client()
    first = client.get("/limited")
    assert first.status_code == 200
    assert first.headers["X-RateLimit-Limit"] == "2" and first.headers["X-RateLimit-Remaining"] == "1"
    assert first.headers["RateLimit"] == "limit=2, remaining=1, reset=30"
    assert first.headers["RateLimit-Policy"] == "2;w=60"
    assert client.get("/limited").status_code == 200
    denied = client.get("/limited")
    assert denied.status_code == 429
    assert denied.headers["Retry-After"] == "30"
    assert denied.headers["X-RateLimit-Remaining"] == "0"
    assert int(denied.headers["X-RateLimit-Reset"]) >= int(time.time()) + 59
    assert denied.get_json()["rule"] == "2/minute"
    assert client.post("/limited").status_code == 200, "POST is not limited"
    assert client.get("/limited?vip=1").status_code == 200, "exempt_when skips the limit"


def test_keys_and_default_limits(store_url):
    client = make_app(store_url, default_limits="3/minute").test_client()
    assert client.get("/per-user?user=ann").status_code == 200
    assert client.get("/per-user?user=ann").status_code == 429
    assert client.get("/per-user?user=bob").status_code == 200
    assert [client.get("/open").status_code for _ in range(4)] == [200, 200, 200, 429]
    assert all(client.get("/health").status_code == 200 for _ in range(5))
    assert "X-RateLimit-Limit" not in client.get("/health").headers


def test_store_failures_follow_on_error():
    server = RedisServer()
    try:
        allow = make_app(server.url, on_error="allow", timeout=0.3).test_client()
        deny = make_app(server.url, on_error="deny", timeout=0.3).test_client()
        assert allow.get("/open").status_code == 200
    finally:
        server.stop()
    assert allow.get("/limited").status_code == 200
    assert deny.get("/limited").status_code == 429


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_real_http_server_process(redis_server):
    port = _free_port()
    env = dict(os.environ, PORT=str(port), REDIS_URL=redis_server.url)
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "python" / "flask_app.py")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
                break
            except OSError:
                assert time.monotonic() < deadline, "the Flask example did not start"
                time.sleep(0.1)
        statuses = []
        for _ in range(4):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/search", timeout=2) as response:
                    statuses.append(response.status)
                    assert response.headers["RateLimit-Policy"] == "3;w=10"
            except urllib.error.HTTPError as rejected:
                statuses.append(rejected.code)
                assert int(rejected.headers["Retry-After"]) >= 1
                assert json.loads(rejected.read())["error"] == "rate limited"
        assert statuses == [200, 200, 200, 429]
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_limit_and_exempt_work_above_the_route_decorator(store_url):
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="1/minute")

    @limits.limit("2/minute")
    @app.get("/above")
    def above():
        return jsonify(ok=True)

    @limits.exempt
    @app.get("/above-exempt")
    def above_exempt():
        return jsonify(ok=True)

    client = app.test_client()
    statuses = [client.get("/above").status_code for _ in range(3)]
    assert statuses == [200, 200, 429], "the view's own limit applies, not none and not the default"
    assert client.get("/above").headers["X-RateLimit-Limit"] == "2"
    assert all(client.get("/above-exempt").status_code == 200 for _ in range(3))


def test_marks_are_per_view_not_per_function_name(store_url):
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="2/minute")
    shop, blog, docs = Blueprint("shop", __name__), Blueprint("blog", __name__), Blueprint("docs", __name__)

    @shop.get("/")
    @limits.limit("5/minute")
    def index():
        return jsonify(ok=True)

    @blog.get("/")
    def index():  # noqa: F811 - another blueprint's view of the same name
        return jsonify(ok=True)

    @docs.get("/")
    @limits.exempt
    def index():  # noqa: F811
        return jsonify(ok=True)

    @app.get("/index")
    def index():  # noqa: F811
        return jsonify(ok=True)

    app.register_blueprint(shop, url_prefix="/shop")
    app.register_blueprint(blog, url_prefix="/blog")
    app.register_blueprint(docs, url_prefix="/docs")
    client = app.test_client()
    assert [client.get("/blog/").status_code for _ in range(3)] == [200, 200, 429]
    assert [client.get("/shop/").status_code for _ in range(3)] == [200, 200, 200]
    assert client.get("/shop/").headers["X-RateLimit-Limit"] == "5"
    assert all(client.get("/docs/").status_code == 200 for _ in range(3))
    other = {"REMOTE_ADDR": "10.0.0.2"}
    assert [client.get("/index", environ_base=other).status_code for _ in range(3)] == [200, 200, 429]


def test_bytes_keys_stay_distinct(store_url):
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}")

    @app.get("/raw")
    @limits.limit("1/minute", key_func=lambda: bytes.fromhex(request.args["hex"]))
    def raw():
        return jsonify(ok=True)

    client = app.test_client()
    assert client.get("/raw?hex=ff").status_code == 200
    assert client.get("/raw?hex=fe").status_code == 200, "b'\\xfe' is not b'\\xff'"
    assert client.get("/raw?hex=ff").status_code == 429
    assert client.get("/raw?hex=616e6e").status_code == 200
    assert client.get("/raw?hex=616e6e").status_code == 429
