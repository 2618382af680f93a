"""Every module's ``__all__`` is sorted and names only what the module really has (httpx's habit)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import logkit

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(logkit.__path__, "logkit.") if not m.name.rsplit(".", 1)[-1].startswith("_")
)


def test_the_package_is_walked() -> None:
    assert {"logkit.events", "logkit.store", "logkit.capture.runner", "logkit.builder.load"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_honest(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        pytest.fail(f"{name} has no __all__: declare what it exports")
    assert list(exported) == sorted(exported), f"{name}.__all__ is not sorted"
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not have: {missing}"
