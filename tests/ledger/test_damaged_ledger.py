"""A damaged or foreign file in the ledger is named in one line and never blocks other replicas.

Real Delta tables, damaged for real: a data file cut in half, a text file and a Parquet file of
another schema dropped into a partition folder, a log entry overwritten with broken JSON, a
pre-Delta Parquet file left beside the table. For each: another replica's commit still lands
(a broken log entry excepted: no Delta writer can commit past it, so every commit and read
fails with one line naming the entry); ``faultsense ledger show`` either names the file on one
line and shows the rest, or fails with one line and exit 2; never a traceback. The pipeline
test runs real sweeps: one of another replica lands and its analytics name the file they
skipped; the damaged replica's own sweep fails with one line naming it.
"""

from __future__ import annotations

from contextlib import nullcontext as _nothing
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.ledger import FAULT_LEDGER, PROBE_RUNS, LedgerError, LedgerStore
from tests.ledger.test_concurrent_replicas import DAY, FAULTS, PROBES, sweep_commit

runner = CliRunner()


def _ledger(path: Path) -> LedgerStore:
    """A ledger holding one sweep each of sim-a and sim-b at 08:00 of DAY."""
    store = LedgerStore(str(path))
    for replica in ("sim-a", "sim-b"):
        sweep_commit(store, replica, 8)
    return store


def _data_file(path: Path, replica: str, dataset: str = PROBE_RUNS) -> Path:
    """The current data file of ``replica``'s rows of ``dataset``, from the Delta log's own statistics."""
    actions = pa.table(DeltaTable(str(path / "delta")).get_add_actions(flatten=True)).to_pylist()
    (rel,) = [a["path"] for a in actions if a["min.replica"] == replica and a["partition.dataset"] == dataset]
    return path / "delta" / rel


def _forget_loaded_tables() -> None:
    """Start as a fresh process would: no table of this thread's cache loaded before the damage."""
    from faultsense_pipelines.ledger import store

    store._LOADED.__dict__.pop("tables", None)


def _truncate(path: Path) -> str:
    target = _data_file(path, "sim-a", FAULT_LEDGER)  # what `ledger show`, analytics and checks read
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 2])
    return target.name


def _drop_text(path: Path) -> str:
    folder = path / "delta" / f"dataset={PROBE_RUNS}" / f"date={DAY}"
    (folder / "notes.parquet").write_text("not a parquet file\n")
    return "notes.parquet"


def _drop_foreign(path: Path) -> str:
    folder = path / "delta" / f"dataset={PROBE_RUNS}" / f"date={DAY}"
    pq.write_table(pa.table({"x": [1, 2, 3], "replica": ["sim-a"] * 3}), folder / "export.parquet")
    return "export.parquet"


def _break_log(path: Path) -> str:
    entry = sorted((path / "delta" / "_delta_log").glob("*.json"))[-1]
    entry.write_text('{"add": {"path": "dataset=probe_runs/da\n')
    return f"_delta_log/{entry.name} line 1 is not valid JSON"


def _leave_legacy(path: Path) -> str:
    folder = path / "fault_ledger" / f"date={DAY}"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"fault_id": ["f"], "replica": ["sim-a"]}), folder / "faultsense-sim-a-h08.parquet")
    return "pre-Delta Parquet files"


#: (case, damage(ledger) -> the words that name it, how `ledger show` names it: "warning", "note" or "error")
CASES = [
    ("truncated-data-file", _truncate, "warning"),
    ("text-file-in-a-partition", _drop_text, "note"),
    ("foreign-parquet-in-a-partition", _drop_foreign, "note"),
    ("corrupt-log-entry", _break_log, "error"),
    ("leftover-pre-delta-file", _leave_legacy, "note"),
]


@pytest.mark.parametrize(("damage", "shows"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_damaged_file_is_named_in_one_line_and_other_replicas_still_commit(tmp_path: Path, damage, shows: str) -> None:
    path = tmp_path / "ledger"
    _ledger(path)
    name = damage(path)
    _forget_loaded_tables()
    store = LedgerStore(str(path))
    if shows == "error":  # no Delta writer or reader gets past a broken log entry: one line naming it, every time
        for act in (lambda: sweep_commit(store, "sim-c", 8), store.read_probe_runs, store.read_faults):
            with pytest.raises(LedgerError) as info:
                act()
            assert name in str(info.value) and "\n" not in str(info.value) and len(str(info.value)) < 400
    else:
        sweep_commit(store, "sim-c", 8)  # another replica's sweep lands
        sweep_commit(store, "sim-b", 8)  # so does a re-sweep of one beside the damage
        skipped: list[str] = []
        faults = store.read_faults(skipped=skipped)
        readable = {"sim-b", "sim-c"} | (set() if shows == "warning" else {"sim-a"})
        assert faults.groupby("replica").size().to_dict() == dict.fromkeys(readable, FAULTS)
        assert [s.split(": ")[0].rsplit("/", 1)[1] for s in skipped] == ([name] if shows == "warning" else [])
        assert len(store.read_probe_runs()) == 3 * PROBES  # the probe files are whole
        with pytest.raises(LedgerError, match=name) if shows == "warning" else _nothing():
            store.read_faults()  # without skipped=: one line naming the file
        if shows == "note":  # deltalake alone agrees: a stray file is not in the table
            assert DeltaTable(str(path / "delta")).to_pyarrow_table().num_rows == 3 * (PROBES + FAULTS)
        if shows == "note" and "legacy" not in damage.__name__:
            assert [Path(p).name for p in store.stray_files([DAY])] == [name]

    result = runner.invoke(app, ["ledger", "show", "--ledger", str(path), "--since", DAY, "--limit", "100"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    if shows == "error":
        assert result.exit_code == 2 and result.stdout == ""
        assert len(lines) == 1 and lines[0].startswith("error: ledger table") and name in lines[0], lines
    else:
        assert result.exit_code == 0, result.output
        assert "sim-c" in result.stdout and "sim-b" in result.stdout
        (line,) = [ln for ln in lines if name in ln]
        assert line.startswith(f"{shows}: "), line
        assert len(lines) == 1, lines  # nothing else is said


def test_a_sweep_commit_over_its_own_damaged_file_fails_in_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "ledger"
    _ledger(path)
    name = _truncate(path)
    store = LedgerStore(str(path))
    with pytest.raises(LedgerError) as info:
        sweep_commit(store, "sim-a", 8)  # the replacement must read sim-a's old file
    message = str(info.value)
    assert name in message and "cannot commit faultsense-sim-a-h08" in message and "\n" not in message, message
    sweep_commit(store, "sim-b", 8)  # the same day's other replica is not affected
    assert len(store.read_probe_runs(replica="sim-b")) == PROBES


FLEET = """
ledger: {ledger}
replicas:
  - {{name: sim-a, gpus: 8, probe_size: 4, executor: simulated}}
  - {{name: sim-b, gpus: 8, probe_size: 4, executor: simulated}}
"""


@pytest.mark.integration  # real Dagster sweeps, checks and analytics
def test_real_sweeps_beside_a_damaged_file_land_and_the_damaged_replica_fails_naming_it(tmp_path: Path) -> None:
    from faultsense_pipelines.sweeps import run_sweep
    from tests.pipeline_helpers import HOUR, write_fleet

    fleet, path = write_fleet(tmp_path, FLEET)
    _ledger(path)
    name = _truncate(path)
    with dg.DagsterInstance.ephemeral() as instance:
        (healthy,), _ = run_sweep(fleet, ["sim-b"], hour=HOUR, instance=instance)
        health = instance.get_latest_materialization_event(dg.AssetKey("replica_daily_health"))
        (damaged,), _ = run_sweep(fleet, ["sim-a"], hour=HOUR, instance=instance)
    assert healthy.success, healthy.error
    assert LedgerStore(str(path)).read_probe_runs(replica="sim-b")["sweep_id"].nunique() == 1
    assert health is not None and health.asset_materialization is not None  # the day's analytics ran
    skipped = health.asset_materialization.metadata["skipped_files"].value
    assert name in str(skipped), skipped
    assert not damaged.success
    assert name in damaged.error and "\n" not in damaged.error, damaged.error
