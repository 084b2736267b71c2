"""``@ratelimit`` for Django views: function views and class-based views, sync and async, each limit in
its own scope (the view's dotted name unless given)."""

import functools
import inspect
from typing import Any, Callable, Dict, FrozenSet, Iterable, Optional, Tuple, TypeVar, Union

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponse, HttpResponseBase

from ratelock.django import conf
from ratelock.django.responses import add_headers, check, check_async, refusal_of
from ratelock.http import HttpLimiter, Limit, Maybe

V = TypeVar("V", bound=Any)

#: The attribute that marks a view as limited by its own decorator (or exempt): the middleware then
#: leaves the HTTP methods its own limits count to that decorator. True: every method; else the
#: frozenset of methods.
MARK = "ratelock_limited"
#: The attribute that marks a view exempt: out of the middleware's application limits too.
EXEMPT = "ratelock_exempt"


def ratelimit(
    rules: Union[str, Callable[[HttpRequest], Maybe]],
    *,
    key: Optional[Callable[[HttpRequest], Maybe]] = None,
    cost: Union[int, Callable[[HttpRequest], Maybe]] = 1,
    scope: Optional[str] = None,
    skip: Optional[Callable[[HttpRequest], Maybe]] = None,
    deduct_when: Optional[Callable[[HttpResponseBase], Maybe]] = None,
    methods: Optional[Iterable[str]] = None,
    block: bool = True,
) -> Callable[[V], V]:
    """Limits a view: `rules` (text, or a function of the request answering text) keyed by ``key(request)``
    (default: the client address), taking ``cost``, unless ``skip(request)``. ``deduct_when(response)``
    (Flask-Limiter's name) keeps an allowed request counted only when it answers true for the view's
    response (a 500 when the view raised); otherwise its units are given back once the view returns.
    ``methods`` limits only those HTTP methods (``GET`` includes ``HEAD``, which Django answers with the GET
    view); others pass uncounted. ``block=False`` (django-ratelimit's name) answers no refusal: the view
    runs, and ``request.limited`` says whether the limit refused (it is False otherwise). On a class-based
    view it limits ``dispatch``; Django's ``method_decorator(ratelimit(...), name="post")`` limits one
    handler (``name="dispatch"``: all of them), and the middleware sees it. Bad rule text raises here, when
    the view is defined."""
    only = only_methods(methods)
    conf.limiters()[0].limit(rules, scope=scope or "", key_func=key, cost=cost, skip=skip, deduct_when=deduct_when)  # checks it now
    # The limit of each scope and mode, made once: ``method_decorator`` decorates a bound method again
    # on every request.
    made: Dict[Tuple[str, bool], Tuple[HttpLimiter, Limit]] = {}

    def decorate(view: V) -> V:
        if inspect.isclass(view):
            setattr(view, "dispatch", decorate_function(getattr(view, "dispatch"), view, is_method=True))
            mark(view, only)
            return view
        decorated: V = decorate_function(view, view, is_method=False)
        return decorated

    def limit_of(name: str, asynchronous: bool) -> Tuple[HttpLimiter, Limit]:
        known = made.get((name, asynchronous))
        if known is not None:
            return known
        http = conf.for_mode(asynchronous)
        limit = http.limit(
            rules if isinstance(rules, str) else conf.off_the_loop(rules, asynchronous),
            scope=name,
            key_func=conf.maybe_off_the_loop(key, asynchronous),
            cost=cost if isinstance(cost, int) else conf.off_the_loop(cost, asynchronous),
            skip=conf.maybe_off_the_loop(skip, asynchronous),
            deduct_when=conf.maybe_off_the_loop(deduct_when, asynchronous),
        )
        made[(name, asynchronous)] = (http, limit)
        return http, limit

    def decorate_function(function: Callable[..., Any], owner: Any, is_method: bool) -> Any:
        # ``method_decorator`` hands over the method bound to the view instance (a partial, perhaps under
        # the decorators listed after this one). Its name is the method's, which may be a base class's
        # (``View.dispatch``, shared by every view): the scope is the view's class (each subclass its own,
        # as in django-ratelimit) and the method's name. The class says whether its handlers are async.
        instance = bound_instance(function)
        if scope:
            name = scope
        elif instance is not None:
            view_class = type(instance)
            name = f"{view_class.__module__}.{view_class.__qualname__}.{function.__name__}"
        elif getattr(owner, "view_class", None) is not None:
            # ``SomeView.as_view()``: the function it makes is named ``View.as_view.<locals>.view`` in
            # every view's module, so all the views so wrapped in a module shared one bucket.
            name = f"{owner.view_class.__module__}.{owner.view_class.__qualname__}"
        else:
            name = f"{owner.__module__}.{owner.__qualname__}"
        asynchronous = (
            iscoroutinefunction(function)
            or bool(getattr(owner, "view_is_async", False))
            or bool(getattr(instance, "view_is_async", False))
        )
        http, limit = limit_of(name, asynchronous)

        def request_of(args: Any) -> HttpRequest:
            request: HttpRequest = args[1] if is_method else args[0]
            return request

        def exempt(request: HttpRequest) -> bool:
            return only is not None and (request.method or "GET").upper() not in only

        if asynchronous:

            @functools.wraps(function)
            async def limited_async(*args: Any, **kwargs: Any) -> HttpResponseBase:
                request = request_of(args)
                if exempt(request):
                    response: HttpResponseBase = await function(*args, **kwargs)
                    return response
                checked = await check_async(http, limit, request)
                refused = answered(refusal_of(checked), request, block)
                if refused is not None:
                    return refused
                if checked.counted is None:
                    return add_headers(checked, await function(*args, **kwargs))
                response = HttpResponse(status=500)
                try:
                    response = await function(*args, **kwargs)
                finally:
                    await http.settle_async(limit, checked.counted, response)
                return add_headers(checked, response)

            mark(limited_async, only)
            return limited_async

        @functools.wraps(function)
        def limited(*args: Any, **kwargs: Any) -> HttpResponseBase:
            request = request_of(args)
            if exempt(request):
                response: HttpResponseBase = function(*args, **kwargs)
                return response
            checked = check(http, limit, request)
            refused = answered(refusal_of(checked), request, block)
            if refused is not None:
                return refused
            if checked.counted is None:
                return add_headers(checked, function(*args, **kwargs))
            response = HttpResponse(status=500)
            try:
                response = function(*args, **kwargs)
            finally:
                http.settle(limit, checked.counted, response)
            return add_headers(checked, response)

        mark(limited, only)
        return limited

    return decorate


def mark(view: Any, only: Optional[FrozenSet[str]]) -> None:
    """Marks `view` as limited by its own decorator for the methods `only` (None: all), with those its
    inner decorators marked (``functools.wraps`` copied their mark onto it)."""
    earlier = getattr(view, MARK, None)
    if only is None or earlier is True:
        setattr(view, MARK, True)
    else:
        setattr(view, MARK, only | (earlier if isinstance(earlier, frozenset) else frozenset()))


def limits_itself(view: Any, method: str) -> bool:
    """Whether `view`'s own limits count requests of `method` (or it is exempt)."""
    marked = getattr(view, MARK, None)
    return marked is True or (isinstance(marked, frozenset) and method in marked)


def bound_instance(function: Any) -> Any:
    """The view instance `function` is bound to when ``method_decorator`` made it: its partial over the
    bound method, found under the wrappers of the decorators listed after this one (``__wrapped__``).
    None for a plain function, and for a method bound to a class."""
    seen = 0
    while function is not None and seen < 32:
        instance = getattr(getattr(function, "func", None), "__self__", None)
        if instance is not None:
            return None if inspect.isclass(instance) else instance
        function, seen = getattr(function, "__wrapped__", None), seen + 1
    return None


def marked_parts(view: Any, method: str) -> Tuple[Any, ...]:
    """What may carry a mark for a request of `method` to `view`: the view (``as_view`` copies what a
    decorator set on ``dispatch`` onto it); for a class-based view its class and the handler Django
    dispatches `method` to (``method_decorator(..., name="post")`` copies the decorator's mark onto the
    handler's wrapper): none for a method outside ``http_method_names`` (Django answers 405 without
    running it), ``get`` for a ``HEAD`` where the class has no ``head``, as Django's ``View`` does, and
    the action a REST framework ViewSet maps the method to."""
    owner = getattr(view, "view_class", None) or getattr(view, "cls", None)
    if owner is None:
        return (view,)
    name = method.lower()
    actions = getattr(view, "actions", None)
    if isinstance(actions, dict):
        name = actions.get(name) or ("" if name != "head" else actions.get("get", ""))
    elif name not in getattr(owner, "http_method_names", (name,)):
        name = ""
    handler = getattr(owner, name, None) if name else None
    if handler is None and name == "head":
        handler = getattr(owner, "get", None)
    return (view, owner, handler)


def only_methods(methods: Optional[Iterable[str]]) -> Optional[FrozenSet[str]]:
    """The HTTP methods a limit given ``methods`` covers (None: all), ``HEAD`` with ``GET``."""
    if methods is None:
        return None
    only = frozenset(method.upper() for method in methods)
    return only | {"HEAD"} if "GET" in only else only


def answered(refused: Optional[HttpResponse], request: HttpRequest, block: bool) -> Optional[HttpResponse]:
    """The refusal to answer: `refused` when blocking; otherwise none, with ``request.limited`` set."""
    if block:
        return refused
    setattr(request, "limited", getattr(request, "limited", False) or refused is not None)
    return None


def ratelimit_exempt(view: V) -> V:
    """Keeps the middleware's default and application limits off a view (function or class)."""
    setattr(view, MARK, True)
    setattr(view, EXEMPT, True)
    return view
