"""A refused input never costs the ledger anything already written.

The ledger holds an earlier sweep of ``sim-a`` (probe rows and a confirmed ``gpu:2``, written
through the store as a sweep writes them). Then each refused command below runs against that
same ledger -- a bad fleet file, a bad second replica after a good first one, an unknown replica
after a known one, a ledger path with a trailing space, a bad option of ``ledger maintain`` --
and afterwards the table's version, its rows and every file under the ledger are exactly as
before.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.ledger import FaultRow, LedgerStore, ProbeRunRow
from faultsense_pipelines.ledger.schema import make_fault_id

runner = CliRunner()
HOUR = "2026-11-30-08:00"
GOOD = """ledger: {ledger}
replicas:
  - name: sim-a
    gpus: 8
    probe_size: 4
    executor: simulated
    simulated: {{seed: 1}}
"""


def _seed_ledger(ledger: Path) -> None:
    store = LedgerStore(str(ledger))
    runs = [ProbeRunRow("earlier-sweep", "sim-a", 1, i, (i, (i + 1) % 8), 10.0 + i, 0, "simulated") for i in range(6)]
    store.write_probe_runs(runs, day="2026-11-30", batch="faultsense-sim-a-h08")
    fault = FaultRow(
        fault_id=make_fault_id("faultsense", "sim-a", HOUR, "gpu:2"),
        detected_at=datetime(2026, 11, 30, 8, 5, tzinfo=UTC),
        sweep_id="earlier-sweep",
        replica="sim-a",
        detector="faultsense",
        component_kind="gpu",
        component="gpu:2",
        status="confirmed",
        gpu=2,
        slowdown=2.0,
        phase=2,
        probes_used=9,
    )
    store.write_faults([fault], day="2026-11-30", batch="faultsense-sim-a-h08")


def _state(ledger: Path) -> tuple:
    store = LedgerStore(str(ledger))
    files = sorted((str(p.relative_to(ledger)), p.stat().st_size, p.stat().st_mtime_ns) for p in ledger.rglob("*") if p.is_file())
    faults = store.read_faults().to_json(orient="records", date_format="iso")  # JSON: NaN == NaN
    runs = store.read_probe_runs().to_json(orient="records", date_format="iso")
    return store.version(), faults, runs, files


@pytest.mark.parametrize(
    ("fleet_text", "args"),
    [
        ("ledger: {ledger}\nreplicas:\n  - name: sim-a\n    name: sim-b\n", []),  # a duplicate key
        (GOOD + "  - name: sim-b\n    gpus: 8\n    probe_size: 4\n    executor: simulated\n    simulated: {{seed: -1}}\n", []),
        (GOOD, ["--replica", "sim-a", "--replica", "zz-absent"]),
        (GOOD, ["--ledger", "{ledger} "]),
        (GOOD, ["--repeats", "0"]),
        (GOOD, ["--hour", "2026-13-30-08:00"]),
    ],
    ids=["duplicate-key", "bad-second-replica", "unknown-second-replica", "ledger-trailing-space", "repeats-0", "bad-hour"],
)
def test_a_refused_sweep_leaves_the_ledger_exactly_as_it_was(tmp_path: Path, fleet_text: str, args: list[str]) -> None:
    ledger = tmp_path / "ledger"
    _seed_ledger(ledger)
    before = _state(ledger)
    assert "gpu:2" in before[1] and before[2].count("earlier-sweep") == 6  # the earlier sweep's rows are there
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(fleet_text.format(ledger=ledger))
    argv = ["sweep", "--fleet", str(fleet), *(a.format(ledger=ledger) for a in args)]
    if "--hour" not in args:
        argv += ["--hour", HOUR]
    result = runner.invoke(app, argv)
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, result.output[-2000:]
    assert _state(ledger) == before


@pytest.mark.parametrize("args", [["--retain-days", "9" * 5000], ["--vacuum-hours", "-1"], ["--retain-days", "²"]])
def test_a_refused_maintenance_leaves_the_ledger_exactly_as_it_was(tmp_path: Path, args: list[str]) -> None:
    ledger = tmp_path / "ledger"
    _seed_ledger(ledger)
    before = _state(ledger)
    result = runner.invoke(app, ["ledger", "maintain", "--ledger", str(ledger), *args])
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, result.output[-2000:]
    assert _state(ledger) == before
