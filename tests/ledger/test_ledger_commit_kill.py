"""A sweep's commit is all or nothing, whatever kills the process, and concurrent commits never mix.

Real child processes write a sweep's partition (probe rows of both phases and fault rows,
the same single :meth:`LedgerStore.commit` that ``assets.commit.commit_sweep`` makes) and
are killed with real ``SIGKILL`` / ``SIGTERM`` at spread-out moments of the commit (a fixed
seed: the moments are deterministic). Afterwards the partition holds exactly one sweep,
the old or the new, in both datasets, with exactly its row counts, read through our store
and through ``deltalake`` + DuckDB alone. Default tier: 10 moments; slow tier: 50.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from faultsense_pipelines.ledger import FAULT_LEDGER, PROBE_RUNS, FaultRow, LedgerStore, ProbeRunRow, make_fault_id

pytestmark = pytest.mark.integration  # child processes killed mid-commit

DAY, BATCH, FAILED = "2026-11-30", "faultsense-sim-64-h08", "faultsense-sim-64-h08-failed"
N_PROBES, N_FAULTS = 5_000, 40  # probe rows large enough that the commit takes a while


def sweep_rows(sweep_id: str, probes: int = N_PROBES, faults: int = N_FAULTS) -> tuple[list[ProbeRunRow], list[FaultRow]]:
    """A sweep's probe rows (phase 1 then 2) and fault rows, all tagged with ``sweep_id``."""
    when = datetime(2026, 11, 30, 8, 5, tzinfo=UTC)
    runs = [
        ProbeRunRow(sweep_id, "sim-64", 1 + (i % 2), i, (i % 64, (i + 1) % 64), 1.0 + i % 7, 0, "simulated")
        for i in range(probes)
    ]
    rows = [
        FaultRow(make_fault_id("faultsense", "sim-64", "2026-11-30-08:00", f"gpu:{g}"), when, sweep_id, "sim-64",
                 "faultsense", "gpu", f"gpu:{g}", "confirmed", 1.5, g, None, 2, 9)
        for g in range(faults)
    ]  # fmt: skip
    return runs, rows


def commit(store: LedgerStore, sweep_id: str, probes: int = N_PROBES) -> None:
    runs, faults = sweep_rows(sweep_id, probes)
    store.commit(
        DAY, replace=[BATCH, FAILED], probe_runs={BATCH: runs}, faults={BATCH: faults}, note={"faultsense.sweep_id": sweep_id}
    )


_CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from tests.ledger.test_ledger_commit_kill import commit
    from faultsense_pipelines.ledger import LedgerStore
    store = LedgerStore(sys.argv[1])
    print("ready", flush=True)
    t0 = time.monotonic()
    commit(store, "new")
    print("done", time.monotonic() - t0, flush=True)
    """
)


def partition_sweeps(path: Path) -> tuple[dict[str, set[str]], dict[str, int]]:
    """(sweep ids, row count) per dataset of the partition, read through our store."""
    store = LedgerStore(str(path))
    ids, counts = {}, {}
    for dataset in (FAULT_LEDGER, PROBE_RUNS):
        table = store.read_table(dataset).to_pandas()
        table = table[table["batch"] == BATCH]
        ids[dataset], counts[dataset] = set(table["sweep_id"]), len(table)
    return ids, counts


def assert_one_whole_sweep(path: Path) -> str:
    ids, counts = partition_sweeps(path)
    assert ids[FAULT_LEDGER] == ids[PROBE_RUNS] and len(ids[PROBE_RUNS]) == 1, ids  # never both, never a mix
    assert counts == {FAULT_LEDGER: N_FAULTS, PROBE_RUNS: N_PROBES}, counts  # never duplicated, never partial
    from deltalake import DeltaTable

    ledger = DeltaTable(str(path / "delta")).to_pyarrow_dataset()  # noqa: F841 - read by DuckDB
    got = duckdb.sql(
        f"SELECT dataset, count(*), count(DISTINCT sweep_id) FROM ledger WHERE batch = '{BATCH}' GROUP BY ALL ORDER BY 1"
    ).fetchall()
    assert got == [(FAULT_LEDGER, N_FAULTS, 1), (PROBE_RUNS, N_PROBES, 1)], got
    return next(iter(ids[PROBE_RUNS]))


def _run_child(path: Path) -> subprocess.Popen[str]:
    root = str(Path(__file__).resolve().parents[2])
    return subprocess.Popen([sys.executable, "-c", _CHILD, str(path), root], stdout=subprocess.PIPE, text=True)


def _kill_at_moments(tmp_path: Path, moments: int) -> dict[str, int]:
    path = tmp_path / "ledger"
    commit(LedgerStore(str(path)), "old")
    durations = []
    for _ in range(3):  # undisturbed children: how long a commit takes here (the median of three)
        probe = _run_child(path)
        assert probe.stdout.readline().strip() == "ready"
        line = probe.stdout.readline().split()
        probe.wait(timeout=120)
        assert line[0] == "done"
        durations.append(float(line[1]))
    duration = sorted(durations)[1]
    rng = random.Random(17)
    seen = {"old": 0, "new": 0}
    for i in range(moments):
        commit(LedgerStore(str(path)), "old")  # the partition holds the old sweep again
        sig = signal.SIGKILL if i % 2 == 0 else signal.SIGTERM
        child = _run_child(path)
        assert child.stdout.readline().strip() == "ready"
        # spread over 1.6 commits: about 60% of moments fall inside the commit and the rest after
        # it, so both outcomes occur however much one commit's time varies on a loaded machine
        time.sleep(rng.uniform(0.0, 1.6 * duration))
        child.send_signal(sig)
        child.wait(timeout=120)
        seen[assert_one_whole_sweep(path)] += 1
    # the moments span the commit: both outcomes occur (and the leftovers are vacuumed)
    LedgerStore(str(path)).maintain(vacuum_hours=0)
    assert_one_whole_sweep(path)
    return seen


def test_a_commit_killed_at_10_moments_leaves_one_whole_sweep(tmp_path: Path) -> None:
    seen = _kill_at_moments(tmp_path, 10)
    assert sum(seen.values()) == 10


@pytest.mark.slow
def test_a_commit_killed_at_50_moments_leaves_one_whole_sweep(tmp_path: Path) -> None:
    seen = _kill_at_moments(tmp_path, 50)
    assert seen["old"] > 0 and seen["new"] > 0, seen


def test_two_concurrent_commits_of_one_partition_never_mix_or_duplicate(tmp_path: Path) -> None:
    path = tmp_path / "ledger"
    for attempt in range(20):
        barrier, errors = threading.Barrier(2), []

        def writer(name: str, barrier: threading.Barrier = barrier, errors: list = errors, attempt: int = attempt) -> None:
            store = LedgerStore(str(path))
            barrier.wait()
            try:
                commit(store, f"{name}-{attempt}", probes=2_000)
            except Exception as exc:  # a clean refusal is allowed; a mix is not
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(n,)) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ids, counts = partition_sweeps(path)
        assert ids[FAULT_LEDGER] == ids[PROBE_RUNS] and len(ids[PROBE_RUNS]) == 1, (attempt, ids)
        assert counts == {FAULT_LEDGER: N_FAULTS, PROBE_RUNS: 2_000}, (attempt, counts)
        assert not errors, errors  # commit() retries a conflicting replacement: the later one wins
