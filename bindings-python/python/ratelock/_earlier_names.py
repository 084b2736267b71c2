"""Earlier public names that still work for now: a module ``__getattr__`` that answers each with what it
is called today and a ``DeprecationWarning`` naming the new name."""

import warnings
from typing import Any, Callable, Dict


def earlier_names(module: str, renamed: Dict[str, Any]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``module``, where ``renamed`` maps each earlier name to the class it names."""

    def __getattr__(name: str) -> Any:
        if name not in renamed:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        current = renamed[name]
        warnings.warn(
            f"{module}.{name} is deprecated: use {module}.{current.__name__}", DeprecationWarning, stacklevel=2
        )
        return current

    return __getattr__
