"""Sweeps of different replicas commit into one ledger at the same time: every row lands once.

Two real processes write into one Delta table at once, each its own replica's partitions
(the single :meth:`LedgerStore.commit` of a sweep: probe rows and fault rows, replacing the
replica-hour's batches), released together by a go-file. The commits touch the same
``date`` partition, so Delta reports conflicts and :meth:`LedgerStore.commit` redoes the
replacement; afterwards each replica-hour holds exactly its one sweep, with exactly its row
counts, read through our store and through ``deltalake`` alone. The slow tier runs two real
``faultsense sweep`` processes on one ledger and one Dagster home.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from faultsense_pipelines.ledger import FAULT_LEDGER, PROBE_RUNS, FaultRow, LedgerStore, ProbeRunRow, make_fault_id

DAY, HOURS, PROBES, FAULTS = "2026-11-30", 8, 300, 3
ROOT = Path(__file__).resolve().parents[2]


def sweep_commit(store: LedgerStore, replica: str, hour: int) -> None:
    """One sweep of ``replica`` at ``hour``: PROBES probe rows and FAULTS fault rows, one commit."""
    sweep_id, window = f"{replica}-h{hour:02d}", f"{DAY}-{hour:02d}:00"
    when = datetime(2026, 11, 30, hour, 5, tzinfo=UTC)
    runs = [ProbeRunRow(sweep_id, replica, 1, i, (i % 16, (i + 1) % 16), 10.0 + i % 5, 0, "simulated") for i in range(PROBES)]
    faults = [
        FaultRow(make_fault_id("faultsense", replica, window, f"gpu:{g}"), when, sweep_id, replica, "faultsense", "gpu",
                 f"gpu:{g}", "confirmed", 2.0, g, None, 2, 9)
        for g in range(FAULTS)
    ]  # fmt: skip
    batch = f"faultsense-{replica}-h{hour:02d}"
    store.commit(DAY, replace=[batch, f"{batch}-failed"], probe_runs={batch: runs}, faults={batch: faults})


_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[4])
    from faultsense_pipelines.ledger import LedgerStore
    from tests.ledger.test_concurrent_replicas import HOURS, sweep_commit
    go = Path(sys.argv[3])
    while not go.exists():
        time.sleep(0.005)
    store = LedgerStore(sys.argv[1])
    for hour in range(HOURS):
        sweep_commit(store, sys.argv[2], hour)
    """
)


def _rows_by_sweep(ledger: Path) -> dict[str, dict[str, int]]:
    """Rows per sweep id in each dataset, read with ``deltalake`` alone (no code of ours)."""
    from deltalake import DeltaTable

    table = DeltaTable(str(ledger / "delta")).to_pyarrow_table(columns=["dataset", "sweep_id"])
    out: dict[str, dict[str, int]] = {FAULT_LEDGER: {}, PROBE_RUNS: {}}
    for dataset, sweep in zip(table["dataset"].to_pylist(), table["sweep_id"].to_pylist(), strict=True):
        out[dataset][sweep] = out[dataset].get(sweep, 0) + 1
    return out


@pytest.mark.integration  # two child processes
def test_two_processes_sweeping_different_replicas_land_every_row_exactly_once(tmp_path: Path) -> None:
    ledger, go = tmp_path / "ledger", tmp_path / "go"
    LedgerStore(str(ledger)).commit(DAY, replace=["faultsense-warmup-h00"])  # the table exists before the race
    children = [
        subprocess.Popen([sys.executable, "-c", _CHILD, str(ledger), replica, str(go), str(ROOT)], stderr=subprocess.PIPE)
        for replica in ("sim-a", "sim-b")
    ]
    time.sleep(0.5)  # both are importing; the go-file releases them together
    go.touch()
    for child in children:
        _, err = child.communicate(timeout=240)
        assert child.returncode == 0, err.decode()[-3000:]
    expected = {f"{r}-h{h:02d}" for r in ("sim-a", "sim-b") for h in range(HOURS)}
    rows = _rows_by_sweep(ledger)
    assert rows[PROBE_RUNS] == dict.fromkeys(expected, PROBES)
    assert rows[FAULT_LEDGER] == dict.fromkeys(expected, FAULTS)
    store = LedgerStore(str(ledger))  # our reader agrees
    assert len(store.read_probe_runs()) == 2 * HOURS * PROBES and len(store.read_faults()) == 2 * HOURS * FAULTS
    assert store.version() == 1 + 2 * HOURS  # one commit per sweep after the warm-up, none lost


@pytest.mark.slow
@pytest.mark.integration
def test_two_cli_sweeps_of_different_replicas_into_one_ledger_both_land_once(tmp_path: Path) -> None:
    """Two ``faultsense sweep`` processes at once, one per replica, one ledger, one Dagster home."""
    from tests.pipeline_helpers import HOUR, write_fleet  # imports Dagster: not in the children above

    fleet, ledger = write_fleet(tmp_path)
    home = tmp_path / "dagster"
    home.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    exe = Path(sys.executable).with_name("faultsense")
    procs = [
        subprocess.Popen(
            [str(exe), "sweep", "--fleet", str(fleet), "--replica", name, "--hour", HOUR],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for name in ("sim-faulty", "sim-healthy")
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=500)
        assert proc.returncode == 0, out.decode()[-3000:]
    store = LedgerStore(str(ledger))
    runs, faults = store.read_probe_runs(), store.read_faults()
    assert sorted(runs["replica"].unique()) == ["sim-faulty", "sim-healthy"]
    for _replica, group in runs.groupby("replica"):
        assert group["sweep_id"].nunique() == 1  # one sweep each, not two, not mixed
        assert not group.duplicated(["phase", "probe_index", "repeat"]).any()  # each measurement once
    confirmed = sorted(faults.loc[faults["status"] == "confirmed", "component"])
    assert confirmed == ["gpu:5", "link:1-9"]  # sim-faulty's injected faults, once each
