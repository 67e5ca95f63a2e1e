"""A sweep judged replica-wide degraded writes one ``replica`` row to the fault ledger."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.ledger import LedgerStore, make_fault_id
from tests.pipeline_helpers import HOUR, add_replicas, new_defs, sweep

pytestmark = pytest.mark.integration  # real in-process Dagster runs

#: 4 of 8 GPUs slowed x2.0 with probe size 4: every cover probe but one holds a slow GPU, so
#: most probes are slow and the healthy-majority assumption fails.
DEGRADED_FLEET = """
ledger: {ledger}
replicas:
  - name: sim-degraded
    gpus: 8
    probe_size: 4
    executor: simulated
    simulated: {{faults: [{{gpu: 0, slowdown: 2.0}}, {{gpu: 1, slowdown: 2.0}}, {{gpu: 2, slowdown: 2.0}}, {{gpu: 3, slowdown: 2.0}}], noise_sigma: 0.01, seed: 4}}
"""


def test_a_degraded_sweep_writes_one_replica_suspect_row_and_a_rerun_does_not_duplicate_it(tmp_path: Path, instance) -> None:
    defs, ledger = new_defs(tmp_path, DEGRADED_FLEET)
    add_replicas(instance, defs)
    for _ in range(2):  # the second run of the same partition replaces the first's row
        result = sweep(defs, instance, "sim-degraded")
        assert result.success and result.output_for_node("phase1_probe_run").replica_degraded
        faults = LedgerStore(str(ledger)).read_faults(since="2026-11-30")
        assert len(faults) == 1, faults
        row = faults.iloc[0]
        assert row["fault_id"] == make_fault_id("faultsense", "sim-degraded", HOUR, "replica:sim-degraded")
        assert (row["component_kind"], row["component"], row["status"], row["phase"]) == (
            "replica",
            "replica:sim-degraded",
            "suspect",
            1,
        )
        assert str(row["gpu"]) == str(row["peer_gpu"]) == "<NA>"
        assert row["sweep_id"] == result.run_id
        # slow probes run x2.0 (the injected slowdown), the one all-healthy probe is the baseline
        assert row["slowdown"] == pytest.approx(2.0, rel=0.05)
    shown = CliRunner().invoke(app, ["ledger", "show", "--ledger", str(ledger), "--since", "2026-11-30"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "replica:sim-degraded" in shown.output and "suspect" in shown.output, shown.output


def test_the_daily_health_calls_a_day_with_a_degraded_sweep_degraded_not_healthy(tmp_path: Path, instance) -> None:
    from faultsense_pipelines.definitions import ANALYTICS_JOB

    defs, _ = new_defs(tmp_path, DEGRADED_FLEET)
    add_replicas(instance, defs)
    assert sweep(defs, instance, "sim-degraded").success
    result = defs.resolve_job_def(ANALYTICS_JOB).execute_in_process(instance=instance, partition_key="2026-11-30")
    health = result.output_for_node("replica_daily_health").set_index("replica")
    assert health.loc["sim-degraded", "health"] == "degraded"
    assert health.loc["sim-degraded", "degraded_sweeps"] == 1 and health.loc["sim-degraded", "faulty_components"] == 0
