"""Sweeps of different replicas commit into one ledger at the same time: every row lands once.

Two real processes write into one Delta table at once, each its own replica's partitions
(the single :meth:`LedgerStore.commit` of a sweep: probe rows and fault rows, replacing the
replica-hour's batches), released together by a go-file. The commits touch the same
``date`` partition, so Delta reports conflicts and :meth:`LedgerStore.commit` redoes the
replacement; afterwards each replica-hour holds exactly its one sweep, with exactly its row
counts, read through our store and through ``deltalake`` alone. A race need not conflict,
so one test forces the conflict: a writer that has read the table waits while the other one
commits, then writes; the store's retry counter, its log line and the log's own
``num_retries`` show the retry, and the rows still land once. The slow tier runs two real
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


#: A writer process that loads the table, then -- between that read and its write -- lets the
#: other writer commit (it touches ``<dir>/read``, waits for ``<dir>/done``): the write then
#: meets a commit it did not read, deterministically. Prints ``retries=<n>`` (our redos), the
#: version it read and the version its commit made.
_HELD_CHILD = textwrap.dedent(
    """
    import logging, sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[4])
    import deltalake
    from faultsense_pipelines.ledger import LedgerStore
    from tests.ledger.test_concurrent_replicas import sweep_commit
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    sync, real, held = Path(sys.argv[3]), deltalake.write_deltalake, []
    def write_after_the_other(*args, **kwargs):
        if not held:  # the first write only: the table is loaded, nothing written yet
            held.append(args[0].version())  # the version this write was planned on
            (sync / "read").touch()
            while not (sync / "done").exists():
                time.sleep(0.005)
        return real(*args, **kwargs)
    deltalake.write_deltalake = write_after_the_other
    store = LedgerStore(sys.argv[1])
    sweep_commit(store, sys.argv[2], 8)
    print(f"retries={store.commit_retries} read={held[0]} wrote={store.version()}")
    """
)
_OTHER_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[4])
    from faultsense_pipelines.ledger import LedgerStore
    from tests.ledger.test_concurrent_replicas import sweep_commit
    sync = Path(sys.argv[3])
    while not (sync / "read").exists():
        time.sleep(0.005)
    sweep_commit(LedgerStore(sys.argv[1]), sys.argv[2], 8)
    (sync / "done").touch()
    """
)


def _commit_infos(ledger: Path) -> list[dict]:
    """The ``commitInfo`` of every log entry, oldest first, read from the JSON files themselves."""
    import json

    out = []
    for entry in sorted((ledger / "delta" / "_delta_log").glob("*.json")):
        for line in entry.read_text().splitlines():
            if '"commitInfo"' in line:
                out.append(json.loads(line)["commitInfo"])
    return out


@pytest.mark.integration  # two child processes
@pytest.mark.parametrize(
    ("held", "other", "ours"),
    [
        ("sim-a", "sim-a", 1),  # one replica-hour: Delta refuses the commit, the store redoes the replacement
        ("sim-a", "sim-b", 0),  # two replicas of one day: the files do not overlap, deltalake commits it on top
    ],
    ids=["same-replica-hour", "other-replica-same-day"],
)
def test_a_commit_conflict_forced_between_read_and_write_is_retried_and_lands_once(
    tmp_path: Path, held: str, other: str, ours: int
) -> None:
    ledger, sync = tmp_path / "ledger", tmp_path / "sync"
    sync.mkdir()
    for replica in {held, other}:  # both partitions hold an earlier sweep: the commits replace files
        sweep_commit(LedgerStore(str(ledger)), replica, 8)
    before = len(_commit_infos(ledger))
    args = [str(ledger), "", str(sync), str(ROOT)]
    first = subprocess.Popen(
        [sys.executable, "-c", _HELD_CHILD, *args[:1], held, *args[2:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    second = subprocess.Popen([sys.executable, "-c", _OTHER_CHILD, *args[:1], other, *args[2:]], stderr=subprocess.PIPE)
    try:
        out, err = first.communicate(timeout=240)
        _, err2 = second.communicate(timeout=240)
    finally:  # one that died early leaves the other waiting on its sync file
        for child in (first, second):
            if child.poll() is None:
                child.kill()
                child.wait()
    assert first.returncode == 0 and second.returncode == 0, (err + err2).decode()[-3000:]
    read, wrote = (int(w.split("=")[1]) for w in out.decode().split()[1:3])
    assert f"retries={ours}" in out.decode()  # the counter the store exposes
    assert wrote == read + 2  # planned on version v, the other writer made v + 1: it landed on top
    log_lines = [line for line in err.decode().splitlines() if "conflicted" in line]
    assert len(log_lines) == ours, err.decode()[-2000:]
    assert all("retry 1 of 19" in line for line in log_lines)
    infos = _commit_infos(ledger)[before:]
    assert len(infos) == 2, infos  # the log itself: one commit each, none lost, none doubled
    expected = {f"{r}-h08" for r in {held, other}}
    rows = _rows_by_sweep(ledger)  # exactly once: each replica-hour holds its one sweep's rows
    assert rows[PROBE_RUNS] == dict.fromkeys(expected, PROBES)
    assert rows[FAULT_LEDGER] == dict.fromkeys(expected, FAULTS)


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
