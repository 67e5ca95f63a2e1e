"""Every docstring example in the core library (and the offline cover tools) runs and gives the value it shows."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import faultsense_pipelines
import faultsense_pipelines.probe
import tools.cover_search

_SKIP_PREFIXES = ("faultsense_pipelines.definitions", "faultsense_pipelines.cli")
# the offline cover searches (tools/cover_search/, not installed) partly need the optional
# `[search]` extra (numba), which `[test]` does not install; the installed package never does
_OPTIONAL = {"numba"}


def _modules() -> list[str]:
    names = []
    for pkg in (faultsense_pipelines, faultsense_pipelines.probe, tools.cover_search):
        for info in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + "."):
            if not info.name.startswith(_SKIP_PREFIXES):
                names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("module_name", _modules())
def test_docstring_examples_hold(module_name: str) -> None:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name not in _OPTIONAL or not module_name.startswith("tools."):
            raise
        pytest.skip(f"{module_name} needs the optional {exc.name} (pip install -e '.[search]')")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {module_name}"
