"""``ratelock.http``: the adapter core for Python web frameworks. Flask, Starlette, FastAPI and Django
(and your own framework) share it: one ``HttpLimiter`` holds the limiter, the answer options and the
client-address rules, and decides each request in the same steps, sync or async (skip, key, scope, rules,
cost, one ``hit``, the answer). Headers, bodies, statuses and client keys come from the Rust core, so
every adapter in every language answers byte for byte alike.

Examples:
    >>> from ratelock.http import HttpLimiter, Limit
    >>> http = HttpLimiter()                       # the embedded memory store
    >>> search = Limit("2/minute", scope="search")
    >>> [http.check(search, None, peer="::ffff:203.0.113.7").answer.status for _ in range(3)]
    [200, 200, 429]
"""

import inspect
import logging
from dataclasses import dataclass
from typing import (
    Any,
    Awaitable,
    Callable,
    Generator,
    List,
    Literal,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    TypedDict,
    Union,
    cast,
)

from ratelock._native import (
    ClientAddress,
    Client,
    Decision,
    HttpAnswer,
    HttpOptions,
    InvalidArgument,
    RatelockError,
    parse_rules,
    scoped_key,
)

log = logging.getLogger("ratelock")

#: A request's key (str or bytes), or None when it has none (answered 400).
Key = Union[str, bytes, None]
#: What a per-request callable may answer: a value, or (in an async app) an awaitable of one.
Maybe = Union[Any, Awaitable[Any]]
OnError = Literal["raise", "allow", "deny", "local"]
StandardHeaders = Union[Literal["draft-6", "draft-7", "draft-8", "draft-11", "latest"], bool]


class HttpLimiterOptions(TypedDict, total=False):
    """The keywords a framework adapter hands to ``HttpLimiter`` as they are (their meanings and
    defaults are ``HttpLimiter``'s): the limiter or how to make one, the answer options and the client
    address options."""

    limiter: Any
    url: Union[str, Client, None]
    prefix: str
    on_error: OnError
    timeout: float
    instances: int
    standard_headers: StandardHeaders
    legacy_headers: bool
    partition_key: bool
    denied_body: Literal["text", "json", "problem"]
    status_code: int
    ipv6_subnet: int
    trusted_proxies: Union[int, Sequence[str], None]
    proxy_header: Literal["x-forwarded-for", "forwarded"]


@dataclass(frozen=True)
class Limit:
    """One limit an adapter checks: ``rules`` (text, or a function of the request answering text, e.g. a
    tenant's plan), under ``scope`` (so two limits never share a bucket), keyed by ``key_func(request)``
    (default: the client address), taking ``cost`` units (an int or a function of the request), unless
    ``skip(request)`` is true. With ``deduct_when(response)`` (Flask-Limiter's name), an allowed request
    stays counted only when it answers true once the response is made; otherwise its units are given
    back (``HttpLimiter.settle``)."""

    rules: Union[str, Callable[[Any], Maybe]]
    scope: str = "default"
    key_func: Optional[Callable[[Any], Maybe]] = None
    cost: Union[int, Callable[[Any], Maybe]] = 1
    skip: Optional[Callable[[Any], Maybe]] = None
    deduct_when: Optional[Callable[[Any], Maybe]] = None


class Counted(NamedTuple):
    """What an allowed request spent, to give back once answered: its bucket's key, its rules, its cost."""

    key: Union[str, bytes]
    rules: str
    cost: int


class Checked(NamedTuple):
    """The outcome of one request: ``answer`` (None when skipped) and the ``decision`` behind it (None
    when skipped, keyless or answered by the outage status); ``counted`` is what it spent when its limit
    has a ``deduct_when`` (for ``HttpLimiter.settle``), else None. A tuple: made once per request, cheaply."""

    answer: Optional[HttpAnswer]
    decision: Optional[Decision]
    counted: Optional[Counted] = None


#: One step of a check that needs the world: an awaitable to await (async only), or a hit to make.
_Hit = Tuple[Union[str, bytes], str, int]


class HttpLimiter:
    """The limiter, answer options and client-address rules of one app.

    ``limiter`` is a ``ratelock.Limiter`` (sync apps) or a ``ratelock.asyncio.Limiter`` (async apps); without
    one, a sync ``Limiter`` is made from ``url``, ``prefix``, ``on_error``, ``timeout`` and ``instances``
    (``async_limiter=True`` makes the asyncio one). The answer options are ``HttpOptions``'s; the client
    address options are ``ClientAddress``'s. ``key_func`` and ``skip`` are the defaults of every limit."""

    def __init__(
        self,
        *,
        limiter: Any = None,
        url: Union[str, Client, None] = None,
        prefix: str = "rl",
        on_error: OnError = "raise",
        timeout: float = 1.0,
        instances: int = 1,
        async_limiter: bool = False,
        key_func: Optional[Callable[[Any], Maybe]] = None,
        skip: Optional[Callable[[Any], Maybe]] = None,
        standard_headers: StandardHeaders = "draft-11",
        legacy_headers: bool = False,
        partition_key: bool = False,
        denied_body: Literal["text", "json", "problem"] = "text",
        status_code: int = 429,
        ipv6_subnet: int = 56,
        trusted_proxies: Union[int, Sequence[str], None] = None,
        proxy_header: Literal["x-forwarded-for", "forwarded"] = "x-forwarded-for",
    ) -> None:
        self.options = HttpOptions(
            standard_headers=standard_headers,
            legacy_headers=legacy_headers,
            partition_key=partition_key,
            denied_body=denied_body,
            status_code=status_code,
        )
        self.client_address = ClientAddress(
            ipv6_subnet=ipv6_subnet,
            trusted_proxies=list(trusted_proxies) if isinstance(trusted_proxies, (list, tuple)) else trusted_proxies,
            proxy_header=proxy_header,
        )
        #: The proxy header adapters must read (lower case), or None when no proxy is trusted.
        self.proxy_header: Optional[str] = None if trusted_proxies is None else self.client_address.proxy_header
        for name, value in (("key_func", key_func), ("skip", skip)):
            if value is not None and not callable(value):
                raise InvalidArgument(f"invalid argument `{name}`: expected a function of the request")
        self.key_func = key_func
        self.skip = skip
        if limiter is not None and inspect.iscoroutinefunction(getattr(limiter, "hit", None)) != async_limiter:
            wanted = "a ratelock.asyncio.Limiter (this adapter awaits its calls)" if async_limiter else "a ratelock.Limiter (this adapter's calls do not await)"
            raise InvalidArgument(f"invalid argument `limiter`: expected {wanted}, got {type(limiter).__module__}.{type(limiter).__qualname__}")
        if limiter is None:
            # No I/O here (lazy start): an app boots while Redis is down; requests follow `on_error`.
            if async_limiter:
                from ratelock.asyncio import Limiter as AsyncLimiter

                limiter = AsyncLimiter(url, prefix=prefix, on_error=on_error, timeout=timeout, instances=instances)
            else:
                from ratelock.limiter import Limiter

                limiter = Limiter(url, prefix=prefix, on_error=on_error, timeout=timeout, instances=instances)
        self.limiter = limiter

    def limit(
        self,
        rules: Union[str, Callable[[Any], Maybe]],
        *,
        scope: str = "default",
        key_func: Optional[Callable[[Any], Maybe]] = None,
        cost: Union[int, Callable[[Any], Maybe]] = 1,
        skip: Optional[Callable[[Any], Maybe]] = None,
        deduct_when: Optional[Callable[[Any], Maybe]] = None,
    ) -> Limit:
        """A ``Limit``, checked now where it can be (rule text parses, arguments have the right kinds), so a
        bad limit fails when the app starts rather than on its first request."""
        if isinstance(rules, str):
            parse_rules(rules)  # raises InvalidRule naming the bad part
        elif not callable(rules):
            raise InvalidArgument("invalid argument `rules`: expected rule text or a function of the request")
        for name, value in (("key_func", key_func), ("skip", skip)):
            if value is not None and not callable(value):
                raise InvalidArgument(f"invalid argument `{name}`: expected a function of the request")
        if deduct_when is not None and not callable(deduct_when):
            raise InvalidArgument("invalid argument `deduct_when`: expected a function of the response")
        if not (callable(cost) or (isinstance(cost, int) and not isinstance(cost, bool) and cost >= 1)):
            raise InvalidArgument("invalid argument `cost`: expected an int >= 1 or a function of the request")
        if not isinstance(scope, str):
            raise InvalidArgument("invalid argument `scope`: expected str")
        return Limit(rules, scope, key_func, cost, skip, deduct_when)

    def check(self, limit: Limit, request: Any, *, peer: Optional[str], forwarded: Optional[str] = None) -> Checked:
        """Decides one request of a sync app: ``peer`` is the connection's address, ``forwarded`` the value
        of ``proxy_header`` (read only when a proxy is trusted)."""
        if self._is_fixed(limit):
            # Nothing to ask of the request: the same steps, without a generator to drive.
            key = self.client_address.key(peer, forwarded)
            joined = self._joined(limit.scope, key)
            if not isinstance(joined, (str, bytes)):
                return joined
            try:
                decision = self.limiter.hit(joined, limit.rules, limit.cost)
            except RatelockError as error:
                return self._failed(error)
            counted = _counted(limit, decision, joined, cast(str, limit.rules), cast(int, limit.cost))
            return Checked(self.options.answer(decision, key), decision, counted)
        steps = self._steps(limit, request, peer, forwarded)
        sent: Any = None
        thrown: Optional[BaseException] = None
        while True:
            try:
                step = steps.throw(thrown) if thrown is not None else steps.send(sent)
            except StopIteration as done:
                result: Checked = done.value
                return result
            sent, thrown = None, None
            if inspect.isawaitable(step):
                raise InvalidArgument("invalid argument: a function given to a sync app returned an awaitable")
            try:
                key, rules, cost = step
                sent = self.limiter.hit(key, rules, cost)
            except RatelockError as error:
                thrown = error

    async def check_async(
        self, limit: Limit, request: Any, *, peer: Optional[str], forwarded: Optional[str] = None
    ) -> Checked:
        """``check`` for an async app: awaits the limiter and any awaitable a function of the request answers."""
        steps = self._steps(limit, request, peer, forwarded)
        sent: Any = None
        thrown: Optional[BaseException] = None
        while True:
            try:
                step = steps.throw(thrown) if thrown is not None else steps.send(sent)
            except StopIteration as done:
                result: Checked = done.value
                return result
            sent, thrown = None, None
            try:
                if inspect.isawaitable(step):
                    sent = await step
                else:
                    key, rules, cost = step
                    sent = await self.limiter.hit(key, rules, cost)
            except RatelockError as error:
                thrown = error

    def _is_fixed(self, limit: Limit) -> bool:
        """True when `limit` asks nothing of the request: no skip, no key function, fixed rules and cost."""
        return (
            limit.skip is None
            and self.skip is None
            and limit.key_func is None
            and self.key_func is None
            and isinstance(limit.rules, str)
            and isinstance(limit.cost, int)
        )

    def _steps(
        self, limit: Limit, request: Any, peer: Optional[str], forwarded: Optional[str]
    ) -> Generator[Any, Any, Checked]:
        """The steps of one check, written once: each value asked of a function of the request, and the hit
        itself, is yielded to the driver (sync or async), which sends back its result."""
        skip = limit.skip or self.skip
        if skip is not None and (yield from _value(skip(request))):
            return Checked(None, None)
        key_func = limit.key_func or self.key_func
        key: Key = (yield from _value(key_func(request))) if key_func is not None else self.client_address.key(peer, forwarded)
        if not isinstance(key, (str, bytes)):
            log.warning("ratelock: the key function answered %s, not str or bytes: answering 400", type(key).__name__)
            return Checked(self.options.bad_key(), None)
        joined = self._joined(limit.scope, key)
        if not isinstance(joined, (str, bytes)):
            return joined
        rules = limit.rules if isinstance(limit.rules, str) else (yield from _value(limit.rules(request)))
        cost = limit.cost if isinstance(limit.cost, int) else (yield from _value(limit.cost(request)))
        try:
            decision: Decision = yield (joined, rules, cost)
        except RatelockError as error:
            return self._failed(error)
        return Checked(self.options.answer(decision, key), decision, _counted(limit, decision, joined, rules, cost))

    def settle(self, limit: Limit, counted: Optional[Counted], response: Any) -> None:
        """Gives ``counted`` (a ``Checked``'s) back when ``limit.deduct_when(response)`` is false, once the
        app has made its response. Never raises: the response is made, so a failure (of ``deduct_when``, or
        of the refund) is logged, and the request stays counted."""
        if counted is None or limit.deduct_when is None:
            return
        try:
            if not limit.deduct_when(response):
                self.limiter.refund(counted.key, counted.rules, counted.cost)
        except Exception as error:  # noqa: BLE001 - the response is made: log, never raise
            log.warning("ratelock: an answered request was to be given back but stays counted (%r)", error)

    async def settle_async(self, limit: Limit, counted: Optional[Counted], response: Any) -> None:
        """``settle`` for an async app: ``deduct_when`` may answer an awaitable, and the refund is awaited."""
        if counted is None or limit.deduct_when is None:
            return
        try:
            deducted = limit.deduct_when(response)
            if inspect.isawaitable(deducted):
                deducted = await deducted
            if not deducted:
                await self.limiter.refund(counted.key, counted.rules, counted.cost)
        except Exception as error:  # noqa: BLE001 - the response is made: log, never raise
            log.warning("ratelock: an answered request was to be given back but stays counted (%r)", error)

    def _joined(self, scope: str, key: Union[str, bytes]) -> Union[str, bytes, Checked]:
        """The bucket's key, `scope` joined to `key`; or the 400 answer when the key is not usable."""
        try:
            joined: Union[str, bytes] = scoped_key(scope, key)
            return joined
        except InvalidArgument as error:
            log.warning("ratelock: the request's key is not usable (%s): answering 400", error)
            return Checked(self.options.bad_key(), None)

    def _failed(self, error: RatelockError) -> Checked:
        """The answer to a store failure (an outage's status), or `error` raised again when it has none."""
        answer = self.options.failure(getattr(error, "code", None) or "")
        if answer is None:
            raise error
        log.warning("ratelock: the store failed (%s): answering %d", error, answer.status)
        return Checked(answer, None)


def _counted(limit: Limit, decision: Decision, key: Union[str, bytes], rules: str, cost: int) -> Optional[Counted]:
    """What an allowed request spent, when its limit may give it back once answered: only a hit the rules
    decided, all of them enforced. One let through ``degraded`` spent nothing, an allow-listed one neither,
    and one let through in shadow nothing on the rule that would deny (a refund gives back to every rule)."""
    if limit.deduct_when is None or not decision.allowed or decision.degraded:
        return None
    if decision.would_deny or decision.reason != "rule":
        return None
    return Counted(key, rules, cost)


def _value(given: Maybe) -> Generator[Any, Any, Any]:
    """A function's answer: as given, or (in an async app) awaited by the driver."""
    if inspect.isawaitable(given):
        return (yield given)
    return given


def response_headers(checked: Checked) -> List[Tuple[str, str]]:
    """The headers to add to the app's own response after a check (none when skipped)."""
    return [] if checked.answer is None else list(checked.answer.headers)


__all__ = [
    "Checked",
    "Counted",
    "ClientAddress",
    "HttpAnswer",
    "HttpLimiter",
    "HttpOptions",
    "Limit",
    "response_headers",
    "scoped_key",
]
