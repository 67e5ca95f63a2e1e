"""The fleet view: every replica's health per recent hour, from the ledger, as a table and a heatmap."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultsense_pipelines.assets.fleet_view import (
    HEALTH_COLORS,
    INLINE_MARKDOWN_LIMIT,
    SVG_MAX_WIDTH,
    fleet_now,
    health_grid,
    heatmap_key,
    inline_heatmap,
    ui_table,
)
from faultsense_pipelines.definitions import FLEET_VIEW_JOB
from faultsense_pipelines.ledger import LedgerStore, ProbeRunRow
from tests.pipeline_helpers import SMALL_FLEET, add_replicas, new_defs, sweep

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


def _svg_cells(markdown: str, rows: int, columns: int) -> tuple[list[list[str]], list[str], list[str]]:
    """What an inline SVG heatmap shows, read back with an XML parser: the fill colour at the
    centre of each (row, column) cell (background where no path covers it), the row labels and
    the hour labels."""
    import base64
    import re
    import xml.etree.ElementTree as ET

    data = base64.b64decode(markdown.split("base64,", 1)[1].split(")", 1)[0])
    ns = "{http://www.w3.org/2000/svg}"
    root = ET.fromstring(data)
    background = root.find(f"{ns}rect")
    assert background is not None
    left, width, height = (float(background.get(k)) for k in ("x", "width", "height"))
    cw, ch = width / columns, height / rows
    assert float(root.get("width")) >= left + width  # the latest hour is inside the picture
    boxes = []
    for path in root.iter(f"{ns}path"):
        for x, y, w, h in re.findall(r"M([\d.]+) ([\d.]+)h([\d.]+)v([\d.]+)H[\d.]+z", path.get("d")):
            boxes.append((float(x), float(y), float(w), float(h), path.get("fill")))
    cells = []
    for r in range(rows):
        row = []
        for c in range(columns):
            cx, cy = left + cw * (c + 0.5), ch * (r + 0.5)
            hit = [f for x, y, w, h, f in boxes if x <= cx <= x + w and y <= cy <= y + h]
            row.append(hit[0] if hit else background.get("fill"))
        cells.append(row)
    groups = list(root.iter(f"{ns}g"))
    names = [t.text for t in groups[0].iter(f"{ns}text")]
    hours = [t.text for t in groups[1].iter(f"{ns}text")]
    return cells, names, hours


def test_the_inline_heatmap_is_a_labelled_picture_short_enough_for_the_ui() -> None:
    words = [["faulty", "healthy", "not swept", "error"], ["degraded", "inconclusive", "healthy", "healthy"]]
    grid = pd.DataFrame(words, index=pd.Index(["sim-64", "local-8"], name="replica"), columns=H)
    markdown = inline_heatmap(grid, "2026-11-30-08:00")
    assert len(markdown) < INLINE_MARKDOWN_LIMIT == 1000
    cells, names, hours = _svg_cells(markdown, 2, 4)
    assert cells == [[HEALTH_COLORS[w] for w in row] for row in words]
    assert names == ["sim-64", "local-8"]
    assert hours == ["08"]  # every sixth hour back from the latest, which is always labelled


def test_a_four_replica_days_heatmap_with_a_legend_fits_inline() -> None:
    hours = [datetime(2026, 11, 30, tzinfo=UTC) + pd.Timedelta(hours=h) for h in range(24)]
    rows = [["not swept"] * 21 + ["healthy", "not swept", "faulty"] for _ in range(3)] + [["not swept"] * 23 + ["healthy"]]
    names = ["local-8", "sim-64", "sim-128", "sim-256"]
    grid = pd.DataFrame(rows, index=pd.Index(names, name="replica"), columns=hours)
    markdown = inline_heatmap(grid, "2026-11-30-23:00")
    assert len(markdown) < 1000
    cells, shown, labels = _svg_cells(markdown, 4, 24)
    assert shown == names and labels == ["23", "17", "11", "05"]
    assert cells == [[HEALTH_COLORS[w] for w in row] for row in rows]
    key = heatmap_key("2026-11-30-23:00", 24)
    assert len(key) < 1000
    for i, (word, color) in enumerate(HEALTH_COLORS.items()):  # each colour's square, then its word, a line each
        assert re.search(
            rf"<path fill='{color}'[^>]* d='M1 {13 * i + 2}h9v9H1z'/><text x='14' y='{13 * i + 10}'>{word}</text>", _svg_text(key)
        )


@pytest.mark.parametrize("hours", [1, 4, 24, 48, 168])
def test_the_inline_heatmap_is_narrow_enough_for_the_asset_page_at_1000_px_whatever_the_names_and_hours(hours: int) -> None:
    """At 1,000 px the Dagster asset page shows about 148 px of a metadata value
    (tests/assets/test_ui.py measures it): the picture is at most SVG_MAX_WIDTH wide, with long
    names cut, and the latest hour is its right-most column, labelled, inside it."""
    import xml.etree.ElementTree as ET

    start = datetime(2026, 11, 24, tzinfo=UTC)
    columns = [start + pd.Timedelta(hours=h) for h in range(hours)]
    names = ["prod-dsv3-eu-west-a17", "sim-8"]
    grid = pd.DataFrame([["healthy"] * (hours - 1) + ["faulty"]] * 2, index=pd.Index(names, name="replica"), columns=columns)
    markdown = inline_heatmap(grid, "2026-12-01-00:00")
    root = ET.fromstring(_svg_text(markdown))
    width = float(root.get("width"))
    assert width <= SVG_MAX_WIDTH == 142
    cells, shown, labels = _svg_cells(markdown, 2, hours)
    assert shown == ["prod-dsv3\u2026", "sim-8"] and cells[0][-1] == cells[1][-1] == HEALTH_COLORS["faulty"]
    assert labels[0] == f"{columns[-1]:%H}"
    last_label = [t for t in root.iter("{http://www.w3.org/2000/svg}text") if t.text == labels[0]][-1]
    assert float(last_label.get("x")) + 7 <= width  # the latest hour's label is inside the picture


def _svg_text(markdown: str) -> str:
    import base64

    return base64.b64decode(markdown.split("base64,", 1)[1].split(")", 1)[0]).decode()


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


def test_a_large_fleets_inline_heatmap_keeps_the_replicas_with_problems() -> None:
    hours = [datetime(2026, 11, 29, tzinfo=UTC) + pd.Timedelta(hours=h) for h in range(24)]
    names = names_ = [f"r{i:03d}" for i in range(400)]
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
    problems = [i for i in range(0, 400, 3)][:shown]
    if "image/svg+xml" in markdown:  # labelled, fewer rows
        cells, names, _ = _svg_cells(markdown, shown, 24)
        assert names == [names_[i] for i in problems]
    else:
        cells = _cells(markdown, shown, 24)
    assert cells == [[HEALTH_COLORS[w] for w in rows[i]] for i in problems]


def _sweep_rows(sweeps: dict[tuple[str, int], tuple[str, list[str]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ledger rows of sweeps {(replica, hour of 2026-11-30): (outcome, confirmed components)};
    outcome ``ok`` or ``failed``; confirmed components get node ``n<gpu // 4>`` and confidence 0.99."""
    runs, faults = [], []
    for (replica, hour), (outcome, components) in sweeps.items():
        batch = f"faultsense-{replica}-h{hour:02d}" + ("-failed" if outcome == "failed" else "")
        runs.append((replica, "2026-11-30", batch))
        for c in components if outcome == "ok" else []:
            node = f"n{int(c.split(':')[1]) // 4}"
            faults.append((replica, "2026-11-30", batch, "confirmed", "gpu", c, node, 0.99))
    columns = ["replica", "date", "batch", "status", "component_kind", "component", "node", "confidence"]
    return pd.DataFrame(faults, columns=columns), pd.DataFrame(runs, columns=columns[:3])


NOW = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)


def test_now_is_the_latest_swept_hour_with_each_components_node_confidence_and_since() -> None:
    # hand-worked: a swept 03..06 with gpu:5 from 04:00 on and gpu:9 only at 06:00, then 03:00
    # backfilled last (write order does not enter the rows); b healthy at 05:00, failed at 07:00
    faults, runs = _sweep_rows(
        {
            ("a", 4): ("ok", ["gpu:5"]),
            ("a", 5): ("ok", ["gpu:5"]),
            ("a", 6): ("ok", ["gpu:5", "gpu:9"]),
            ("a", 3): ("ok", []),
            ("b", 5): ("ok", []),
            ("b", 7): ("failed", []),
        }
    )
    now = fleet_now(faults, runs, ["b", "a", "c"], NOW)
    assert now.to_dict("records") == [
        {"replica": "a", "status": "faulty", "component": "gpu:5", "node": "n1", "confidence": "0.990",
         "since": "2026-11-30-04:00", "last_sweep": "2026-11-30-06:00", "age": "3h", "failed_after": "-"},
        {"replica": "a", "status": "faulty", "component": "gpu:9", "node": "n2", "confidence": "0.990",
         "since": "2026-11-30-06:00", "last_sweep": "2026-11-30-06:00", "age": "3h", "failed_after": "-"},
        {"replica": "b", "status": "healthy", "component": "-", "node": "-", "confidence": "-",
         "since": "2026-11-30-05:00", "last_sweep": "2026-11-30-05:00", "age": "4h", "failed_after": "2026-11-30-07:00"},
        {"replica": "c", "status": "not swept", "component": "-", "node": "-", "confidence": "-",
         "since": "-", "last_sweep": "-", "age": "-", "failed_after": "-"},
    ]  # fmt: skip


_OUTCOMES = st.tuples(st.sampled_from(["ok", "failed"]), st.lists(st.sampled_from(["gpu:1", "gpu:6"]), unique=True))


@settings(max_examples=60, deadline=None)
@given(
    writes=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 23), _OUTCOMES), min_size=1, max_size=12),
    seed=st.integers(0, 2**16),
)
def test_any_order_of_sweeps_and_backfills_gives_the_same_now(writes, seed) -> None:
    """Writes in the order drawn (a re-sweep of an hour replaces it, as in the ledger) give the
    same "now" as the same final sweeps written in any other order, and that "now" is each
    replica's latest completed hour, found here by brute force."""
    final: dict[tuple[str, int], tuple[str, list[str]]] = {}
    for replica, hour, outcome in writes:
        final[(replica, hour)] = (outcome[0], sorted(outcome[1]))
    shuffled = list(final.items())
    random.Random(seed).shuffle(shuffled)
    faults, runs = _sweep_rows(final)
    faults2, runs2 = _sweep_rows(dict(shuffled))
    now = fleet_now(faults, runs, ["a", "b"], NOW)
    again = fleet_now(faults2.sample(frac=1, random_state=seed), runs2.sample(frac=1, random_state=seed), ["a", "b"], NOW)
    assert now.equals(again)
    for replica in ("a", "b"):
        done = [h for (r, h), (o, _) in final.items() if r == replica and o == "ok"]
        got = now[now["replica"] == replica]
        if done:
            latest = max(done)
            assert set(got["last_sweep"]) == {f"2026-11-30-{latest:02d}:00"}
            assert sorted(got["component"]) == (final[(replica, latest)][1] or ["-"])
            assert set(got["status"]) == {"faulty" if final[(replica, latest)][1] else "healthy"}
        else:
            assert got["status"].tolist() == (["error"] if any(r == replica for r, _ in final) else ["not swept"])


TOPOLOGY_FLEET = SMALL_FLEET.replace(
    "    simulated: {{faults: [{{gpu: 5",
    "    topology: {{gpus_per_node: 4, node_names: [h0, h1, h2, h3]}}\n    simulated: {{faults: [{{gpu: 5",
)


@pytest.mark.integration  # real in-process Dagster runs
def test_a_backfill_of_an_older_hour_never_makes_the_fleet_view_older(tmp_path: Path, instance) -> None:
    """The issue's scenario: sweep 06:00, then backfill 03:00; "now" stays 06:00."""
    defs, ledger = new_defs(tmp_path, TOPOLOGY_FLEET)
    add_replicas(instance, defs)
    for replica, hour in (("sim-faulty", "06:00"), ("sim-healthy", "06:00"), ("sim-faulty", "03:00"), ("sim-healthy", "03:00")):
        assert sweep(defs, instance, replica, f"2026-11-30-{hour}").success
    error = ProbeRunRow(
        sweep_id="r7", replica="sim-healthy", phase=1, probe_index=0, gpus=(0, 1, 2, 3), latency_ms=None, repeat=None,
        executor="simulated", error="executor could not start",
    )  # fmt: skip
    LedgerStore(str(ledger)).write_probe_runs([error], day="2026-11-30", batch="faultsense-sim-healthy-h04-failed")
    result = defs.resolve_job_def(FLEET_VIEW_JOB).execute_in_process(instance=instance)
    now = result.output_for_node("fleet_health")
    assert now["replica"].tolist() == ["sim-faulty", "sim-faulty", "sim-healthy"]  # worst first
    assert set(now["last_sweep"]) == {"2026-11-30-06:00"}
    faulty = now[now["replica"] == "sim-faulty"].set_index("component")
    # gpu 5 sits on node 5 // 4 = 1 (h1); link 1-9 joins node 0 (h0) and node 2 (h2)
    assert faulty["node"].to_dict() == {"gpu:5": "h1", "link:1-9": "h0,h2"}
    # the 03:00 sweep confirmed them too: the episode is the unbroken run of completed sweeps
    # (04:00 and 05:00 were not swept, which breaks nothing)
    assert set(faulty["since"]) == {"2026-11-30-03:00"}
    assert all(c == ">0.999" or 0.5 < float(c) <= 1 for c in faulty["confidence"])
    assert now[now["replica"] == "sim-healthy"]["failed_after"].tolist() == ["-"]  # 04:00 is older than 06:00
    meta = instance.get_latest_materialization_event(dg.AssetKey("fleet_health")).asset_materialization.metadata
    assert meta["end_hour"].value == "2026-11-30-06:00"
    assert meta["heatmap"].value.startswith("![fleet health now](data:image/svg+xml;base64,")
    assert len(meta["heatmap"].value) < 1000
    records = [r.data for r in meta["fleet"].value.records]
    # both replicas were last swept at 06:00: one line says so, the table leaves last and age out
    assert [c.name for c in meta["fleet"].value.schema.columns] == ["replica", "status", "component", "node", "conf", "since"]
    assert records[0] == {
        "replica": "sim-faulty", "status": "faulty", "component": "gpu:5", "node": "h1",
        "conf": now.iloc[0]["confidence"], "since": "03:00",
    }  # fmt: skip  # hours on end_hour's day as HH:00
    assert "; last sweep of every swept replica: 06:00 (" in meta["fleet_rows"].value

    assert meta["faults of sim-faulty"].value.endswith("partition=2026-11-30-06%3A00%7Csim-faulty")
    assert meta["health_now"].value == {"faulty": 1, "healthy": 1}
    # the per-sweep assets say which partition they show
    ledger_meta = instance.get_latest_materialization_event(dg.AssetKey("fault_ledger")).asset_materialization.metadata
    assert (ledger_meta["replica"].value, ledger_meta["hour"].value) == ("sim-healthy", "2026-11-30-03:00")
    assert ledger_meta["partition"].value == "2026-11-30-03:00|sim-healthy"
    assert (
        ledger_meta["partition_page"].value == "/assets/fault_ledger?view=partitions&partition=2026-11-30-03%3A00%7Csim-healthy"
    )
    assert ledger_meta["fleet_now"].value == "/assets/fleet_health"
    assert isinstance(ledger_meta["table_version"].value, str)  # no plot series of the whole table's version


def test_the_inline_table_shows_last_sweep_and_age_when_they_differ_and_short_hours() -> None:
    faults, runs = _sweep_rows(
        {("a", 4): ("ok", ["gpu:5"]), ("a", 6): ("ok", ["gpu:5"]), ("b", 5): ("ok", []), ("b", 7): ("failed", [])}
    )
    now = fleet_now(faults, runs, ["a", "b"], NOW)
    schema, records, line = ui_table(now, "2026-12-01-02:00")  # a later day: hours keep their date
    assert [c.name for c in schema.columns] == [
        "replica",
        "status",
        "component",
        "node",
        "conf",
        "since",
        "last",
        "age",
        "failed",
    ]
    assert [r.data for r in records] == [
        {"replica": "a", "status": "faulty", "component": "gpu:5", "node": "n1", "conf": "0.990",
         "since": "11-30 04:00", "last": "11-30 06:00", "age": "3h", "failed": "-"},
        {"replica": "b", "status": "healthy", "component": "-", "node": "-", "conf": "-",
         "since": "11-30 05:00", "last": "11-30 05:00", "age": "4h", "failed": "11-30 07:00"},
    ]  # fmt: skip
    assert line == ""
