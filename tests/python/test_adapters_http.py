"""Every Python adapter (Flask, Starlette, FastAPI, Django sync and async) in its real server (gunicorn,
uvicorn), driven over real HTTP against a real redis-server: 3×200 then a 429 whose headers parse as
structured fields, rules, costs and keys from the request, unusable keys, client keys (a spoofed
X-Forwarded-For ignored, trusted proxies, IPv6 /56, IPv4-mapped), and the store down under each failure
policy."""

import http.client
import json
from typing import Iterator

import http_sf
import pytest

from adapter_servers import FRAMEWORKS, AppServer, free_port

EVERY_FRAMEWORK = pytest.mark.parametrize("framework", list(FRAMEWORKS))


@pytest.fixture
def serve(redis_server):
    started = []

    def start(framework: str, **env: str) -> AppServer:
        server = AppServer(framework, {"RATELOCK_URL": redis_server.url, **env})
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@EVERY_FRAMEWORK
def test_three_allowed_then_a_429_with_structured_headers(serve, framework):
    app = serve(framework)
    replies = [app.get("/search") for _ in range(4)]
    assert [reply.status for reply in replies] == [200, 200, 200, 429]
    for reply, remaining in zip(replies, [2, 1, 0, 0]):
        (name, parameters), = [(item[0], item[1]) for item in http_sf.parse(reply.headers["RateLimit"].encode(), tltype="list")]
        assert (name, parameters["r"]) == ("3/hour", remaining)
        policy = http_sf.parse(reply.headers["RateLimit-Policy"].encode(), tltype="list")
        assert [(item[0], item[1]["q"], item[1]["w"]) for item in policy] == [("3/hour", 3, 3600)]
    denied = replies[-1]
    assert int(denied.headers["Retry-After"]) == 1200
    assert denied.headers["Content-Type"].startswith("text/plain")
    assert denied.body == b"Too many requests: over the limit of 3/hour; retry in 1200 s.\n"


@EVERY_FRAMEWORK
def test_rules_costs_keys_and_skips_from_the_request(serve, framework):
    app = serve(framework)
    assert [app.get("/tenant?plan=free").status for _ in range(3)] == [200, 200, 429]
    assert [app.get("/tenant?plan=pro").status for _ in range(6)] == [200] * 5 + [429]
    assert app.get("/cost?n=7").status == 200
    assert app.get("/cost?n=4").status == 429
    assert app.get("/cost?n=3").status == 200
    keyless = app.get("/key")
    assert keyless.status == 400 and keyless.body == b"The request has no usable rate-limit key.\n"
    assert app.get("/key?k=" + "x" * 66_000).status in (400, 414, 431), "too long for a key (or for the server)"
    assert app.get("/key?k=ann").status == 200
    skipped = app.get("/skip")
    assert skipped.status == 200 and "RateLimit" not in skipped.headers
    seen = json.loads(app.get("/decision").body)
    assert seen == {"remaining": 49, "degraded": False}


@EVERY_FRAMEWORK
def test_a_spoofed_forwarded_for_is_ignored_unless_the_proxy_is_trusted(serve, framework):
    direct = serve(framework)
    forged = [direct.get("/search", {"X-Forwarded-For": f"198.51.100.{n}"}).status for n in range(4)]
    assert forged == [200, 200, 200, 429], "every forged address is still the one peer"
    proxied = serve(framework, RATELOCK_TRUSTED_PROXIES="1")
    assert [proxied.get("/search", {"X-Forwarded-For": f"6.6.6.6, 198.51.100.{n}"}).status for n in range(4)] == [200] * 4
    same_56 = ["2001:db8:1:100::1", "2001:db8:1:1ff::2", "2001:db8:1:180:ffff::3", "2001:db8:1:1aa::4"]
    assert [proxied.get("/search", {"X-Forwarded-For": a}).status for a in same_56] == [200, 200, 200, 429]
    assert proxied.get("/search", {"X-Forwarded-For": "2001:db8:1:200::1"}).status == 200, "the next /56"
    folded = ["203.0.113.9", "::ffff:203.0.113.9", "::ffff:cb00:7109", "203.0.113.9"]
    assert [proxied.get("/search", {"X-Forwarded-For": a}).status for a in folded] == [200, 200, 200, 429]


def _with_two_forwarded_lines(port: int, path: str, client_line: str, proxy_line: str) -> int:
    """The status of a GET whose X-Forwarded-For comes in two lines: the client's own, then the one
    its proxy added (as HAProxy's ``option forwardfor`` does)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest("GET", path)
        connection.putheader("X-Forwarded-For", client_line)
        connection.putheader("X-Forwarded-For", proxy_line)
        connection.endheaders()
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


@EVERY_FRAMEWORK
def test_every_line_of_the_forwarded_header_is_read(serve, framework):
    # FastAPI read only the first line, which the client wrote: each made-up address was a new key.
    proxied = serve(framework, RATELOCK_TRUSTED_PROXIES="1")
    statuses = [_with_two_forwarded_lines(proxied.port, "/search", f"6.6.6.{n}", "198.51.100.7") for n in range(4)]
    assert statuses == [200, 200, 200, 429], "the proxy's line names the client"


@EVERY_FRAMEWORK
def test_the_store_down_follows_the_failure_policy(serve, framework):
    down = f"redis://127.0.0.1:{free_port()}/"
    raising = serve(framework, RATELOCK_URL=down, RATELOCK_DENIED_BODY="json")
    unavailable = raising.get("/search")
    assert (unavailable.status, unavailable.headers["Retry-After"]) == (503, "1")
    assert json.loads(unavailable.body) == {"error": "store_unavailable"}
    allowing = serve(framework, RATELOCK_URL=down, RATELOCK_ON_ERROR="allow")
    assert allowing.get("/search").status == 200
    assert json.loads(allowing.get("/decision").body) == {"remaining": 0, "degraded": True}
    denying = serve(framework, RATELOCK_URL=down, RATELOCK_ON_ERROR="deny")
    refused = denying.get("/search")
    assert refused.status == 429 and refused.body == b"Too many requests; retry in 1 s.\n"


@pytest.mark.parametrize("framework", ["flask", "django-wsgi"])
def test_an_ipv4_mapped_peer_shares_the_key_of_its_ipv4_address(redis_server, framework):
    """A dual-stack server (gunicorn bound to ::; uvicorn binds :: for IPv6 only) sees 127.0.0.1 as
    ::ffff:127.0.0.1; a server bound to 127.0.0.1
    sees it plain. On one Redis, with one prefix, both count one client."""
    env = {"RATELOCK_URL": redis_server.url, "RATELOCK_PREFIX": f"mapped-{framework}"}
    dual, plain = AppServer(framework, env, host="::"), AppServer(framework, env)
    try:
        statuses = [server.get("/search").status for server in (dual, plain, dual, plain)]
        assert statuses == [200, 200, 200, 429]
    finally:
        dual.stop(), plain.stop()
