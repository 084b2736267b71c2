# Type stubs of the native module ratelock._native (checked by stubtest against the built module).
import asyncio
from typing import Awaitable, Callable, Dict, Final, List, Literal, Optional, Sequence, Tuple, Union, final, overload

from typing_extensions import disjoint_base

__version__: Final[str]
# What decided a `Decision`, and what `Limiter.change_entry` can do to a key's entry.
_Reason = Literal["rule", "ban", "deny_list", "allow_list"]
_EntryOp = Literal["block", "unblock", "deny", "allow", "clear"]
# What `metrics=` takes: called with an instrument's name, a value (an int for a counter, seconds for a
# histogram) and the attributes, for every measurement (`ratelock.otel.Metrics` is one).
_MetricsRecorder = Callable[[str, Union[int, float], Dict[str, str]], None]

MAX_KEY_BYTES: Final[int]
"""The longest key, in bytes, any call accepts (64 KiB); a longer one is an ``InvalidArgument``."""
MAX_RULES: Final[int]
"""The most rules one call checks together (100); more is an ``InvalidRule``."""
__all__ = [
    "Client",
    "Completions",
    "Limiter",
    "Decision",
    "HttpOptions",
    "HttpAnswer",
    "ClientAddress",
    "scoped_key",
    "parse_rules",
    "instruments",
    "LockOptions",
    "LockHandle",
    "SemaphoreHandle",
    "FairLockHandle",
    "ReadWriteLockHandle",
    "ReadWriteLockSide",
    "Guard",
    "LockGuard",
    "PermitGuard",
    "LeaseGuard",
    "FairLockState",
    "RwLockState",
    "RatelockError",
    "InvalidRule",
    "InvalidArgument",
    "CostExceedsCapacity",
    "StoreUnavailable",
    "StoreTimeout",
    "WaitTimeout",
    "LockNotOwned",
    "LockLost",
    "ProtocolError",
    "ConfigurationError",
    "__version__",
    "MAX_KEY_BYTES",
    "MAX_RULES",
]

class RatelockError(Exception):
    code: Optional[str]

class InvalidRule(RatelockError): ...
class InvalidArgument(RatelockError): ...
class CostExceedsCapacity(RatelockError): ...
class StoreUnavailable(RatelockError): ...
class StoreTimeout(StoreUnavailable): ...
class WaitTimeout(RatelockError): ...
class LockNotOwned(RatelockError): ...
class LockLost(RatelockError): ...
class ProtocolError(RatelockError): ...
class ConfigurationError(RatelockError): ...

@final
class Client:
    def __new__(
        cls,
        url: Optional[str] = None,
        *,
        timeout: float = 1.0,
        tls_root_ca: Union[str, bytes, None] = None,
        tls_client_cert: Union[str, bytes, None] = None,
        tls_client_key: Union[str, bytes, None] = None,
        sentinel_username: Optional[str] = None,
        sentinel_password: Optional[str] = None,
        max_keys: Optional[int] = None,
        when_full: Optional[Literal["refuse", "evict"]] = None,
    ) -> Client: ...
    @staticmethod
    def connect_async(
        url: Optional[str] = None,
        *,
        timeout: float = 1.0,
        tls_root_ca: Union[str, bytes, None] = None,
        tls_client_cert: Union[str, bytes, None] = None,
        tls_client_key: Union[str, bytes, None] = None,
        sentinel_username: Optional[str] = None,
        sentinel_password: Optional[str] = None,
        max_keys: Optional[int] = None,
        when_full: Optional[Literal["refuse", "evict"]] = None,
    ) -> Awaitable[Client]: ...
    def ping(self) -> None: ...
    @property
    def url(self) -> str: ...
    @property
    def timeout(self) -> float: ...

@final
class Completions:
    def drain(self) -> None: ...

@final
class Decision:
    """The answer to ``hit`` or ``peek``; truthy when allowed. Times are seconds."""

    def __new__(
        cls,
        rules: str,
        *,
        allowed: bool,
        limit: int,
        remaining: int,
        reset_after: float,
        retry_after: float = 0.0,
        rule_index: int = 0,
        degraded: bool = False,
        reason: _Reason = "rule",
    ) -> Decision: ...

    @property
    def allowed(self) -> bool: ...
    @property
    def limit(self) -> int: ...
    @property
    def remaining(self) -> int: ...
    @property
    def reset_after(self) -> float: ...
    @property
    def retry_after(self) -> float: ...
    @property
    def degraded(self) -> bool: ...
    @property
    def rule(self) -> str: ...
    @property
    def rule_index(self) -> int: ...
    @property
    def period(self) -> float: ...
    @property
    def reason(self) -> _Reason: ...
    @property
    def would_deny(self) -> bool: ...
    @property
    def cached(self) -> bool: ...
    def __bool__(self) -> bool: ...

@final
class HttpOptions:
    """How an adapter answers: rate-limit headers, the denial's body and status."""

    def __new__(
        cls,
        *,
        standard_headers: Union[Literal["draft-6", "draft-7", "draft-8", "draft-11", "latest"], bool, None] = None,
        legacy_headers: bool = False,
        partition_key: bool = False,
        denied_body: Literal["text", "json", "problem"] = "text",
        status_code: int = 429,
    ) -> HttpOptions: ...
    def answer(self, decision: Decision, key: Union[str, bytes], now_ms: Optional[int] = None) -> HttpAnswer: ...
    def failure(self, code: str) -> Optional[HttpAnswer]: ...
    def bad_key(self) -> HttpAnswer: ...
    @property
    def standard_headers(self) -> Optional[str]: ...

@final
class HttpAnswer:
    """What an adapter sends: proceed (adding ``headers``), or refuse with status, headers and body."""

    @property
    def proceed(self) -> bool: ...
    @property
    def status(self) -> int: ...
    @property
    def headers(self) -> List[Tuple[str, str]]: ...
    @property
    def content_type(self) -> str: ...
    @property
    def body(self) -> str: ...

@final
class ClientAddress:
    """How the client address of a request becomes its key."""

    def __new__(
        cls,
        *,
        ipv6_subnet: int = 56,
        trusted_proxies: Union[int, Sequence[str], None] = None,
        proxy_header: Literal["x-forwarded-for", "forwarded"] = "x-forwarded-for",
    ) -> ClientAddress: ...
    def key(self, peer: Optional[str], forwarded: Optional[str] = None) -> str: ...
    @property
    def proxy_header(self) -> str: ...

@overload
def scoped_key(scope: str, key: str) -> str: ...
@overload
def scoped_key(scope: str, key: bytes) -> bytes: ...
def parse_rules(text: str) -> List[str]: ...
def instruments() -> List[Tuple[str, Literal["counter", "histogram"], str, str, Tuple[float, ...]]]: ...

@disjoint_base
class Limiter:
    """Checks keys against rules: every rule of a key in one round trip, all or nothing."""

    def __new__(
        cls,
        url: Union[str, Client, None] = None,
        *,
        prefix: str = "rl",
        on_error: Literal["raise", "allow", "deny", "local"] = "raise",
        timeout: float = 1.0,
        default_algorithm: str = "gcra",
        clock: Literal["store", "local"] = "store",
        instances: Optional[int] = None,
        shadow: bool = False,
        deny_cache: Optional[int] = None,
        deny_cache_max_age: Optional[float] = None,
        metrics: Optional[_MetricsRecorder] = None,
    ) -> "Limiter": ...
    def hit(
        self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, now_us: Optional[int] = None
    ) -> Decision: ...
    def peek(
        self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, now_us: Optional[int] = None
    ) -> Decision: ...
    def reset(self, key: Union[str, bytes], rules: str) -> None: ...
    def ping(self) -> None: ...
    def ping_async(self) -> Awaitable[None]: ...
    @property
    def breaker_state(self) -> Optional[Literal["closed", "open", "half-open"]]: ...
    def check_async(
        self,
        key: Union[str, bytes],
        rules: str,
        cost: Optional[int] = None,
        *,
        now_us: Optional[int] = None,
        spend: bool,
    ) -> asyncio.Future[Decision]: ...
    def reset_async(self, key: Union[str, bytes], rules: str) -> Awaitable[None]: ...
    def refund(
        self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, now_us: Optional[int] = None
    ) -> Decision: ...
    def change_override(
        self,
        key: Union[str, bytes],
        rules: Optional[str] = None,
        ttl: Optional[float] = None,
        *,
        now_us: Optional[int] = None,
    ) -> bool: ...
    def change_override_async(
        self,
        key: Union[str, bytes],
        rules: Optional[str] = None,
        ttl: Optional[float] = None,
        *,
        now_us: Optional[int] = None,
    ) -> Awaitable[bool]: ...
    def reserve(
        self,
        key: Union[str, bytes],
        rules: str,
        cost: Optional[int] = None,
        *,
        max_wait: float,
        now_us: Optional[int] = None,
    ) -> Decision: ...
    def reserve_async(
        self,
        key: Union[str, bytes],
        rules: str,
        cost: Optional[int] = None,
        *,
        max_wait: float,
        now_us: Optional[int] = None,
    ) -> Awaitable[Decision]: ...
    def refund_async(
        self,
        key: Union[str, bytes],
        rules: str,
        cost: Optional[int] = None,
        *,
        now_us: Optional[int] = None,
    ) -> Awaitable[Decision]: ...
    def change_entry(
        self, op: _EntryOp, key: Union[str, bytes], seconds: Optional[float] = None, *, now_us: Optional[int] = None
    ) -> bool: ...
    def change_entry_async(
        self,
        op: _EntryOp,
        key: Union[str, bytes],
        seconds: Optional[float] = None,
        *,
        now_us: Optional[int] = None,
    ) -> Awaitable[bool]: ...
    @property
    def prefix(self) -> str: ...

@final
class LockOptions:
    """The options of a lock handle; ``None`` keeps the core's default. Each kind reads the ones it has."""

    def __new__(
        cls,
        *,
        ttl: Optional[float] = None,
        waiter_ttl: Optional[float] = None,
        auto_renew: Optional[bool] = None,
        reentrant: Optional[bool] = None,
        prefer_writers: Optional[bool] = None,
        prefix: Optional[str] = None,
        timeout: Optional[float] = None,
        metrics: Optional[_MetricsRecorder] = None,
    ) -> "LockOptions": ...

@disjoint_base
class Guard:
    """One hold of any lock kind: it raises ``LockLost`` when the hold was lost, ``LockNotOwned`` once it
    was given back."""

    @property
    def what(self) -> str: ...
    def is_lost(self) -> bool: ...
    @property
    def lost_reason(self) -> Optional[Literal["expired", "taken", "failed"]]: ...
    @property
    def lost_error(self) -> Optional[RatelockError]: ...
    def is_released(self) -> bool: ...
    def wait_lost(self, timeout: Optional[float] = None) -> bool: ...
    def wait_lost_async(self, timeout: Optional[float] = None) -> Awaitable[bool]: ...
    def extend(self, ttl: float) -> None: ...
    def extend_async(self, ttl: float) -> Awaitable[None]: ...
    def release(self) -> Literal["released", "still_held"]: ...
    def release_async(self) -> Awaitable[Literal["released", "still_held"]]: ...

@final
class LockGuard(Guard):
    """One grant of a lock."""

    @property
    def fencing_token(self) -> int: ...
    @property
    def holds(self) -> int: ...

@final
class PermitGuard(Guard):
    """One permit of a semaphore."""

@final
class LeaseGuard(Guard):
    """One hold of a fair lock or of a read-write lock (either side)."""

    @property
    def fencing_token(self) -> int: ...

@final
class LockHandle:
    """A handle on one lock name with its own owner token."""

    def __new__(
        cls, name: Union[str, bytes], url: Union[str, Client, None] = None, options: Optional[LockOptions] = None
    ) -> "LockHandle": ...
    def try_acquire(self) -> Optional[LockGuard]: ...
    def try_acquire_async(self) -> Awaitable[Optional[LockGuard]]: ...
    def acquire(self, timeout: Optional[float] = None) -> LockGuard: ...
    def acquire_async(self, timeout: Optional[float] = None) -> Awaitable[LockGuard]: ...
    def is_locked(self) -> bool: ...
    def is_locked_async(self) -> Awaitable[bool]: ...
    def remaining_ttl(self) -> Optional[float]: ...
    def remaining_ttl_async(self) -> Awaitable[Optional[float]]: ...
    def force_release(self) -> bool: ...
    def force_release_async(self) -> Awaitable[bool]: ...
    @property
    def owner_token(self) -> str: ...

@final
class SemaphoreHandle:
    """A handle on one semaphore name."""

    def __new__(
        cls,
        name: Union[str, bytes],
        permits: int,
        url: Union[str, Client, None] = None,
        options: Optional[LockOptions] = None,
    ) -> "SemaphoreHandle": ...
    def try_acquire(self) -> Optional[PermitGuard]: ...
    def try_acquire_async(self) -> Awaitable[Optional[PermitGuard]]: ...
    def acquire(self, timeout: Optional[float] = None) -> PermitGuard: ...
    def acquire_async(self, timeout: Optional[float] = None) -> Awaitable[PermitGuard]: ...
    def in_use(self) -> int: ...
    def in_use_async(self) -> Awaitable[int]: ...

@final
class FairLockState:
    """A fair lock as it stands (times in seconds)."""

    @property
    def held(self) -> bool: ...
    @property
    def remaining(self) -> float: ...
    @property
    def holder_fence(self) -> int: ...
    @property
    def last_fence(self) -> int: ...
    @property
    def waiting(self) -> int: ...

@final
class RwLockState:
    """A read-write lock as it stands (times in seconds)."""

    @property
    def readers(self) -> int: ...
    @property
    def writer(self) -> bool: ...
    @property
    def writer_fence(self) -> int: ...
    @property
    def writer_remaining(self) -> float: ...
    @property
    def waiting_writers(self) -> int: ...
    @property
    def last_fence(self) -> int: ...

@final
class FairLockHandle:
    """A handle on one fair lock name. ``acquire`` queues for its turn; ``try_acquire`` never cuts in."""

    def __new__(
        cls, name: Union[str, bytes], url: Union[str, Client, None] = None, options: Optional[LockOptions] = None
    ) -> "FairLockHandle": ...
    def try_acquire(self) -> Optional[LeaseGuard]: ...
    def try_acquire_async(self) -> Awaitable[Optional[LeaseGuard]]: ...
    def acquire(self, timeout: Optional[float] = None) -> LeaseGuard: ...
    def acquire_async(self, timeout: Optional[float] = None) -> Awaitable[LeaseGuard]: ...
    def state(self) -> FairLockState: ...
    def state_async(self) -> Awaitable[FairLockState]: ...
    def is_locked(self) -> bool: ...
    def is_locked_async(self) -> Awaitable[bool]: ...

@final
class ReadWriteLockSide:
    """One side of a read-write lock: its shared read holds or its one write hold."""

    def try_acquire(self) -> Optional[LeaseGuard]: ...
    def try_acquire_async(self) -> Awaitable[Optional[LeaseGuard]]: ...
    def acquire(self, timeout: Optional[float] = None) -> LeaseGuard: ...
    def acquire_async(self, timeout: Optional[float] = None) -> Awaitable[LeaseGuard]: ...

@final
class ReadWriteLockHandle:
    """A handle on one read-write lock name."""

    def __new__(
        cls, name: Union[str, bytes], url: Union[str, Client, None] = None, options: Optional[LockOptions] = None
    ) -> "ReadWriteLockHandle": ...
    @property
    def reading(self) -> ReadWriteLockSide: ...
    @property
    def writing(self) -> ReadWriteLockSide: ...
    def state(self) -> RwLockState: ...
    def state_async(self) -> Awaitable[RwLockState]: ...
