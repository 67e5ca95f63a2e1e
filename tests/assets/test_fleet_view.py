"""The fleet view: every replica's health per recent hour, from the ledger, as a table and a heatmap."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from faultsense_pipelines.assets.fleet_view import HEALTH_COLORS, INLINE_MARKDOWN_LIMIT, health_grid, inline_heatmap
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


def _cells(markdown: str, rows: int, columns: int) -> list[list[str]]:
    """The colour (``#rrggbb``) at the centre of each cell of an inline heatmap, read by Pillow."""
    import base64
    import io

    from PIL import Image

    data = base64.b64decode(markdown.split("base64,", 1)[1].split(")", 1)[0])
    with Image.open(io.BytesIO(data)) as image:
        rgb = image.convert("RGB")
        w, h = rgb.width // columns, rgb.height // rows
        assert (rgb.width, rgb.height) == (w * columns, h * rows)
        return [
            ["#{:02x}{:02x}{:02x}".format(*rgb.getpixel((c * w + w // 2, r * h + h // 2))) for c in range(columns)]
            for r in range(rows)
        ]


def test_the_inline_heatmap_is_short_enough_for_the_ui_and_each_cell_has_its_healths_colour() -> None:
    words = [["faulty", "healthy", "not swept", "error"], ["degraded", "inconclusive", "healthy", "healthy"]]
    grid = pd.DataFrame(words, index=pd.Index(["a", "b"], name="replica"), columns=H)
    markdown = inline_heatmap(grid, "2026-11-30-08:00")
    assert len(markdown) < INLINE_MARKDOWN_LIMIT == 1000
    assert _cells(markdown, 2, 4) == [[HEALTH_COLORS[w] for w in row] for row in words]
    assert "rows: 2 replicas, fleet order; columns: 4 hours to 2026-11-30-08:00 UTC" in markdown


def test_a_large_fleets_inline_heatmap_keeps_the_replicas_with_problems() -> None:
    hours = [datetime(2026, 11, 29, tzinfo=UTC) + pd.Timedelta(hours=h) for h in range(24)]
    names = [f"r{i:03d}" for i in range(400)]
    draw = random.Random(3)
    rows = [["healthy"] * 24 for _ in names]
    for i in range(0, 400, 3):  # every third replica has six bad hours, drawn at random (PNG-incompressible)
        for hour in draw.sample(range(24), 6):
            rows[i][hour] = draw.choice(["faulty", "error", "degraded", "not swept"])
    grid = pd.DataFrame(rows, index=pd.Index(names, name="replica"), columns=hours)
    markdown = inline_heatmap(grid, "2026-11-29-23:00")
    assert len(markdown) < 1000
    shown = int(markdown.split("rows: ", 1)[1].split(" ", 1)[0])
    assert f"rows: {shown} of the 134 replicas with an hour not healthy (of 400)" in markdown
    cells = _cells(markdown, shown, 24)
    problems = [i for i in range(0, 400, 3)][:shown]
    assert cells == [[HEALTH_COLORS[w] for w in rows[i]] for i in problems]


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
    # inline on the asset page (short markdown), the labelled figure behind "[Show Markdown]"
    assert meta["heatmap"].value.startswith("![fleet health now](data:image/png;base64,iVBOR")
    assert len(meta["heatmap"].value) < 1000
    assert meta["heatmap_detail"].value.startswith("![fleet health](data:image/png;base64,iVBOR")
    assert "| sim-faulty | 2026-11-30-06:00 | faulty | gpu:5, link:1-9 |" in meta["fleet"].value
    assert meta["health_now"].value == {"faulty": 1, "error": 1}
