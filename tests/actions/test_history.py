"""``replica_history``: a replica's completed sweeps and their verdicts, from a real Delta ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from faultsense_pipelines.actions import replica_history
from faultsense_pipelines.ledger import LedgerStore, ProbeRunRow
from tests.actions.ledger_setup import commit_sweep

pytestmark = pytest.mark.integration


def test_history_is_the_replicas_completed_sweeps_up_to_the_hour(tmp_path: Path) -> None:
    """Sweeps of r at 23:00 the day before, 06:00 and 07:00 (gpu:3 confirmed at 07:00), a failed
    attempt at 08:00 (a ``-failed`` batch: not a sweep), a sweep at 09:00 (after the hour asked
    for), and replica r-h1 (whose batch names start like r's) at 07:00: the history of r up to
    08:00 is 23:00, 06:00, 07:00 with gpu:3 in the last; with days=0 the day before is left out."""
    store = LedgerStore(str(tmp_path / "ledger"))
    commit_sweep(store, "r", "2026-11-30-23:00", [])
    commit_sweep(store, "r", "2026-12-01-06:00", [])
    commit_sweep(store, "r", "2026-12-01-07:00", [3])
    failed = [ProbeRunRow("run-f", "r", 1, 0, (0, 1), None, None, "simulated", "unreachable")]
    store.commit("2026-12-01", replace=["faultsense-r-h08-failed"], probe_runs={"faultsense-r-h08-failed": failed})
    commit_sweep(store, "r", "2026-12-01-09:00", [5])
    commit_sweep(store, "r-h1", "2026-12-01-07:00", [4])
    history = replica_history(store, "r", "2026-12-01-08:00", days=1)
    assert [s.hour for s in history] == ["2026-11-30-23:00", "2026-12-01-06:00", "2026-12-01-07:00"]
    assert [sorted(s.faults) for s in history] == [[], [], ["gpu:3"]]
    assert history[-1].faults["gpu:3"].status == "confirmed" and history[-1].sweep_id == "run-r-2026-12-01-07:00"
    assert [s.hour for s in replica_history(store, "r", "2026-12-01-08:00", days=0)] == ["2026-12-01-06:00", "2026-12-01-07:00"]
