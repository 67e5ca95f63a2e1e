"""Intra-day compaction by the writer (``LedgerStore.compact_day``, every ``compact_every``-th
version) and reading back exactly what one commit added (``added_files``, ``read_table(added_in=)``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from faultsense_pipelines.ledger import FAULT_LEDGER, PROBE_RUNS, LedgerError, LedgerStore
from tests.ledger.test_ledger import gpu_row, probe_rows

DAY = "2026-11-30"


def _day_files(table_dir: Path, day: str = DAY) -> int:
    """Active data files of ``day`` (both datasets), from deltalake itself."""
    return sum(f"/date={day}/" in uri for uri in DeltaTable(str(table_dir)).file_uris())


def _sweeps(store: LedgerStore, hours: range, day: str = DAY) -> None:
    """One commit per (hour) of replica sim-64: 3 probe rows and one fault row each."""
    for hour in hours:
        batch = f"faultsense-sim-64-h{hour:02d}"
        store.commit(day, replace=[batch], probe_runs={batch: probe_rows(3)}, faults={batch: [gpu_row(hour)]})


def test_every_nth_commit_merges_the_days_small_files_and_no_row_changes(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path), compact_every=8)
    # version 0 creates the table; version 1 is another day
    store.write_probe_runs(probe_rows(2), day="2026-11-29", batch="faultsense-sim-64-h23")
    _sweeps(store, range(6))  # versions 2..7: one probe file and one fault file each
    assert store.compactions == 0 and _day_files(tmp_path / "delta") == 12
    before = store.read_table(PROBE_RUNS).to_pandas().sort_values(["batch", "probe_index"]).reset_index(drop=True)
    _sweeps(store, range(6, 7))  # version 8: a multiple of 8, so the day is compacted too
    assert store.compactions == 1 and store.files_compacted == 14
    assert _day_files(tmp_path / "delta") == 2  # one file per dataset
    assert _day_files(tmp_path / "delta", "2026-11-29") == 1  # other days are left alone
    runs = store.read_table(PROBE_RUNS).to_pandas().sort_values(["batch", "probe_index"]).reset_index(drop=True)
    assert len(runs) == len(before) + 3
    assert runs[runs["batch"] != "faultsense-sim-64-h06"].reset_index(drop=True).equals(before)
    faults = store.read_faults()
    assert sorted(faults["gpu"].tolist()) == list(range(7))
    history = DeltaTable(str(tmp_path / "delta")).history(1)[0]
    assert history["operation"] == "OPTIMIZE" and history["faultsense.operation"] == "compact-day"


def test_a_rerun_after_compaction_still_replaces_its_batch(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path), compact_every=4)
    _sweeps(store, range(6))
    _sweeps(store, range(2, 3))  # re-run of hour 02: its rows sit in a merged file now
    faults = store.read_faults()
    assert sorted(faults["gpu"].tolist()) == list(range(6))
    assert store.read_table(PROBE_RUNS).to_pandas().groupby("batch").size().tolist() == [3] * 6


def test_compact_every_zero_never_compacts_and_bad_settings_are_refused(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path), compact_every=0)
    _sweeps(store, range(5))
    assert store.compactions == 0 and _day_files(tmp_path / "delta") == 10
    assert store.compact_day(DAY) == 10  # by hand: all ten merged into one per dataset
    assert _day_files(tmp_path / "delta") == 2
    with pytest.raises(ValueError, match="compact_every must be an integer >= 0, got '-1'"):
        LedgerStore(str(tmp_path), compact_every=-1)
    with pytest.raises(ValueError, match="target_bytes must be an integer >= 1 MiB"):
        store.compact_day(DAY, target_bytes=10)


def test_added_files_and_read_table_added_in_return_exactly_one_commits_rows(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path), compact_every=3)
    _sweeps(store, range(1))  # version 0 creates the table, 1 is this sweep
    batch = "faultsense-sim-64-h05"
    written = store.commit(DAY, replace=[batch], probe_runs={batch: probe_rows(4)}, faults={batch: [gpu_row(40), gpu_row(41)]})
    assert written.version == 2 and store.version() == 2
    # deltalake's own view: the files of version 2 that version 1 did not have
    new = set(DeltaTable(str(tmp_path / "delta"), version=2).file_uris()) - set(
        DeltaTable(str(tmp_path / "delta"), version=1).file_uris()
    )
    added = store.added_files(2, FAULT_LEDGER) + store.added_files(2, PROBE_RUNS)
    assert {str(tmp_path / "delta" / rel) for rel in added} == new and len(added) == 2
    _sweeps(store, range(2, 3))  # version 3: a multiple of 3, so the day is compacted (version 4)
    assert store.version() == 4 and store.compactions == 1
    got = store.read_table(FAULT_LEDGER, added_in=2, columns=["gpu", "batch"]).to_pylist()
    assert got == [{"gpu": 40, "batch": batch}, {"gpu": 41, "batch": batch}]  # still readable after the merge
    assert store.read_table(PROBE_RUNS, added_in=2, files={"batch": batch}).num_rows == 4
    assert store.read_table(PROBE_RUNS, added_in=2, files={"batch": "other"}).num_rows == 0
    with pytest.raises(LedgerError, match="log entry of version 99 cannot be read"):
        store.added_files(99, FAULT_LEDGER)
