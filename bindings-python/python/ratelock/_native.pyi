# Type stubs of the native module ratelock._native (checked by stubtest against the built module).
import asyncio
from typing import Awaitable, Final, Literal, Optional, Union, final

from typing_extensions import disjoint_base

__version__: Final[str]
__all__ = [
    "Client",
    "Completions",
    "Limiter",
    "Decision",
    "LockHandle",
    "LockGuard",
    "SemaphoreHandle",
    "PermitGuard",
    "RatelockError",
    "InvalidRule",
    "InvalidArgument",
    "CostExceedsCapacity",
    "StoreUnavailable",
    "StoreTimeout",
    "WaitTimeout",
    "LockNotOwned",
    "LockLost",
    "__version__",
]

class RatelockError(Exception): ...
class InvalidRule(RatelockError): ...
class InvalidArgument(RatelockError): ...
class CostExceedsCapacity(RatelockError): ...
class StoreUnavailable(RatelockError): ...
class StoreTimeout(StoreUnavailable): ...
class WaitTimeout(RatelockError): ...
class LockNotOwned(RatelockError): ...
class LockLost(RatelockError): ...

@final
class Client:
    def __new__(cls, url: Optional[str] = None, *, timeout: float = 1.0) -> Client: ...
    @staticmethod
    def connect_async(url: Optional[str] = None, *, timeout: float = 1.0) -> Awaitable[Client]: ...
    @property
    def url(self) -> str: ...
    @property
    def timeout(self) -> float: ...

@final
class Completions:
    def __new__(cls, event_loop: asyncio.AbstractEventLoop) -> Completions: ...
    def fileno(self) -> int: ...
    def drain(self) -> None: ...

@final
class Decision:
    """The answer to ``hit`` or ``peek``; truthy when allowed. Times are seconds."""

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
    def __bool__(self) -> bool: ...

@disjoint_base
class Limiter:
    """Checks keys against rules: every rule of a key in one round trip, all or nothing."""

    def __new__(
        cls,
        url: Union[str, Client, None] = None,
        *,
        prefix: str = "rl",
        on_error: Literal["raise", "allow", "deny"] = "raise",
        timeout: float = 1.0,
        default_algorithm: str = "gcra",
        clock: Literal["store", "local"] = "store",
    ) -> "Limiter": ...
    def hit(
        self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, now_us: Optional[int] = None
    ) -> Decision: ...
    def peek(
        self, key: Union[str, bytes], rules: str, cost: Optional[int] = None, *, now_us: Optional[int] = None
    ) -> Decision: ...
    def reset(self, key: Union[str, bytes], rules: str) -> None: ...
    @staticmethod
    def connect_async(
        url: Union[str, Client, None] = None,
        *,
        prefix: str = "rl",
        on_error: Literal["raise", "allow", "deny"] = "raise",
        timeout: float = 1.0,
        default_algorithm: str = "gcra",
        clock: Literal["store", "local"] = "store",
    ) -> Awaitable[Limiter]: ...
    def hit_async(
        self,
        completions: Completions,
        key: Union[str, bytes],
        rules: str,
        cost: Optional[int] = None,
        *,
        now_us: Optional[int] = None,
    ) -> asyncio.Future[Decision]: ...
    def peek_async(
        self,
        completions: Completions,
        key: Union[str, bytes],
        rules: str,
        cost: Optional[int] = None,
        *,
        now_us: Optional[int] = None,
    ) -> asyncio.Future[Decision]: ...
    def reset_async(
        self, completions: Completions, key: Union[str, bytes], rules: str
    ) -> asyncio.Future[None]: ...
    @property
    def prefix(self) -> str: ...

@final
class LockGuard:
    """One grant of a lock."""

    @property
    def fencing_token(self) -> int: ...
    @property
    def holds(self) -> int: ...
    def is_lost(self) -> bool: ...
    def wait_lost(self, timeout: Optional[float] = None) -> bool: ...
    def extend(self, ttl: float) -> str: ...
    def release(self) -> str: ...
    def release_async(self) -> Awaitable[str]: ...

@final
class LockHandle:
    """A handle on one lock name with its own owner token."""

    def __new__(
        cls,
        name: Union[str, bytes],
        url: Union[str, Client, None] = None,
        *,
        ttl: float = 30.0,
        auto_renew: bool = True,
        reentrant: bool = False,
        prefix: str = "rl",
        timeout: float = 1.0,
    ) -> "LockHandle": ...
    @staticmethod
    def connect_async(
        name: Union[str, bytes],
        url: Union[str, Client, None] = None,
        *,
        ttl: float = 30.0,
        auto_renew: bool = True,
        reentrant: bool = False,
        prefix: str = "rl",
        timeout: float = 1.0,
    ) -> Awaitable[LockHandle]: ...
    def try_acquire(self) -> Optional[LockGuard]: ...
    def acquire(self, timeout: Optional[float] = None) -> LockGuard: ...
    def try_acquire_async(self) -> Awaitable[Optional[LockGuard]]: ...
    def acquire_async(self, timeout: Optional[float] = None) -> Awaitable[LockGuard]: ...
    def is_locked(self) -> bool: ...
    def remaining_ttl(self) -> Optional[float]: ...
    def current_fencing_token(self) -> Optional[int]: ...
    def force_release(self) -> bool: ...
    @property
    def owner_token(self) -> str: ...

@final
class PermitGuard:
    """One permit of a semaphore."""

    def is_lost(self) -> bool: ...
    def extend(self, ttl: float) -> bool: ...
    def release(self) -> bool: ...
    def release_async(self) -> Awaitable[bool]: ...

@final
class SemaphoreHandle:
    """A handle on one semaphore name."""

    def __new__(
        cls,
        name: Union[str, bytes],
        permits: int,
        url: Union[str, Client, None] = None,
        *,
        ttl: float = 30.0,
        auto_renew: bool = True,
        prefix: str = "rl",
        timeout: float = 1.0,
    ) -> "SemaphoreHandle": ...
    @staticmethod
    def connect_async(
        name: Union[str, bytes],
        permits: int,
        url: Union[str, Client, None] = None,
        *,
        ttl: float = 30.0,
        auto_renew: bool = True,
        prefix: str = "rl",
        timeout: float = 1.0,
    ) -> Awaitable[SemaphoreHandle]: ...
    def try_acquire(self) -> Optional[PermitGuard]: ...
    def acquire(self, timeout: Optional[float] = None) -> PermitGuard: ...
    def try_acquire_async(self) -> Awaitable[Optional[PermitGuard]]: ...
    def acquire_async(self, timeout: Optional[float] = None) -> Awaitable[PermitGuard]: ...
    def in_use(self) -> int: ...
