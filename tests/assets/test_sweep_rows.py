"""Every sweep path writes its one ``sweeps`` row in its own commit: ``fault_ledger``'s (after a
drill-down or an empty one: binary drill-downs, nothing suspect), a degraded sweep's, a failed
attempt's. Real in-process Dagster runs on simulated replicas."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.ledger import SWEEPS, LedgerStore
from faultsense_pipelines.sweeps import run_sweep
from tests.assets.test_pipeline_degraded import DEGRADED_FLEET
from tests.pipeline_helpers import HOUR, write_fleet

pytestmark = pytest.mark.integration  # real in-process Dagster runs

FLEET = """
ledger: {ledger}
replicas:
  - name: sim-faulty
    gpus: 16
    probe_size: 4
    executor: simulated
    simulated: {{faults: [{{gpu: 5, slowdown: 2.0}}], noise_sigma: 0.01, seed: 4}}
  - name: sim-healthy
    gpus: 16
    probe_size: 4
    executor: simulated
    simulated: {{noise_sigma: 0.01, seed: 5}}
  - name: prod-dead
    gpus: 8
    probe_size: 4
    executor: vllm
    vllm: {{url: "http://127.0.0.1:PORT", timeout_s: 2, retries: 0}}
"""


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sweep_rows(ledger: Path) -> dict[str, dict]:
    rows = LedgerStore(str(ledger)).read_table(SWEEPS).to_pylist()
    return {r["replica"]: r for r in rows}


@pytest.mark.parametrize("drilldown", ["sequential", "adaptive"])
def test_each_replica_s_sweep_writes_one_row_with_what_the_sweep_did(tmp_path: Path, drilldown: str) -> None:
    fleet, ledger = write_fleet(tmp_path, FLEET.replace("PORT", str(closed_port())))
    with dg.DagsterInstance.ephemeral() as instance:
        before = datetime.now(UTC)
        outcomes, _ = run_sweep(fleet, hour=HOUR, drilldown=drilldown, instance=instance)
        after = datetime.now(UTC)
    by = {o.replica: o for o in outcomes}
    rows = sweep_rows(ledger)
    assert sorted(rows) == ["prod-dead", "sim-faulty", "sim-healthy"]
    cover16, cover8 = len(plan_cover(16, 4, "best").probes), len(plan_cover(8, 4, "best").probes)
    swept = datetime.strptime(HOUR, "%Y-%m-%d-%H:%M").replace(tzinfo=UTC)

    faulty = rows["sim-faulty"]
    assert (faulty["status"], faulty["confirmed"], faulty["drilldown"]) == ("faulty", 1, drilldown)  # the fleet's one slow GPU
    assert faulty["batch"] == "faultsense-sim-faulty-h08" and faulty["sweep_id"] == by["sim-faulty"].run_id
    assert faulty["probes_phase1"] == cover16 and faulty["probes_phase2"] == by["sim-faulty"].probes_phase2 > 0

    healthy = rows["sim-healthy"]
    assert (healthy["status"], healthy["confirmed"], healthy["failed_probes"]) == ("healthy", 0, 0)
    # adaptive has no drill-down without a suspect (an empty one, no method); sequential always reads Phase 1
    assert healthy["drilldown"] == (None if drilldown == "adaptive" else "sequential")
    assert healthy["probes_phase2"] == by["sim-healthy"].probes_phase2

    dead = rows["prod-dead"]  # the unreachable server: every Phase 1 probe unmeasured
    assert (dead["status"], dead["batch"], dead["failed_probes"], dead["probes_phase1"]) == (
        "failed", "faultsense-prod-dead-h08-failed", cover8, cover8,
    )  # fmt: skip
    for row in rows.values():
        assert row["swept_hour"] == swept and row["schema_version"] == 3
        assert before.replace(microsecond=0) <= row["started_at"] <= row["finished_at"] <= after


@pytest.mark.parametrize("drilldown", ["sequential", "adaptive"])
def test_a_degraded_sweep_s_row_says_degraded(tmp_path: Path, drilldown: str) -> None:
    fleet, ledger = write_fleet(tmp_path, DEGRADED_FLEET)
    with dg.DagsterInstance.ephemeral() as instance:
        (outcome,), _ = run_sweep(fleet, hour=HOUR, drilldown=drilldown, instance=instance)
    row = sweep_rows(ledger)["sim-degraded"]
    assert (row["status"], row["probes_phase1"], row["probes_phase2"]) == ("degraded", len(plan_cover(8, 4).probes), 0)
    # the sequential drill-down reads the degraded sweep (and blames nothing); adaptive has none
    assert row["drilldown"] == (None if drilldown == "adaptive" else "sequential")
    assert outcome.degraded and outcome.drilldown == (drilldown == "sequential")
    faults = LedgerStore(str(ledger)).read_faults()
    assert list(faults["component"]) == ["replica:sim-degraded"] and list(faults["status"]) == ["suspect"]
