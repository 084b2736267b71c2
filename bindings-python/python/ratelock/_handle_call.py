"""``HandleCall``: a call on a lock's native handle (``locked``, ``state``...) written once for both APIs. On a
sync class (``Blocking``) it is a method that calls ``x()``; on an asyncio class (``Asynchronous``) a
coroutine method that awaits ``x_async()``."""

from typing import Any, Awaitable, Callable, Coroutine, Generic, Optional, TypeVar, Union, overload

H = TypeVar("H")
T = TypeVar("T")
C = TypeVar("C", bound=Callable[..., Any])


class Blocking:
    """Base of the sync lock classes: their handle calls block (the GIL released meanwhile)."""

    _handle: Any


class Asynchronous:
    """Base of the asyncio lock classes: their handle calls are coroutines that never block the loop."""

    _handle: Any


class HandleCall(Generic[H, T]):
    """A method of the lock classes that asks the native handle (``self._handle``) one thing: the sync
    form calls ``blocking(handle)``, the asyncio form awaits ``awaiting(handle)``."""

    def __init__(self, blocking: Callable[[H], T], awaiting: Callable[[H], Awaitable[T]], doc: str) -> None:
        self._blocking = blocking
        self._awaiting = awaiting
        self.__doc__ = doc
        self._name = blocking.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, instance: None, owner: Optional[type] = None) -> "HandleCall[H, T]": ...

    @overload
    def __get__(self, instance: Asynchronous, owner: Optional[type] = None) -> Callable[[], Coroutine[Any, Any, T]]: ...

    @overload
    def __get__(self, instance: Blocking, owner: Optional[type] = None) -> Callable[[], T]: ...

    def __get__(
        self, instance: Union[Blocking, Asynchronous, None], owner: Optional[type] = None
    ) -> Union["HandleCall[H, T]", Callable[[], Coroutine[Any, Any, T]], Callable[[], T]]:
        if instance is None:
            return self
        if isinstance(instance, Asynchronous):
            return self._named(self._awaited(instance._handle))
        return self._named(self._called(instance._handle))

    def _called(self, handle: H) -> Callable[[], T]:
        return lambda: self._blocking(handle)

    def _awaited(self, handle: H) -> Callable[[], Coroutine[Any, Any, T]]:
        async def call() -> T:
            return await self._awaiting(handle)

        return call

    def _named(self, call: C) -> C:
        """``call`` named and documented as the method it stands for."""
        call.__name__ = call.__qualname__ = self._name
        call.__doc__ = self.__doc__
        return call
