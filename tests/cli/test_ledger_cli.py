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
