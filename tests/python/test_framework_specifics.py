"""What is particular to one Python framework's adapter: Django's settings dict, system checks,
middleware defaults and exemptions; FastAPI's ``Refused`` without the app's handler; Starlette's
``default_limits`` and async functions of the request."""

import functools
import json
import subprocess
import sys
import textwrap
import uuid
from typing import Any, Dict

import pytest

import ratelock
import ratelock.asyncio
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from adapter_servers import AppServer, HERE
from ratelock.fastapi import RateLimiter
from ratelock.starlette import RateLimitMiddleware


def django_check(settings: str) -> subprocess.CompletedProcess[str]:
    """`manage.py check` in a fresh process configured with `settings` (Python keyword arguments)."""
    script = textwrap.dedent(
        f"""
        import django
        from django.conf import settings
        from django.core.management import call_command
        settings.configure(SECRET_KEY="x", INSTALLED_APPS=["ratelock.django"], {settings})
        django.setup()
        call_command("check")
        """
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=HERE, timeout=60)


def test_django_system_checks_report_bad_rules_urls_and_keys() -> None:
    assert django_check('RATELOCK={"URL": "redis://127.0.0.1/", "DEFAULT_LIMITS": "10/minute"}').returncode == 0
    bad_rule = django_check('RATELOCK={"DEFAULT_LIMITS": "10/fortnight"}')
    assert bad_rule.returncode != 0 and "ratelock.E003" in bad_rule.stderr and "fortnight" in bad_rule.stderr
    bad_application = django_check('RATELOCK={"APPLICATION_LIMITS": "10/fortnight"}')
    assert bad_application.returncode != 0 and "ratelock.E003" in bad_application.stderr
    assert "APPLICATION_LIMITS" in bad_application.stderr
    bad_url = django_check('RATELOCK={"URL": "http://127.0.0.1/"}')
    assert bad_url.returncode != 0 and "ratelock.E002" in bad_url.stderr
    typo = django_check('RATELOCK={"DEFAULT_LIMIT": "10/minute"}')
    assert typo.returncode != 0 and "ratelock.E001" in typo.stderr and "DEFAULT_LIMIT" in typo.stderr
    bad_style = django_check('RATELOCK={"STANDARD_HEADERS": "draft-9"}')
    assert bad_style.returncode != 0 and "ratelock.E004" in bad_style.stderr and "standard_headers" in bad_style.stderr


@pytest.mark.parametrize("framework", ["django-wsgi", "django-asgi"])
def test_django_middleware_limits_views_without_their_own_limit(redis_server, framework: str) -> None:
    app = AppServer(framework, {"RATELOCK_URL": redis_server.url})
    try:
        limited = app.get("/default")
        assert limited.status == 200 and limited.headers["RateLimit"] == '"100/hour";r=99;t=36'
        assert "RateLimit" not in app.get("/exempt").headers
        assert app.get("/search").headers["RateLimit"].startswith('"3/hour"'), "a view's own limit, not the default"
    finally:
        app.stop()


@pytest.mark.parametrize("framework", ["django-wsgi", "django-asgi"])
def test_django_default_limits_count_each_view_and_application_limits_count_all(redis_server, framework: str) -> None:
    # Flask-Limiter's meanings, as the Flask adapter has them: the default limits were one bucket shared
    # by every view, so one busy view used up every other view's allowance. The application limits are a
    # plain function Django refuses to run on an event loop: under ASGI it runs off the loop.
    app = AppServer(framework, {"RATELOCK_URL": redis_server.url, "RATELOCK_APPLICATION_LIMITS": "6/hour"})
    try:
        assert app.get("/default").headers["RateLimit"] == '"100/hour";r=99;t=36'
        assert app.get("/default-other").headers["RateLimit"] == '"100/hour";r=99;t=36', "a bucket of its own"
        own = app.get("/search")
        assert own.status == 200 and own.headers["RateLimit"].startswith('"3/hour"'), "its own limit's headers"
        assert all(app.get("/exempt").status == 200 for _ in range(3)), "out of the application limit"
        # Three requests counted by the application limit (/default, /default-other, /search): three more
        # pass, whichever view they reach, and the seventh is refused.
        assert [app.get("/default").status for _ in range(4)] == [200, 200, 200, 429]
        assert app.get("/search").status == 429, "the application limit covers views with their own limits"
        assert app.get("/exempt").status == 200
    finally:
        app.stop()


@pytest.mark.parametrize("framework", ["django-wsgi", "django-asgi"])
def test_django_a_view_limited_on_post_alone_is_under_the_default_limits_for_get(redis_server, framework: str) -> None:
    # Flask-Limiter's rule, as the Flask adapter has it: any @ratelimit kept the default limits off every
    # method of the view, so a GET of a view limited on POST had no limit at all.
    app = AppServer(framework, {"RATELOCK_URL": redis_server.url})
    try:
        assert app.get("/post-only").headers.get("RateLimit") == '"100/hour";r=99;t=36'
    finally:
        app.stop()


@pytest.mark.parametrize("framework", ["django-wsgi", "django-asgi"])
def test_django_runs_plain_functions_of_the_request_off_the_event_loop(redis_server, framework: str) -> None:
    # Under ASGI a plain key function ran on the event loop, where Django refuses sync-only code (the
    # ORM, request.user): a 500 for every request that used it.
    app = AppServer(framework, {"RATELOCK_URL": redis_server.url})
    try:
        assert [app.get("/sync-only-key").status for _ in range(4)] == [200, 200, 200, 429]
    finally:
        app.stop()


def test_fastapi_refusals_are_http_exceptions_even_without_the_handler() -> None:
    limiter = RateLimiter(denied_body="json")
    app = FastAPI()  # no install(app): FastAPI's own HTTPException handler answers

    @app.get("/x", dependencies=[Depends(limiter.limit("1/minute", key_func=lambda request: "one"))])
    async def x() -> dict:
        return {"ok": True}

    with TestClient(app) as client:
        assert client.get("/x").status_code == 200
        refused = client.get("/x")
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "60"
        assert json.loads(refused.json()["detail"]) == {"error": "rate_limited", "policy": "1/minute", "retry_after": 60}


def test_fastapi_scopes_endpoints_without_a_name_by_their_route() -> None:
    # A callable object or a functools.partial has no __qualname__: reading it answered 500.
    limiter = RateLimiter()
    app = FastAPI()

    class Greeter:
        async def __call__(self) -> dict:
            return {"ok": True}

    async def hello(word: str = "hi") -> dict:
        return {"word": word}

    limit = limiter.limit("2/minute", key_func=lambda request: "one")
    app.add_api_route("/object", Greeter(), dependencies=[Depends(limit)])
    app.add_api_route("/partial", functools.partial(hello, word="yo"), dependencies=[Depends(limit)])
    with TestClient(app) as client:
        assert [client.get("/object").status_code for _ in range(3)] == [200, 200, 429]
        assert [client.get("/partial").status_code for _ in range(3)] == [200, 200, 429], "a bucket of its own"


def test_fastapi_headers_reach_a_response_the_endpoint_returns() -> None:
    # FastAPI copies a dependency's headers only onto a response it builds: an endpoint returning its own
    # JSONResponse went out without them.
    limiter = RateLimiter(legacy_headers=True)
    app = FastAPI()
    limiter.install(app)
    limit = limiter.limit("5/minute", key_func=lambda request: "one")

    @app.get("/built", dependencies=[Depends(limit)])
    async def built() -> dict:
        return {"ok": True}

    @app.get("/returned", dependencies=[Depends(limit)])
    async def returned() -> JSONResponse:
        return JSONResponse({"ok": True}, headers={"X-RateLimit-Limit": "mine"})

    with TestClient(app) as client:
        made = client.get("/built")
        given = client.get("/returned")
    assert made.status_code == given.status_code == 200

    def limit_headers(response: Any) -> Dict[str, str]:
        return {k.lower(): v for k, v in response.headers.items() if "ratelimit" in k.lower() and k.lower() != "x-ratelimit-limit"}

    assert made.headers["X-RateLimit-Remaining"] == "4" and len(limit_headers(made)) >= 2
    assert limit_headers(given) == limit_headers(made)
    # A header the endpoint set itself is its own.
    assert given.headers.get_list("X-RateLimit-Limit") == ["mine"]


def test_starlette_default_limits_and_async_functions_of_the_request() -> None:
    async def key(request: Request) -> str:
        return request.query_params["user"]

    async def home(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/", home)])
    app.add_middleware(RateLimitMiddleware, default_limits="2/minute", key_func=key)
    with TestClient(app) as client:
        assert [client.get("/?user=ann").status_code for _ in range(3)] == [200, 200, 429]
        assert client.get("/?user=bob").status_code == 200


def test_starlette_routes_without_a_scope_keep_buckets_of_their_own() -> None:
    # Each route's own middleware, no scope named: they shared the bucket "default", so a client's hits
    # on one route used up the other's limit. An app-wide middleware still counts every route together.
    async def home(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    def key(_request: Request) -> str:
        return "one"

    from ratelock.http import HttpLimiter

    shared = HttpLimiter(async_limiter=True)  # one store for both routes, as an app shares its Redis

    def limited(path: str) -> Route:
        return Route(path, home, middleware=[Middleware(RateLimitMiddleware, http=shared, rules="2/minute", key_func=key)])

    app = Starlette(routes=[limited("/login"), limited("/signup")])
    with TestClient(app) as client:
        assert [client.get("/login").status_code for _ in range(3)] == [200, 200, 429]
        assert [client.get("/signup").status_code for _ in range(3)] == [200, 200, 429]
    whole = Starlette(routes=[Route("/a", home), Route("/b", home)])
    whole.add_middleware(RateLimitMiddleware, rules="2/minute", key_func=key)
    with TestClient(whole) as client:
        assert [client.get(path).status_code for path in ("/a", "/b", "/a", "/b")] == [200, 200, 429, 429]


def test_starlette_names_a_route_by_its_endpoint_where_the_router_sets_no_route() -> None:
    # Starlette releases before `scope["route"]` set only `scope["endpoint"]` when matching a route.
    from ratelock.starlette import route_name

    async def login(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    assert route_name({"type": "http", "route": Route("/login", login), "endpoint": login}) == "GET /login"
    named = route_name({"type": "http", "endpoint": login})
    assert named is not None and named.endswith("login") and named.startswith(__name__)
    assert route_name({"type": "http"}) is None, "before routing: the app's middleware"


def test_starlette_one_paths_methods_count_apart_and_a_mounts_parameter_makes_no_bucket() -> None:
    # The name was the route's path alone: a path's GET and POST routes shared a bucket. A mount's
    # matched path (its parameter's value) must not be part of it: a bucket per value is no limit.
    from ratelock.http import HttpLimiter
    from starlette.routing import Mount

    async def home(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    shared = HttpLimiter(async_limiter=True)
    client_key = uuid.uuid4().hex

    def limited(path: str, methods: Any = None) -> Route:
        middleware = [Middleware(RateLimitMiddleware, http=shared, rules="2/minute", key_func=lambda _request: client_key)]
        return Route(path, home, methods=methods, middleware=middleware)

    app = Starlette(routes=[
        Mount("/tenants/{tenant}", routes=[limited("/login")]),
        limited("/things", ["GET"]),
        limited("/things", ["POST"]),
    ])
    with TestClient(app) as client:
        assert [client.get(f"/tenants/t{n}/login").status_code for n in range(3)] == [200, 200, 429]
        assert [client.post("/things").status_code for _ in range(3)] == [200, 200, 429]
        assert [client.get("/things").status_code for _ in range(3)] == [200, 200, 429], "a method of its own"
        assert client.head("/things").status_code == 429, "HEAD counts with GET"


def test_starlette_nested_middlewares_send_the_most_specific_headers_once() -> None:
    async def home(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    client_key = uuid.uuid4().hex
    route = Middleware(RateLimitMiddleware, rules="5/minute", legacy_headers=True, key_func=lambda _request: client_key)
    app = Starlette(routes=[Route("/login", home, middleware=[route])])
    app.add_middleware(RateLimitMiddleware, rules="100/minute", legacy_headers=True, key_func=lambda _request: client_key)
    with TestClient(app) as client:
        answered = client.get("/login")
    assert answered.headers.get_list("X-RateLimit-Limit") == ["5"]
    assert answered.headers.get_list("X-RateLimit-Remaining") == ["4"]
    assert len(answered.headers.get_list("RateLimit")) == 1


def test_starlette_functions_of_the_request_may_read_its_body() -> None:
    # The request was made without the receive channel: reading the body raised (a 500 on every request).
    async def by_user(request: Request) -> str:
        return str((await request.json())["user"])

    async def login(request: Request) -> PlainTextResponse:
        return PlainTextResponse(f"hello {(await request.json())['user']}")

    app = Starlette(routes=[Route("/login", login, methods=["POST"])])
    app.add_middleware(RateLimitMiddleware, rules="2/minute", key_func=by_user)
    ann, bob = (f"{name}-{uuid.uuid4().hex}" for name in ("ann", "bob"))
    with TestClient(app) as client:
        answers = [client.post("/login", json={"user": ann}) for _ in range(3)]
        assert [answer.status_code for answer in answers] == [200, 200, 429]
        assert answers[0].text == f"hello {ann}", "the app reads the body the key function read"
        assert client.post("/login", json={"user": bob}).status_code == 200


def test_the_headers_name_a_keys_override() -> None:
    # The bindings hand the core the deciding rule's figures alone, and the headers went back to the
    # rule's own limit: limit=100 beside remaining=999 under a 1000/minute override.
    import asyncio

    from ratelock.http import HttpLimiter, scoped_key

    async def home(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    client_key = uuid.uuid4().hex
    shared = HttpLimiter(async_limiter=True, legacy_headers=True)
    app = Starlette(routes=[Route("/", home)])
    app.add_middleware(RateLimitMiddleware, http=shared, rules="100/minute", key_func=lambda _request: client_key)
    asyncio.run(shared.limiter.set_override(scoped_key("default", client_key), "1000/minute"))
    with TestClient(app) as client:
        answered = client.get("/")
    assert answered.headers["X-RateLimit-Limit"] == "1000", answered.headers
    assert answered.headers["X-RateLimit-Remaining"] == "999"


def test_async_adapters_refuse_a_sync_limiter_when_the_app_is_built() -> None:
    from ratelock import InvalidArgument
    from ratelock.http import HttpLimiter

    with pytest.raises(InvalidArgument, match="ratelock.asyncio.Limiter"):
        RateLimitMiddleware(Starlette(), limiter=ratelock.Limiter())
    with pytest.raises(InvalidArgument, match="ratelock.asyncio.Limiter"):
        RateLimiter(limiter=ratelock.Limiter())
    with pytest.raises(InvalidArgument, match="`limiter`"):
        HttpLimiter(limiter=ratelock.asyncio.Limiter())
    with pytest.raises(InvalidArgument, match="`http`"):
        RateLimitMiddleware(Starlette(), http=HttpLimiter())


def test_fastapi_settles_a_request_once_however_often_the_app_is_installed() -> None:
    # Each installed copy of the middleware settled the request: a success's refund, made twice, gave back
    # a failure's unit, so failures alternating with one success were never refused.
    def failed(response: Any) -> bool:
        return bool(response.status_code >= 400)

    api = FastAPI()
    RateLimiter(api)
    limiter = RateLimiter(api)
    limiter.install(api)

    client_key = uuid.uuid4().hex

    @api.get("/login", dependencies=[Depends(limiter.limit("2/minute", deduct_when=failed, key_func=lambda _request: client_key))])
    async def login(password: str = "") -> JSONResponse:
        return JSONResponse({"ok": password == "right"}, status_code=200 if password == "right" else 401)

    with TestClient(api) as client:
        answered = [client.get(path).status_code for path in ["/login", "/login?password=right"] * 3]
    assert answered == [401, 200, 401, 429, 429, 429]
    from ratelock.fastapi import HeadersOnEveryResponse

    assert sum(middleware.cls is HeadersOnEveryResponse for middleware in api.user_middleware) == 1


def test_fastapi_counts_each_route_a_factory_makes_and_lets_websockets_through() -> None:
    from fastapi import APIRouter, WebSocket

    client_key = uuid.uuid4().hex
    limiter = RateLimiter(key_func=lambda _request: client_key)
    api = FastAPI(dependencies=[Depends(limiter.limit("100/minute"))])

    def crud(name: str) -> APIRouter:
        router = APIRouter(prefix=f"/{name}")

        @router.get("/", dependencies=[Depends(limiter.limit("2/minute"))])
        async def listing() -> dict:
            return {"name": name}

        return router

    api.include_router(crud("users"))
    api.include_router(crud("orders"))

    @api.websocket("/ws")
    async def talk(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text("hi")
        await websocket.close()

    with TestClient(api) as client:
        assert [client.get("/users/").status_code for _ in range(3)] == [200, 200, 429]
        assert [client.get("/orders/").status_code for _ in range(3)] == [200, 200, 429], "a bucket of its own"
        for _ in range(2):
            with client.websocket_connect("/ws") as socket:
                assert socket.receive_text() == "hi"


def test_starlette_refuses_http_with_options_it_would_ignore() -> None:
    from ratelock import InvalidArgument
    from ratelock.http import HttpLimiter

    shared = HttpLimiter(async_limiter=True)
    with pytest.raises(InvalidArgument, match="on_error"):
        RateLimitMiddleware(Starlette(), http=shared, on_error="allow")
    assert RateLimitMiddleware(Starlette(), http=shared).http is shared


def test_the_flows_settle_gives_back_what_deduct_when_does_not_count_sync_and_async(store_url) -> None:
    # For a framework of one's own: check, make the response, then settle with it.
    import asyncio
    import uuid

    from ratelock.http import HttpLimiter

    prefix = f"s{uuid.uuid4().hex[:8]}"
    sync = HttpLimiter(url=store_url, prefix=prefix)
    failed_only = sync.limit("2/minute", scope="sync", deduct_when=lambda status: status >= 400)
    statuses = []
    for status in (200, 200, 200, 401, 401, 401):
        checked = sync.check(failed_only, None, peer="203.0.113.9")
        statuses.append(checked.answer.status if checked.answer else None)
        sync.settle(failed_only, checked.counted, status)
    assert statuses == [200, 200, 200, 200, 200, 429]

    async def run() -> list:
        async_http = HttpLimiter(url=store_url, prefix=prefix, async_limiter=True)

        async def succeeded(status: int) -> bool:
            return status < 400

        successes_only = async_http.limit("1/minute", scope="async", deduct_when=succeeded)
        seen = []
        for status in (500, 500, 200, 200):
            checked = await async_http.check_async(successes_only, None, peer="203.0.113.9")
            seen.append(checked.answer.status if checked.answer else None)
            await async_http.settle_async(successes_only, checked.counted, status)
        return seen

    assert asyncio.run(run()) == [200, 200, 200, 429]


def test_starlette_and_fastapi_deduct_when_give_back_what_it_does_not_count() -> None:
    # Only failed logins count (deduct_when: a status of 400 or more); an endpoint that raises is a 500.
    def failed(response: Any) -> bool:
        return bool(response.status_code >= 400)

    async def succeeded_async(response: Any) -> bool:
        return bool(response.status_code < 400)

    async def login(request: Request) -> PlainTextResponse:
        right = request.query_params.get("password") == "right"
        return PlainTextResponse("welcome" if right else "no", status_code=200 if right else 401)

    async def crash(_request: Request) -> PlainTextResponse:
        raise RuntimeError("an endpoint that fails")

    app = Starlette(
        routes=[
            Route("/login", login, middleware=[Middleware(RateLimitMiddleware, rules="2/minute", deduct_when=failed)]),
            Route("/crash", crash, middleware=[Middleware(RateLimitMiddleware, rules="1/minute", deduct_when=succeeded_async)]),
        ]
    )
    with TestClient(app, raise_server_exceptions=False) as client:
        assert [client.get("/login?password=right").status_code for _ in range(4)] == [200] * 4
        assert [client.get("/login").status_code for _ in range(3)] == [401, 401, 429]
        assert [client.get("/crash").status_code for _ in range(3)] == [500] * 3, "an endpoint's failure is given back"

    api = FastAPI()
    limiter = RateLimiter(api)

    # Another path: both apps' routes named "GET /login" would share one bucket (one store, one client).
    @api.get("/sign-in", dependencies=[Depends(limiter.limit("2/minute", deduct_when=failed))])
    async def api_login(password: str = "") -> JSONResponse:
        return JSONResponse({"ok": password == "right"}, status_code=200 if password == "right" else 401)

    with TestClient(api) as client:
        assert [client.get("/sign-in?password=right").status_code for _ in range(4)] == [200] * 4
        assert [client.get("/sign-in").status_code for _ in range(3)] == [401, 401, 429]


def test_django_ratelimit_deduct_when_gives_back_what_it_does_not_count() -> None:
    script = textwrap.dedent(
        """
        import asyncio
        import django
        from django.conf import settings
        settings.configure(SECRET_KEY="x", INSTALLED_APPS=["ratelock.django"])
        django.setup()
        from django.http import HttpResponse
        from django.test import RequestFactory
        from ratelock.django import ratelimit

        failed = lambda response: response.status_code >= 400

        @ratelimit("2/minute", deduct_when=failed)
        def login(request):
            return HttpResponse(status=200 if request.GET.get("password") == "right" else 401)

        @ratelimit("1/minute", deduct_when=lambda response: response.status_code < 500)
        def crash(request):
            raise RuntimeError("a view that fails")

        @ratelimit("2/minute", deduct_when=failed)
        async def login_async(request):
            return HttpResponse(status=200 if request.GET.get("password") == "right" else 401)

        def status(view, path):
            try:
                return view(RequestFactory().get(path)).status_code
            except RuntimeError:
                return 500

        print([status(login, "/?password=right") for _ in range(4)], [status(login, "/") for _ in range(3)])
        print([status(crash, "/") for _ in range(3)])

        async def run():
            ok = [(await login_async(RequestFactory().get("/?password=right"))).status_code for _ in range(4)]
            failed_ones = [(await login_async(RequestFactory().get("/"))).status_code for _ in range(3)]
            return ok, failed_ones

        print(*asyncio.run(run()))
        """
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=HERE, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        "[200, 200, 200, 200] [401, 401, 429]",
        "[500, 500, 500]",
        "[200, 200, 200, 200] [401, 401, 429]",
    ]


def test_django_ratelimit_on_as_view_counts_each_class_apart() -> None:
    # ratelimit(...)(SomeView.as_view()): as_view's function is named View.as_view.<locals>.view in every
    # view's module, so two class-based views so wrapped shared one bucket.
    script = textwrap.dedent(
        """
        import django
        from django.conf import settings
        settings.configure(SECRET_KEY="x", INSTALLED_APPS=["ratelock.django"])
        django.setup()
        from django.http import HttpResponse
        from django.test import RequestFactory
        from django.views import View
        from ratelock.django import ratelimit

        class First(View):
            def get(self, request):
                return HttpResponse("first")

        class Second(View):
            def get(self, request):
                return HttpResponse("second")

        first = ratelimit("2/minute")(First.as_view())
        second = ratelimit("2/minute")(Second.as_view())
        factory = RequestFactory()
        print([first(factory.get("/a")).status_code for _ in range(2)], second(factory.get("/b")).status_code)
        """
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=HERE, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["[200, 200] 200"]


def test_django_ratelimit_methods_and_block_false() -> None:
    # django-ratelimit's names: only the given methods count (GET with HEAD), and block=False lets the
    # view run with request.limited set instead of answering 429.
    script = textwrap.dedent(
        """
        import asyncio
        import django
        from django.conf import settings
        settings.configure(SECRET_KEY="x", INSTALLED_APPS=["ratelock.django"])
        django.setup()
        from django.http import HttpResponse
        from django.test import RequestFactory
        from ratelock.django import ratelimit

        @ratelimit("1/minute", methods=["POST"])
        def form(request):
            return HttpResponse("ok")

        @ratelimit("1/minute", methods=["get"])
        def page(request):
            return HttpResponse("ok")

        @ratelimit("1/minute", block=False)
        def soft(request):
            return HttpResponse("limited" if request.limited else "fine")

        @ratelimit("1/minute", block=False)
        async def soft_async(request):
            return HttpResponse("limited" if request.limited else "fine")

        factory = RequestFactory()
        print([form(factory.get("/")).status_code for _ in range(3)], [form(factory.post("/")).status_code for _ in range(2)])
        print(page(factory.get("/")).status_code, page(factory.head("/")).status_code, page(factory.post("/")).status_code)
        print([soft(factory.get("/")).content.decode() for _ in range(2)])

        async def run():
            return [(await soft_async(factory.get("/"))).content.decode() for _ in range(2)]

        print(asyncio.run(run()))
        """
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=HERE, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        "[200, 200, 200] [200, 429]",
        "200 429 200",
        "['fine', 'limited']",
        "['fine', 'limited']",
    ]


def test_django_method_decorator_limits_a_class_view_and_the_middleware_sees_it() -> None:
    # Django's documented way to decorate a class-based view's method. The middleware saw a mark on
    # dispatch (as_view copies it onto the view) but not on one handler, so a view limited on post alone
    # was counted by the default limits (2/hour) too; every view decorated on dispatch shared one bucket
    # (the scope was the inherited View.dispatch's name), also when listed with other decorators; an
    # async view's refusal was a sync response Django could not await. A handler Django never runs
    # (outside http_method_names) keeps the default limits on its method.
    script = textwrap.dedent(
        """
        import asyncio
        import functools
        import django
        from django.conf import settings
        settings.configure(
            SECRET_KEY="x", ALLOWED_HOSTS=["*"], ROOT_URLCONF=__name__, INSTALLED_APPS=["ratelock.django"],
            MIDDLEWARE=["ratelock.django.RateLimitMiddleware"], RATELOCK={"DEFAULT_LIMITS": "2/hour"},
        )
        django.setup()
        from django.http import HttpResponse
        from django.test import AsyncClient, Client
        from django.urls import path
        from django.utils.decorators import method_decorator
        from django.views.decorators.cache import never_cache
        from django.views import View
        from ratelock.django import ratelimit, ratelimit_exempt

        @method_decorator(ratelimit("3/hour"), name="dispatch")
        class Dispatched(View):
            def get(self, request):
                return HttpResponse("ok")

        @method_decorator(ratelimit("3/hour"), name="post")
        class PostLimited(View):
            def get(self, request):
                return HttpResponse("ok")

            def post(self, request):
                return HttpResponse("ok")

        @method_decorator(ratelimit_exempt, name="dispatch")
        class Exempt(View):
            def get(self, request):
                return HttpResponse("ok")

        @method_decorator(ratelimit("3/hour"), name="dispatch")
        class AsyncDispatched(View):
            async def get(self, request):
                return HttpResponse("ok")

        # Listed with another decorator after it, ratelimit is handed that decorator's wrapper.
        @method_decorator([ratelimit("3/hour"), never_cache], name="dispatch")
        class Stacked(View):
            def get(self, request):
                return HttpResponse("ok")

        @method_decorator([ratelimit("3/hour"), never_cache], name="dispatch")
        class OtherStacked(View):
            def get(self, request):
                return HttpResponse("ok")

        def passing(function):
            # A decorator that only wraps (never_cache reads the response, which Django's own sync
            # wrapper cannot do on an async view).
            @functools.wraps(function)
            def wrapper(*args, **kwargs):
                return function(*args, **kwargs)

            return wrapper

        @method_decorator([ratelimit("3/hour"), passing], name="dispatch")
        class AsyncStacked(View):
            async def get(self, request):
                return HttpResponse("ok")

        # Django answers a POST here 405 without running post: the default limits count it.
        @method_decorator(ratelimit("3/hour"), name="post")
        class GetOnly(View):
            http_method_names = ["get"]

            def get(self, request):
                return HttpResponse("ok")

            def post(self, request):
                return HttpResponse("ok")

        urlpatterns = [
            path("dispatched", Dispatched.as_view()),
            path("post-limited", PostLimited.as_view()),
            path("exempt", Exempt.as_view()),
            path("async-dispatched", AsyncDispatched.as_view()),
            path("stacked", Stacked.as_view()),
            path("other-stacked", OtherStacked.as_view()),
            path("async-stacked", AsyncStacked.as_view()),
            path("get-only", GetOnly.as_view()),
        ]

        def seen(responses):
            return [(response.status_code, response.headers.get("RateLimit", "-").split(";")[0]) for response in responses]

        client = Client()
        print(seen(client.get("/dispatched") for _ in range(4)))
        print(seen([client.get("/post-limited")] + [client.post("/post-limited") for _ in range(4)]))
        print(seen(client.get("/exempt") for _ in range(3)))
        print(seen([client.get("/stacked") for _ in range(4)] + [client.get("/other-stacked")]))
        print(seen(client.post("/get-only") for _ in range(3)))

        async def run():
            client = AsyncClient()
            return seen([await client.get(path) for path in ["/async-dispatched"] * 4 + ["/async-stacked"] * 4])

        print(asyncio.run(run()))
        """
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=HERE, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        "[(200, '\"3/hour\"'), (200, '\"3/hour\"'), (200, '\"3/hour\"'), (429, '\"3/hour\"')]",
        "[(200, '\"2/hour\"'), (200, '\"3/hour\"'), (200, '\"3/hour\"'), (200, '\"3/hour\"'), (429, '\"3/hour\"')]",
        "[(200, '-'), (200, '-'), (200, '-')]",
        "[(200, '\"3/hour\"'), (200, '\"3/hour\"'), (200, '\"3/hour\"'), (429, '\"3/hour\"'), (200, '\"3/hour\"')]",
        "[(405, '\"2/hour\"'), (405, '\"2/hour\"'), (429, '\"2/hour\"')]",
        "[(200, '\"3/hour\"'), (200, '\"3/hour\"'), (200, '\"3/hour\"'), (429, '\"3/hour\"')"
        ", (200, '\"3/hour\"'), (200, '\"3/hour\"'), (200, '\"3/hour\"'), (429, '\"3/hour\"')]",
    ]


def test_the_flow_gives_back_only_what_the_rules_spent() -> None:
    # Nothing for a request let through in shadow, allow-listed, or degraded: a refund gives back to
    # every rule, so it would take back units that other requests spent.
    import socket
    import uuid

    from ratelock.http import HttpLimiter

    def counted(http: HttpLimiter, rules: str, peer: str) -> Any:
        return http.check(http.limit(rules, deduct_when=lambda response: False), None, peer=peer).counted

    prefix = f"g{uuid.uuid4().hex[:8]}"  # the memory store is the process's: keys of this run only
    shadowing = HttpLimiter(limiter=ratelock.Limiter(prefix=prefix, shadow=True))
    assert counted(shadowing, "1/hour", "192.0.2.1") is not None, "spent: may be given back"
    assert counted(shadowing, "1/hour", "192.0.2.1") is None, "let through in shadow: spent nothing"
    enforcing = HttpLimiter(prefix=prefix)
    assert counted(enforcing, "1/hour shadow; 10/hour", "192.0.2.2") is not None
    assert counted(enforcing, "1/hour shadow; 10/hour", "192.0.2.2") is None, "the shadow rule that would deny took nothing"
    enforcing.limiter.allow("default:192.0.2.3", 60)
    assert counted(enforcing, "1/hour", "192.0.2.3") is None, "an allow-listed request spent nothing"
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    down = HttpLimiter(url=f"redis://127.0.0.1:{port}", on_error="allow", timeout=0.3)
    assert counted(down, "1/hour", "192.0.2.4") is None, "a degraded answer spent nothing"
