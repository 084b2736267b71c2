"""ratelock.flask: 429 with Retry-After and rate-limit headers from one decision, default limits (per view),
application limits (shared by every view),
exemptions, methods, keys, scopes that never share a bucket, unusable keys, the failure policy with a
stopped Redis (503 under raise), and a real HTTP server process."""

import json
import time
import uuid

import http_sf
from flask import Blueprint, Flask, Response, jsonify, request

from conftest import RedisServer
from ratelock.flask import RateLimiter


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
    client = make_app(store_url, legacy_headers=True).test_client()
    first = client.get("/limited")
    assert first.status_code == 200
    assert first.headers["X-RateLimit-Limit"] == "2" and first.headers["X-RateLimit-Remaining"] == "1"
    assert first.headers["RateLimit"] == '"2/minute";r=1;t=30'
    assert first.headers["RateLimit-Policy"] == '"2/minute";q=2;w=60'
    assert client.get("/limited").status_code == 200
    denied = client.get("/limited")
    assert denied.status_code == 429
    assert denied.headers["Retry-After"] == "30"
    assert denied.headers["X-RateLimit-Remaining"] == "0"
    assert int(denied.headers["X-RateLimit-Reset"]) >= int(time.time()) + 59
    assert denied.get_data(as_text=True) == "Too many requests: over the limit of 2/minute; retry in 30 s.\n"
    assert client.post("/limited").status_code == 200, "POST is not limited"
    assert client.get("/limited?vip=1").status_code == 200, "exempt_when skips the limit"


def test_a_get_limit_counts_head_which_flask_answers_with_the_get_view(store_url):
    client = make_app(store_url).test_client()
    assert [client.head("/limited").status_code for _ in range(3)] == [200, 200, 429]
    assert client.get("/limited").status_code == 429, "one count for GET and HEAD"


def test_headers_parse_as_structured_fields_in_every_draft(store_url):
    for style in ("draft-8", "draft-11"):
        client = make_app(store_url, standard_headers=style).test_client()
        response = client.get("/limited")
        policies = http_sf.parse(response.headers["RateLimit-Policy"].encode(), tltype="list")
        (name, parameters), = [(item[0], item[1]) for item in policies]
        assert (name, parameters["q"], parameters["w"]) == ("2/minute", 2, 60)
        limits = http_sf.parse(response.headers["RateLimit"].encode(), tltype="list")
        assert limits[0][0] == "2/minute" and limits[0][1]["r"] == 1
    draft7 = make_app(store_url, standard_headers="draft-7").test_client().get("/limited")
    assert http_sf.parse(draft7.headers["RateLimit"].encode(), tltype="dictionary")["remaining"][0] == 1
    none = make_app(store_url, standard_headers=False).test_client().get("/limited")
    assert "RateLimit" not in none.headers and "X-RateLimit-Limit" not in none.headers


def test_denied_bodies_and_statuses(store_url):
    for body, content_type in (("json", "application/json"), ("problem", "application/problem+json")):
        client = make_app(store_url, denied_body=body, status_code=403).test_client()
        client.get("/limited"), client.get("/limited")
        denied = client.get("/limited")
        assert (denied.status_code, denied.headers["Content-Type"]) == (403, content_type)
        document = json.loads(denied.get_data())
        if body == "problem":
            assert document["type"].endswith("#quota-exceeded") and document["violated-policies"] == ["2/minute"]
        else:
            assert document == {"error": "rate_limited", "policy": "2/minute", "retry_after": 30}


def test_scopes_never_share_a_bucket(store_url):
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}")

    @app.get("/api")
    @limits.limit("1/minute", scope="api", key_func=lambda: request.args["k"])
    def api():
        return jsonify(ok=True)

    @app.get("/api-v2")
    @limits.limit("1/minute", scope="api:v2", key_func=lambda: request.args["k"])
    def api_v2():
        return jsonify(ok=True)

    client = app.test_client()
    assert client.get("/api?k=v2:bob").status_code == 200
    assert client.get("/api-v2?k=bob").status_code == 200, "scope api + v2:bob is not scope api:v2 + bob"


def test_unusable_keys_answer_400_and_bad_rules_fail_at_startup(store_url, caplog):
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", denied_body="json")

    @app.get("/key")
    @limits.limit("5/minute", key_func=lambda: request.args.get("k"))
    def keyed():
        return jsonify(ok=True)

    client = app.test_client()
    missing = client.get("/key")
    assert (missing.status_code, missing.get_json()) == (400, {"error": "invalid_key"})
    assert "not str or bytes" in caplog.text
    too_long = client.get("/key?k=" + "x" * 70_000)
    assert too_long.status_code == 400
    assert "longer than the limit" in caplog.text
    import ratelock

    try:
        limits.limit("5/fortnight")
    except ratelock.InvalidRule as error:
        assert "fortnight" in str(error)
    else:
        raise AssertionError("a bad rule text must fail when the app is built")


def test_rules_and_costs_from_the_request_and_skip(store_url):
    app = Flask(__name__)
    plans = {"free": "2/minute", "pro": "5/minute"}
    limits = RateLimiter(
        app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", skip=lambda: request.args.get("admin") == "1"
    )

    @app.get("/tenant")
    @limits.limit(lambda: plans[request.args["plan"]], key_func=lambda: request.args["plan"])
    def tenant():
        return jsonify(ok=True)

    @app.get("/upload")
    @limits.limit("10/minute", cost=lambda: int(request.args["n"]))
    def upload():
        return jsonify(ok=True)

    client = app.test_client()
    assert [client.get("/tenant?plan=free").status_code for _ in range(3)] == [200, 200, 429]
    assert [client.get("/tenant?plan=pro").status_code for _ in range(6)] == [200] * 5 + [429]
    assert client.get("/upload?n=7").status_code == 200
    assert client.get("/upload?n=4").status_code == 429
    assert client.get("/upload?n=4&admin=1").status_code == 200, "skip lets it through uncounted"
    assert client.get("/upload?n=3").status_code == 200


def test_keys_and_default_limits(store_url):
    client = make_app(store_url, default_limits="3/minute").test_client()
    assert client.get("/per-user?user=ann").status_code == 200
    assert client.get("/per-user?user=ann").status_code == 429
    assert client.get("/per-user?user=bob").status_code == 200
    assert [client.get("/open").status_code for _ in range(4)] == [200, 200, 200, 429]
    assert all(client.get("/health").status_code == 200 for _ in range(5))
    assert "RateLimit" not in client.get("/health").headers


def test_store_failures_follow_on_error():
    server = RedisServer()
    try:
        allow = make_app(server.url, on_error="allow", timeout=0.3).test_client()
        breaches = []
        deny = make_app(server.url, on_error="deny", timeout=0.3, on_breach=breaches.append).test_client()
        raising = make_app(server.url, timeout=0.3, denied_body="problem").test_client()
        assert allow.get("/open").status_code == 200
    finally:
        server.stop()
    assert allow.get("/limited").status_code == 200
    assert deny.get("/limited").status_code == 429
    assert breaches == [], "on_breach is told of denials, not of an outage's"
    unavailable = raising.get("/limited")
    assert (unavailable.status_code, unavailable.headers["Retry-After"]) == (503, "1")
    assert unavailable.get_json()["title"] == "Service Unavailable"


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
    assert client.get("/above").headers["RateLimit-Policy"] == '"2/minute";q=2;w=60'
    assert all(client.get("/above-exempt").status_code == 200 for _ in range(3))


def test_a_mark_put_after_the_first_request_applies(store_url):
    # The marks of a view are looked up once per view; marking a view later must still count.
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="1/minute")

    def late():
        return jsonify(ok=True)

    app.add_url_rule("/late", "late", late)
    client = app.test_client()
    assert [client.get("/late").status_code for _ in range(2)] == [200, 429], "the default limit"
    limits.exempt(late)
    assert client.get("/late").status_code == 200, "exempted after the first requests"
    limits.limit("3/minute", scope="late-own")(late)
    assert client.get("/late").headers["RateLimit-Policy"] == '"3/minute";q=3;w=60', "its own limit now"


def test_a_refusal_carries_the_refusing_limits_headers(store_url):
    # The outer limit passes and the inner one refuses: the 429 names the inner limit, not the outer.
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}")

    @app.get("/two")
    @limits.limit("10/minute", scope="outer")
    @limits.limit("1/minute", scope="inner")
    def two():
        return jsonify(ok=True)

    client = app.test_client()
    assert client.get("/two").status_code == 200
    refused = client.get("/two")
    assert refused.status_code == 429
    assert refused.headers["RateLimit-Policy"] == '"1/minute";q=1;w=60'
    assert refused.headers["RateLimit"].startswith('"1/minute";r=0;')


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
    assert client.get("/shop/").headers["RateLimit-Policy"] == '"5/minute";q=5;w=60'
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


def test_deduct_when_gives_back_what_it_does_not_count(store_url, caplog):
    # Flask-Limiter's deduct_when: an allowed request stays counted only when it answers true for the
    # response; otherwise its units are given back once the response is made.
    app = Flask(__name__)
    failed = lambda response: response.status_code >= 400  # noqa: E731
    limits = RateLimiter(
        app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="2/minute", default_limits_deduct_when=failed
    )

    @app.post("/login")
    @limits.limit("2/minute", deduct_when=failed)
    def login():
        return (jsonify(ok=True), 200) if request.args.get("password") == "right" else (jsonify(ok=False), 401)

    @app.get("/crash")
    @limits.limit("1/minute", deduct_when=lambda response: response.status_code < 500)
    def crash():
        raise RuntimeError("a view that fails")

    @app.get("/page")
    def page():
        return ("ok", 200) if request.args.get("ok") else ("gone", 404)

    @app.get("/unsure")
    @limits.limit("1/minute", deduct_when=lambda response: 1 / 0)
    def unsure():
        return "ok"

    client = app.test_client()
    # A failed login counts; a successful one gives back its own unit, and only its own.
    assert client.post("/login").status_code == 401
    assert [client.post("/login?password=right").status_code for _ in range(4)] == [200] * 4, "successes are given back"
    assert [client.post("/login").status_code for _ in range(2)] == [401, 429]
    assert [client.get("/crash").status_code for _ in range(3)] == [500] * 3, "a view's error response is given back too"
    assert [client.get("/page?ok=1").status_code for _ in range(3)] == [200] * 3, "the default limits' deduct_when"
    assert [client.get("/page").status_code for _ in range(3)] == [404, 404, 429]
    # A deduct_when that fails leaves the request counted, and says so.
    assert [client.get("/unsure").status_code for _ in range(2)] == [200, 429]
    assert "stays counted" in caplog.text and "ZeroDivisionError" in caplog.text


def test_deduct_when_settles_an_error_flask_lets_propagate(store_url):
    # With TESTING (or PROPAGATE_EXCEPTIONS) the view's error reaches the caller and no after_request
    # runs: the teardown settles it as a 500.
    app = Flask(__name__)
    app.testing = True
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}")

    @app.get("/crash")
    @limits.limit("1/minute", deduct_when=lambda response: response.status_code < 500)
    def crash():
        raise RuntimeError("a view that fails")

    client = app.test_client()
    for _ in range(3):
        try:
            client.get("/crash")
        except RuntimeError:
            pass
        else:
            raise AssertionError("the view's error propagates under TESTING")
    from ratelock.http import scoped_key

    assert limits.limiter.peek(scoped_key("crash", "127.0.0.1"), "1/minute").allowed, "the failures were given back"


def test_default_limits_count_each_view_and_application_limits_count_all(store_url):
    # Flask-Limiter's meanings: a default limit is per route, an application limit is one bucket for the
    # whole app; an exempt view is out of both.
    app = Flask(__name__)
    limits = RateLimiter(
        app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="2/minute", application_limits="5/minute"
    )

    @app.get("/a")
    def view_a():
        return jsonify(ok=True)

    @app.get("/b")
    def view_b():
        return jsonify(ok=True)

    @app.get("/own")
    @limits.limit("10/minute")
    def own():
        return jsonify(ok=True)

    @app.get("/health")
    @limits.exempt
    def health():
        return jsonify(ok=True)

    client = app.test_client()
    assert [client.get("/a").status_code for _ in range(3)] == [200, 200, 429], "the default limit on /a"
    assert [client.get("/b").status_code for _ in range(2)] == [200, 200], "/b counts on its own"
    # 5 of the application limit spent (the refused /a too: it passed the application limit first).
    assert client.get("/own").status_code == 429, "the application limit covers views with their own limits"
    assert all(client.get("/health").status_code == 200 for _ in range(3)), "exempt from both"


def test_override_defaults_false_keeps_the_default_limits(store_url):
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="2/minute")

    @app.get("/both")
    @limits.limit("10/minute", override_defaults=False)
    def both():
        return jsonify(ok=True)

    @app.get("/own")
    @limits.limit("10/minute")
    def own():
        return jsonify(ok=True)

    client = app.test_client()
    assert [client.get("/both").status_code for _ in range(3)] == [200, 200, 429], "the default limit too"
    assert client.get("/both").headers["RateLimit-Policy"] == '"2/minute";q=2;w=60'
    assert [client.get("/own").status_code for _ in range(3)] == [200, 200, 200], "its own limit only"


def test_blueprint_limits_replace_the_default_ones_and_a_views_own_replace_the_blueprints(store_url):
    # Flask-Limiter's order: a view's own limits, else its blueprint's, else the default ones; each
    # counted per view.
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="2/minute")
    shop = limits.limit("3/minute")(Blueprint("shop", __name__))
    both = limits.limit("4/minute", override_defaults=False)(Blueprint("both", __name__))

    @shop.get("/a")
    def shop_a():
        return jsonify(ok=True)

    @shop.get("/b")
    def shop_b():
        return jsonify(ok=True)

    @shop.get("/own")
    @limits.limit("5/minute")
    def shop_own():
        return jsonify(ok=True)

    @both.get("/c")
    def both_c():
        return jsonify(ok=True)

    @app.get("/plain")
    def plain():
        return jsonify(ok=True)

    app.register_blueprint(shop, url_prefix="/shop")
    app.register_blueprint(both, url_prefix="/both")
    client = app.test_client()
    assert [client.get("/shop/a").status_code for _ in range(4)] == [200, 200, 200, 429], "the blueprint's limit"
    assert client.get("/shop/a").headers["RateLimit-Policy"] == '"3/minute";q=3;w=60'
    assert [client.get("/shop/b").status_code for _ in range(4)] == [200, 200, 200, 429], "counted per view"
    assert [client.get("/shop/own").status_code for _ in range(6)] == [200] * 5 + [429], "the view's own limit"
    assert [client.get("/both/c").status_code for _ in range(3)] == [200, 200, 429], "the defaults kept too"
    assert [client.get("/plain").status_code for _ in range(3)] == [200, 200, 429]


def test_a_nested_blueprints_limits_replace_its_parents_and_an_exempt_parent_covers_it(store_url):
    app = Flask(__name__)
    limits = RateLimiter(
        app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="1/minute", application_limits="50/minute"
    )
    api = limits.limit("3/minute")(Blueprint("api", __name__))
    v1 = limits.limit("2/minute")(Blueprint("v1", __name__))
    internal = limits.exempt(Blueprint("internal", __name__))
    tools = Blueprint("tools", __name__)
    audit = limits.limit("2/minute")(Blueprint("audit", __name__))

    @api.get("/status")
    def status():
        return jsonify(ok=True)

    @v1.get("/items")
    def items():
        return jsonify(ok=True)

    @tools.get("/sweep")
    def sweep():
        return jsonify(ok=True)

    @tools.get("/guarded")
    @limits.limit("1/minute")
    def guarded():
        return jsonify(ok=True)

    @audit.get("/log")
    def log():
        return jsonify(ok=True)

    api.register_blueprint(v1, url_prefix="/v1")
    internal.register_blueprint(tools, url_prefix="/tools")
    internal.register_blueprint(audit, url_prefix="/audit")
    app.register_blueprint(api, url_prefix="/api")
    app.register_blueprint(api, url_prefix="/api2", name="api2")
    app.register_blueprint(internal, url_prefix="/internal")
    client = app.test_client()
    assert [client.get("/api/v1/items").status_code for _ in range(3)] == [200, 200, 429], "the nested one's own"
    assert [client.get("/api/status").status_code for _ in range(4)] == [200, 200, 200, 429], "the parent's"
    assert [client.get("/api2/status").status_code for _ in range(4)] == [200, 200, 200, 429], "registered again"
    assert [client.get("/internal/audit/log").status_code for _ in range(3)] == [200, 200, 429], "nested in exempt"
    assert all(client.get("/internal/tools/sweep").status_code == 200 for _ in range(60)), "no limit, nor the app's"
    assert [client.get("/internal/tools/guarded").status_code for _ in range(2)] == [200, 429], "its own still"


def test_the_same_rule_at_two_levels_counts_once_in_each(store_url):
    # Every level counted under the endpoint alone: one request spent 2 of a rule both levels name.
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="3/minute")
    shop = limits.limit("3/minute", override_defaults=False)(Blueprint("shop", __name__))

    @shop.get("/a")
    @limits.limit("3/minute", override_defaults=False)
    def shop_a():
        return jsonify(ok=True)

    app.register_blueprint(shop, url_prefix="/shop")
    client = app.test_client()
    assert [client.get("/shop/a").status_code for _ in range(4)] == [200, 200, 200, 429]


def test_a_blueprint_named_default_counts_apart_from_the_default_limits(store_url):
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="2/minute")
    named = limits.limit("2/minute", override_defaults=False)(Blueprint("default", __name__))

    @named.get("/a")
    def named_a():
        return jsonify(ok=True)

    app.register_blueprint(named, url_prefix="/named")
    client = app.test_client()
    assert [client.get("/named/a").status_code for _ in range(3)] == [200, 200, 429]


def test_per_method_counts_each_method_on_its_own(store_url):
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}")

    @app.route("/split", methods=["GET", "POST"])
    @limits.limit("1/minute", per_method=True)
    def split():
        return jsonify(ok=True)

    @app.route("/shared", methods=["GET", "POST"])
    @limits.limit("1/minute", scope="shared")
    def shared():
        return jsonify(ok=True)

    client = app.test_client()
    assert [client.get("/split").status_code, client.get("/split").status_code] == [200, 429]
    assert [client.post("/split").status_code, client.post("/split").status_code] == [200, 429]
    assert [client.get("/shared").status_code, client.post("/shared").status_code] == [200, 429]


def test_where_no_own_limit_counts_the_method_the_default_limits_apply(store_url):
    # Flask-Limiter's rule: a view's own limits replace the defaults only for the methods they count.
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="2/minute")

    @app.route("/form", methods=["GET", "POST"])
    @limits.limit("5/minute", methods=["POST"])
    def form():
        return jsonify(ok=True)

    client = app.test_client()
    assert [client.get("/form").status_code for _ in range(3)] == [200, 200, 429], "GET: the default limit"
    assert [client.post("/form").status_code for _ in range(6)] == [200] * 5 + [429], "POST: its own limit"


def test_on_breach_is_told_the_refusing_decision_and_may_answer_instead(store_url):
    app = Flask(__name__)
    told = []

    def teapot(decision):
        told.append(("limiter", decision.allowed, decision.limit))
        return Response("slow down, tea is brewing", status=418)

    def note_only(decision):
        told.append(("view", decision.allowed, decision.limit))
        return None

    limits = RateLimiter(
        app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", default_limits="1/minute", on_breach=teapot
    )

    @app.get("/default")
    def default_view():
        return jsonify(ok=True)

    @app.get("/own")
    @limits.limit("1/minute", on_breach=note_only)
    def own():
        return jsonify(ok=True)

    client = app.test_client()
    assert client.get("/default").status_code == 200 and told == [], "not called for an allowed request"
    breached = client.get("/default")
    assert (breached.status_code, breached.get_data(as_text=True)) == (418, "slow down, tea is brewing")
    assert int(breached.headers["Retry-After"]) > 0, "the refusal's headers come with the chosen response"
    assert client.get("/own").status_code == 200
    assert client.get("/own").status_code == 429, "None: the usual refusal"
    assert told == [("limiter", False, 1), ("view", False, 1)], "the limit's own replaces the limiter's"


def test_limits_on_a_method_view_count(store_url):
    # A MethodView's handler or class marked as Flask-Limiter users mark them was never seen: the view
    # Flask registers is as_view's function, which wraps neither. Four logins all passed a 2/minute limit.
    from flask.views import MethodView

    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}")

    class Login(MethodView):
        def get(self):
            return jsonify(form=True)

        @limits.limit("2/minute")
        def post(self):
            return jsonify(ok=True)

    @limits.limit("1/minute")
    class Report(MethodView):
        def get(self):
            return jsonify(ok=True)

    class Quiet(MethodView):
        @limits.exempt
        def get(self):
            return jsonify(ok=True)

    app.add_url_rule("/login", view_func=Login.as_view("login"))
    app.add_url_rule("/report", view_func=Report.as_view("report"))
    app.add_url_rule("/quiet", view_func=Quiet.as_view("quiet"))
    client = app.test_client()
    assert [client.post("/login").status_code for _ in range(3)] == [200, 200, 429]
    assert [client.get("/login").status_code for _ in range(3)] == [200, 200, 200], "the limit is post's"
    assert [client.get("/report").status_code for _ in range(2)] == [200, 429]


def test_per_method_counts_head_with_get(store_url):
    # Flask answers HEAD by running the GET view: per_method gave HEAD a bucket of its own, so a 2/minute
    # GET limit let the view run 4 times.
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}")

    @app.get("/page")
    @limits.limit("2/minute", per_method=True)
    def page():
        return jsonify(ok=True)

    client = app.test_client()
    answers = [client.get("/page").status_code, client.head("/page").status_code, client.get("/page").status_code]
    assert answers == [200, 200, 429]


def test_a_view_named_application_has_a_bucket_of_its_own(store_url):
    # Its scope was its endpoint's name, "application", the application limits' scope: with the same
    # rule text each request counted twice in one bucket.
    app = Flask(__name__)
    limits = RateLimiter(app, url=store_url, prefix=f"f{uuid.uuid4().hex[:8]}", application_limits="4/minute")

    @app.get("/application")
    @limits.limit("4/minute")
    def application():
        return jsonify(ok=True)

    client = app.test_client()
    assert [client.get("/application").status_code for _ in range(5)] == [200, 200, 200, 200, 429]
