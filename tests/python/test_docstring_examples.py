"""Every example in the package's docstrings runs (doctest), as the documentation site shows them."""

import doctest
import importlib
import pkgutil

import pytest

import ratelock

#: Modules that import a web framework on import; their examples are the framework pages' files.
FRAMEWORK_MODULES = {"ratelock.flask", "ratelock.starlette", "ratelock.fastapi"}
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(ratelock.__path__, "ratelock.")
    if not info.name.startswith("ratelock.django") and info.name not in FRAMEWORK_MODULES
)


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module: str) -> None:
    results = doctest.testmod(importlib.import_module(module))
    assert results.failed == 0


def test_the_package_has_docstring_examples() -> None:
    attempted = sum(doctest.testmod(importlib.import_module(module)).attempted for module in MODULES)
    assert attempted >= 40, attempted
