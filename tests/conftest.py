"""Shared test set-up: the Hypothesis profiles and fixtures used by several test files.

Importing :mod:`tests.hypothesis_profiles` here registers and loads the profiles before any
test module (and its ``@settings`` decorators) is imported. Tiers, by marker: ``slow`` (real
vLLM server, headless Chromium; off by default), ``integration`` (real worker processes, Ray,
Dagster runs, subprocesses, the wheel build; in the default tier, skipped by
``make test-fast``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

import tests.hypothesis_profiles  # noqa: F401 (registers and loads the profiles)

if TYPE_CHECKING:
    import dagster as dg


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    """An ephemeral (in-memory) Dagster instance, closed after the test."""
    import dagster as dg  # here, not at module level: the pure algorithm tests do not load Dagster

    with dg.DagsterInstance.ephemeral() as inst:
        yield inst


@pytest.fixture(autouse=True)
def dagster_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Every test gets its own ``$DAGSTER_HOME`` (``faultsense sweep`` and ``ui`` default to a
    persistent instance there): no test writes ``.faultsense/dagster`` of the checkout, and
    parallel test runs never share one SQLite instance."""
    home = tmp_path_factory.mktemp("dagster-home")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home
