"""``faultsense ledger actions``: the ``actions`` rows of a real ledger, through the real command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from faultsense_pipelines.actions import apply_actions
from faultsense_pipelines.cli import app
from faultsense_pipelines.ledger import LedgerStore
from tests.actions.ledger_setup import commit_sweep, fleet_with

pytestmark = pytest.mark.integration
runner = CliRunner()


def test_ledger_actions_lists_the_decisions(tmp_path: Path) -> None:
    """A failing command (exit 1) and a dry run about gpu:3 at 08:00: both rows, with the exit
    code of the failed one; --decision filters; a bad --decision is one line, exit 2."""
    ledger = tmp_path / "ledger"
    store = LedgerStore(str(ledger))
    commit_sweep(store, "r", "2026-12-01-08:00", [3])
    actions = [
        {"name": "drain", "on": "confirmed", "command": ["/bin/false"], "dry_run": False},
        {"name": "preview", "on": "confirmed", "command": ["/bin/true"]},
    ]
    apply_actions(store, fleet_with(ledger, actions), "r", "2026-12-01-08:00", "run-1")
    result = runner.invoke(app, ["ledger", "actions", "--ledger", str(ledger), "--since", "2026-12-01"])
    assert result.exit_code == 0, result.output
    assert re.search(r"2026-12-01 08:00 +r +drain +confirmed +gpu:3 +node3 +failed +1 +/bin/false: exit code 1", result.stdout)
    assert re.search(r"2026-12-01 08:00 +r +preview +confirmed +gpu:3 +node3 +dry_run +- +dry_run:", result.stdout)
    only = runner.invoke(app, ["ledger", "actions", "--ledger", str(ledger), "--since", "2026-12-01", "--decision", "failed"])
    assert "drain" in only.stdout and "preview" not in only.stdout
    bad = runner.invoke(app, ["ledger", "actions", "--ledger", str(ledger), "--decision", "nope"])
    assert bad.exit_code == 2 and bad.stderr.splitlines() == [
        "error: --decision must be one of acted, dry_run, skipped, failed, timed_out, started, got 'nope'"
    ]


def test_ledger_show_and_ledger_actions_print_a_sweep_s_hour_alike(tmp_path: Path) -> None:
    """The hour column of both tables: a confirmed gpu:3 at 13:00 and the action decided about
    it are both ``2026-12-01 13:00`` (the actions dataset stores the partition key
    ``2026-12-01-13:00``; ``ledger show`` reads the hour from the sweep's batch)."""
    ledger = tmp_path / "ledger"
    store = LedgerStore(str(ledger))
    commit_sweep(store, "r", "2026-12-01-13:00", [3])
    apply_actions(
        store,
        fleet_with(ledger, [{"name": "preview", "on": "confirmed", "command": ["/bin/true"]}]),
        "r",
        "2026-12-01-13:00",
        "run-1",
    )
    assert set(store.read_actions()["hour"]) == {"2026-12-01-13:00"}
    common = ["--ledger", str(ledger), "--since", "2026-12-01"]
    shown = runner.invoke(app, ["ledger", "show", *common], env={"COLUMNS": "250"})
    decided = runner.invoke(app, ["ledger", "actions", *common], env={"COLUMNS": "250"})
    assert shown.exit_code == decided.exit_code == 0, (shown.output, decided.output)
    (fault,) = [ln for ln in shown.stdout.splitlines() if "gpu:3" in ln]
    (action,) = [ln for ln in decided.stdout.splitlines() if "gpu:3" in ln]
    assert fault.split()[:2] == action.split()[:2] == ["2026-12-01", "13:00"]


def test_a_reason_names_an_hour_as_the_hour_column_prints_it(tmp_path: Path) -> None:
    """drain (cooldown 24 h) acts on gpu:3 at 08:00; the 10:00 sweep confirms it again and is
    skipped by the cooldown. The skipped row's reason names 08:00 exactly as the table's hour
    column prints the acted row's hour: ``2026-12-01 08:00`` (the stored key is
    ``2026-12-01-08:00``)."""
    ledger = tmp_path / "ledger"
    store = LedgerStore(str(ledger))
    fleet = fleet_with(ledger, [{"name": "drain", "on": "confirmed", "command": ["/bin/true"], "dry_run": False}])
    for hour in ("2026-12-01-08:00", "2026-12-01-10:00"):
        commit_sweep(store, "r", hour, [3])
        apply_actions(store, fleet, "r", hour, f"run-{hour}")
    result = runner.invoke(app, ["ledger", "actions", "--ledger", str(ledger), "--since", "2026-12-01"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert re.search(r"2026-12-01 08:00 +r +drain +confirmed +gpu:3 +node3 +acted", result.stdout)
    assert re.search(
        r"2026-12-01 10:00 +r +drain +confirmed +gpu:3 +node3 +skipped +- +cooldown_hours: attempted at 2026-12-01 08:00, within 24 h",
        result.stdout,
    )
