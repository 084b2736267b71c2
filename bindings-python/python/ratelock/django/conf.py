"""The ``RATELOCK`` settings dict read once per process into two ``HttpLimiter``s on one store: one for
sync views (the blocking limiter) and one for async views (the asyncio limiter)."""

import functools
import inspect
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar, cast

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.conf import settings
from django.http import HttpRequest
from django.utils.module_loading import import_string

from ratelock.http import HttpLimiter, Limit

F = TypeVar("F", bound=Callable[..., Any])

#: Every key the ``RATELOCK`` dict may hold, with its default.
DEFAULTS: Dict[str, Any] = {
    "URL": None,
    "DEFAULT_LIMITS": None,
    "APPLICATION_LIMITS": None,
    "KEY_FUNC": None,
    "SKIP": None,
    "PREFIX": "rl",
    "ON_ERROR": "raise",
    "TIMEOUT": 1.0,
    "INSTANCES": 1,
    "STANDARD_HEADERS": "draft-11",
    "LEGACY_HEADERS": False,
    "PARTITION_KEY": False,
    "DENIED_BODY": "text",
    "STATUS_CODE": 429,
    "IPV6_SUBNET": 56,
    "TRUSTED_PROXIES": None,
    "PROXY_HEADER": "x-forwarded-for",
}


def configured() -> Dict[str, Any]:
    """The ``RATELOCK`` dict over its defaults; an unknown key is an error naming it (a typo never falls
    back silently)."""
    given = getattr(settings, "RATELOCK", {}) or {}
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"RATELOCK has unknown keys {unknown}; known keys: {sorted(DEFAULTS)}")
    return {**DEFAULTS, **given}


def function(value: Any, name: str) -> Optional[Callable[..., Any]]:
    """A function from the settings: given, or by its dotted path."""
    if value is None:
        return None
    if callable(value):
        given: Callable[..., Any] = value
        return given
    if isinstance(value, str):
        loaded: Callable[..., Any] = import_string(value)
        return loaded
    raise ValueError(f"RATELOCK[{name!r}] must be a function or its dotted path")


def off_the_loop(function: F, asynchronous: bool) -> F:
    """``function`` as a request handled on the event loop may call it: a plain function (the ORM, a
    session: ``request.user``) runs in Django's thread for sync code (``sync_to_async``), as Django runs
    sync views under ASGI; on the loop it raised ``SynchronousOnlyOperation``, a 500 for every
    logged-in request. Its answer is awaited in turn when it is awaitable (a plain function may answer
    a coroutine). An async function or callable object (asgiref's test, as Django's), and any function
    in sync mode, is kept as it is."""
    if not asynchronous or _is_async(function):
        return function
    in_thread = sync_to_async(function)

    async def called_off_the_loop(*args: Any) -> Any:
        answer = await in_thread(*args)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    return cast(F, called_off_the_loop)


def _is_async(function: Callable[..., Any]) -> bool:
    return iscoroutinefunction(function) or iscoroutinefunction(getattr(function, "__call__", None))


def maybe_off_the_loop(function: Optional[F], asynchronous: bool) -> Optional[F]:
    """``off_the_loop`` of a function that may not be given."""
    return None if function is None else off_the_loop(function, asynchronous)


def build(asynchronous: bool) -> HttpLimiter:
    """An ``HttpLimiter`` from the settings (its functions of the request safe on the event loop when
    ``asynchronous``)."""
    config = configured()
    return HttpLimiter(
        url=config["URL"],
        prefix=config["PREFIX"],
        on_error=config["ON_ERROR"],
        timeout=config["TIMEOUT"],
        instances=config["INSTANCES"],
        async_limiter=asynchronous,
        key_func=maybe_off_the_loop(function(config["KEY_FUNC"], "KEY_FUNC"), asynchronous),
        skip=maybe_off_the_loop(function(config["SKIP"], "SKIP"), asynchronous),
        standard_headers=config["STANDARD_HEADERS"],
        legacy_headers=config["LEGACY_HEADERS"],
        partition_key=config["PARTITION_KEY"],
        denied_body=config["DENIED_BODY"],
        status_code=config["STATUS_CODE"],
        ipv6_subnet=config["IPV6_SUBNET"],
        trusted_proxies=config["TRUSTED_PROXIES"],
        proxy_header=config["PROXY_HEADER"],
    )


@functools.lru_cache(maxsize=None)
def limiters() -> Tuple[HttpLimiter, HttpLimiter]:
    """The sync and the async ``HttpLimiter`` of this process (no I/O: both connect on first use)."""
    return build(asynchronous=False), build(asynchronous=True)


def for_mode(asynchronous: bool) -> HttpLimiter:
    sync, async_ = limiters()
    return async_ if asynchronous else sync


#: The scope of ``APPLICATION_LIMITS``: one bucket per key, shared by every view.
APPLICATION_SCOPE = "application"


def default_limit(http: HttpLimiter, asynchronous: bool) -> Optional[Limit]:
    """``DEFAULT_LIMITS``, to be counted per view (the middleware gives each view its own scope)."""
    return _configured_limit(http, "DEFAULT_LIMITS", "default", asynchronous)


def application_limit(http: HttpLimiter, asynchronous: bool) -> Optional[Limit]:
    """``APPLICATION_LIMITS``: one bucket for every view that is not exempt."""
    return _configured_limit(http, "APPLICATION_LIMITS", APPLICATION_SCOPE, asynchronous)


def _configured_limit(http: HttpLimiter, name: str, scope: str, asynchronous: bool) -> Optional[Limit]:
    """The limit of setting `name`: rule text, or a function of the request (its dotted path too), run
    off the event loop when ``asynchronous`` (a plan read through ``request.user``)."""
    rules = configured()[name]
    if rules is None:
        return None
    if not isinstance(rules, str):
        rules = off_the_loop(cast(Callable[..., Any], function(rules, name)), asynchronous)
    return http.limit(rules, scope=scope)


def peer_and_forwarded(http: HttpLimiter, request: HttpRequest) -> Tuple[Optional[str], Optional[str]]:
    """The connection's address and, when a proxy is trusted, its header."""
    forwarded = None
    if http.proxy_header is not None:
        forwarded = request.META.get("HTTP_" + http.proxy_header.upper().replace("-", "_"))
    return request.META.get("REMOTE_ADDR"), forwarded
