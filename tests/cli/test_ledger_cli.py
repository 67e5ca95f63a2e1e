"""`faultsense ledger show` filters: an unknown --detector is an error, an unmatched --replica a note."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.cli.ledger_cmd import KNOWN_DETECTORS
from faultsense_pipelines.ledger import FaultRow, append_faults, make_fault_id

runner = CliRunner()
DAY = "2026-11-30"


def _ledger(tmp_path: Path) -> Path:
    """A ledger with one Minder row for replica train-a and one for train-b."""
    where = tmp_path / "ledger"
    rows = [
        FaultRow(
            fault_id=make_fault_id("minder", replica, "2026-11-30T08:00", "machine:node-07"),
            detected_at=datetime(2026, 11, 30, 8, 0, tzinfo=UTC),
            sweep_id="scan-1",
            replica=replica,
            detector="minder",
            component_kind="machine",
            component="machine:node-07",
            status="confirmed",
        )
        for replica in ("train-b", "train-a")
    ]
    append_faults(str(where), rows, batch="minder-scan-1", day=DAY)
    return where


def _show(where: Path, *flags: str):
    return runner.invoke(app, ["ledger", "show", "--ledger", str(where), "--since", DAY, *flags], env={"COLUMNS": "200"})


@pytest.mark.parametrize("detector", ["bogus", "Minder", ""])
def test_an_unknown_detector_is_one_error_line_naming_it_and_the_known_ones(tmp_path: Path, detector: str) -> None:
    shown = _show(_ledger(tmp_path), "--detector", detector)
    assert shown.exit_code == 2 and shown.stdout == ""
    assert shown.stderr.strip().splitlines() == [
        f"error: --detector must be one of faultsense, minder, flowpulse, got {detector!r}"
    ]


def test_every_known_detector_is_accepted_and_filters_the_rows(tmp_path: Path) -> None:
    where = _ledger(tmp_path)
    assert KNOWN_DETECTORS == ("faultsense", "minder", "flowpulse")
    counts = {}
    for detector in KNOWN_DETECTORS:
        shown = _show(where, "--detector", detector)
        assert shown.exit_code == 0, shown.output
        counts[detector] = " ".join(shown.stdout.split()).count("machine:node-07")
    assert counts == {"faultsense": 0, "minder": 2, "flowpulse": 0}


def test_a_replica_with_no_rows_shows_an_empty_table_and_one_note_naming_the_replicas_that_have_rows(tmp_path: Path) -> None:
    shown = _show(_ledger(tmp_path), "--replica", "nope")
    assert shown.exit_code == 0, shown.output
    assert "(0 of 0 rows)" in " ".join(shown.stdout.split())
    assert shown.stderr.strip().splitlines() == [
        f"note: --replica 'nope' matches no fault row since {DAY} (replicas with rows: train-a, train-b)"
    ]


def test_a_replica_with_rows_gets_no_note(tmp_path: Path) -> None:
    shown = _show(_ledger(tmp_path), "--replica", "train-a")
    assert shown.exit_code == 0, shown.output
    assert "(1 of 1 rows)" in " ".join(shown.stdout.split()) and shown.stderr == ""


@pytest.mark.integration  # a real sweep in a subprocess
def test_rows_show_the_swept_hour_first_and_the_write_time_second(tmp_path: Path) -> None:
    """Rows of ``sweep --hour 2026-12-04-13:00`` showed only their write time (today), while
    ``--since`` filters on the swept hour's day. The first column is now the swept hour, the
    second the write time read back from the ledger; ``--since`` the day after leaves them out."""
    import os
    import subprocess
    import sys

    from faultsense_pipelines.ledger import LedgerStore
    from tests.pipeline_helpers import write_fleet

    fleet, ledger = write_fleet(tmp_path)
    exe = str(Path(sys.executable).with_name("faultsense"))
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster-home")}
    swept = subprocess.run(
        [exe, "sweep", "--fleet", str(fleet), "--replica", "sim-faulty", "--hour", "2026-12-04-13:00"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert swept.returncode == 0, swept.stderr
    faults = LedgerStore(str(ledger)).read_faults(since="2026-12-04")
    written = {t.strftime("%Y-%m-%d %H:%M") for t in faults["detected_at"]}
    shown = runner.invoke(app, ["ledger", "show", "--ledger", str(ledger), "--since", "2026-12-04"], env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    header = next(line for line in shown.stdout.splitlines() if "replica" in line and "status" in line)
    assert header.split()[:4] == ["hour", "(UTC)", "written", "(UTC)"]
    rows = [line.split() for line in shown.stdout.splitlines() if "faultsense" in line.split()]
    assert len(rows) == len(faults) > 0
    for cells in rows:
        assert cells[:2] == ["2026-12-04", "13:00"], cells
        assert f"{cells[2]} {cells[3]}" in written, (cells, written)
    later = runner.invoke(app, ["ledger", "show", "--ledger", str(ledger), "--since", "2026-12-05"], env={"COLUMNS": "250"})
    assert later.exit_code == 0 and "(0 of 0 rows)" in " ".join(later.stdout.split())


def test_ledger_show_names_the_node_a_component_sits_on(tmp_path: Path) -> None:
    where = tmp_path / "ledger"
    row = FaultRow(
        fault_id=make_fault_id("faultsense", "sim-64", "2026-11-30-08:00", "gpu:17"),
        detected_at=datetime(2026, 11, 30, 8, 5, tzinfo=UTC),
        sweep_id="run-1",
        replica="sim-64",
        detector="faultsense",
        component_kind="gpu",
        component="gpu:17",
        status="confirmed",
        gpu=17,
        node="a18",
    )
    append_faults(str(where), [row], batch="faultsense-sim-64-h08", day=DAY)
    shown = _show(where)
    assert shown.exit_code == 0, shown.output
    header = next(line for line in shown.stdout.splitlines() if "component" in line and "status" in line)
    line = next(line for line in shown.stdout.splitlines() if "gpu:17" in line)
    assert header.split()[header.split().index("component") + 1] == "node"
    assert line.split()[line.split().index("gpu:17") + 1] == "a18"
    minder = _show(_ledger(tmp_path / "other"))  # rows without a node: a dash
    row_line = next(line for line in minder.stdout.splitlines() if "machine:node-07" in line)
    assert row_line.split()[row_line.split().index("machine:node-07") + 1] == "-"
