"""The fleet view: every replica's health per recent hour, from the ledger, as a table and a heatmap."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from faultsense_pipelines.assets.fleet_view import health_grid
from faultsense_pipelines.definitions import FLEET_VIEW_JOB
from faultsense_pipelines.ledger import LedgerStore, ProbeRunRow
from tests.pipeline_helpers import add_replicas, new_defs, sweep

H = [datetime(2026, 11, 30, h, tzinfo=UTC) for h in (5, 6, 7, 8)]


def _faults(*rows: tuple[str, str, str, str, str]) -> pd.DataFrame:
    columns = ["replica", "date", "batch", "status", "component_kind"]
    return pd.DataFrame(list(rows), columns=columns).assign(component="x")


def test_the_grid_names_each_hour_by_its_worst_verdict_and_failed_attempts_as_errors() -> None:
    runs = pd.DataFrame(
        [
            ("a", "2026-11-30", "faultsense-a-h05"),
            ("a", "2026-11-30", "faultsense-a-h06"),
            ("a", "2026-11-30", "faultsense-a-h07-failed"),
            ("b", "2026-11-30", "faultsense-b-h05"),
            ("b", "2026-11-30", "faultsense-b-h06"),
            ("b", "2026-11-30", "faultsense-b-h06-failed"),  # a failed retry after a completed sweep
            ("b", "2026-11-30", "minder-b-123"),  # another writer's batch: not a sweep
            ("gone", "2026-11-30", "faultsense-gone-h05"),  # not in the fleet any more
        ],
        columns=["replica", "date", "batch"],
    )
    faults = _faults(
        ("a", "2026-11-30", "faultsense-a-h05", "suspect", "gpu"),  # a suspect is no verdict
        ("a", "2026-11-30", "faultsense-a-h05", "confirmed", "link"),
        ("a", "2026-11-30", "faultsense-a-h06", "suspect", "replica"),
        ("b", "2026-11-30", "faultsense-b-h06", "inconclusive", "replica"),
    )
    grid = health_grid(faults, runs, ["a", "b"], H)
    assert grid.loc["a"].tolist() == ["faulty", "degraded", "error", "not swept"]
    assert grid.loc["b"].tolist() == ["healthy", "inconclusive", "not swept", "not swept"]


@pytest.mark.integration  # real in-process Dagster runs
def test_the_fleet_view_shows_each_replicas_latest_sweep_and_a_heatmap(tmp_path: Path, instance) -> None:
    defs, ledger = new_defs(tmp_path)
    add_replicas(instance, defs)
    for replica, hour in (("sim-faulty", "05:00"), ("sim-faulty", "06:00"), ("sim-healthy", "05:00")):
        assert sweep(defs, instance, replica, f"2026-11-30-{hour}").success
    error = ProbeRunRow(
        sweep_id="r7", replica="sim-healthy", phase=1, probe_index=0, gpus=(0, 1, 2, 3), latency_ms=None, repeat=None,
        executor="simulated", error="executor could not start",
    )  # fmt: skip
    LedgerStore(str(ledger)).write_probe_runs([error], day="2026-11-30", batch="faultsense-sim-healthy-h07-failed")
    config = {"ops": {"fleet_health": {"config": {"end_hour": "2026-11-30-08:00", "hours": 4}}}}
    result = defs.resolve_job_def(FLEET_VIEW_JOB).execute_in_process(instance=instance, run_config=config)
    summary = result.output_for_node("fleet_health").set_index("replica")
    assert summary.loc["sim-faulty"].to_dict() == {
        "last_sweep": "2026-11-30-06:00", "health": "faulty", "confirmed": "gpu:5, link:1-9", "faulty_hours": 2, "error_hours": 0,
    }  # fmt: skip
    assert summary.loc["sim-healthy"].to_dict() == {
        "last_sweep": "2026-11-30-07:00", "health": "error", "confirmed": "-", "faulty_hours": 0, "error_hours": 1,
    }  # fmt: skip
    meta = instance.get_latest_materialization_event(dg.AssetKey("fleet_health")).asset_materialization.metadata
    assert meta["heatmap"].value.startswith("![fleet health](data:image/png;base64,iVBOR")
    assert "| sim-faulty | 2026-11-30-06:00 | faulty | gpu:5, link:1-9 |" in meta["fleet"].value
    assert meta["health_now"].value == {"faulty": 1, "error": 1}
