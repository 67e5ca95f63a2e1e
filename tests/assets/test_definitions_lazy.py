"""The Dagster code location is built when Dagster loads it, not when the module is imported.

So ``faultsense sweep --fleet ok.yaml`` (which imports ``build_definitions``) is not stopped by
a broken ``$FAULTSENSE_FLEET`` it never reads, while Dagster's own loaders still build (and
still refuse) the default fleet.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.workspace.autodiscovery import loadable_targets_from_loaded_module

from tests.pipeline_helpers import write_fleet

pytestmark = pytest.mark.integration  # Dagster loads the code location, in subprocesses

REPO = Path(__file__).resolve().parents[2]
BROKEN_YAML = "ledger: L\nreplicas: [ {name: a\n"


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def test_sweep_with_a_good_fleet_flag_ignores_a_broken_faultsense_fleet_variable(tmp_path: Path) -> None:
    broken = tmp_path / "syntax.yaml"
    broken.write_text(BROKEN_YAML)
    fleet, ledger = write_fleet(tmp_path)
    # a fresh interpreter: this test process may already have imported the module
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "faultsense"),
            "sweep",
            "--fleet",
            str(fleet),
            "--replica",
            "sim-healthy",
            "--hour",
            "2026-11-30-08:00",
        ],
        cwd=tmp_path,
        env=_env(FAULTSENSE_FLEET=str(broken)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "syntax.yaml" not in proc.stderr
    assert "sim-healthy" in proc.stdout and (ledger / "delta" / "_delta_log").is_dir()


def test_dagster_discovers_one_lazy_definitions_entry_point_that_builds_the_default_fleet() -> None:
    import faultsense_pipelines.definitions as module

    targets = loadable_targets_from_loaded_module(module)
    assert [t.attribute for t in targets] == ["defs"]
    defs = module.defs()
    assert isinstance(defs, dg.Definitions)
    assert {j.name for j in defs.jobs} >= {module.SWEEP_JOB, module.COVER_JOB, module.ANALYTICS_JOB}


def test_dagster_still_refuses_to_load_the_module_when_the_default_fleet_is_broken(tmp_path: Path) -> None:
    broken = tmp_path / "syntax.yaml"
    broken.write_text(BROKEN_YAML)
    dagster = Path(sys.executable).parent / "dagster"
    proc = subprocess.run(
        [str(dagster), "definitions", "validate", "-m", "faultsense_pipelines.definitions"],
        cwd=REPO,
        env=_env(FAULTSENSE_FLEET=str(broken)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert f"{broken}: line 3: not valid YAML" in proc.stdout + proc.stderr
