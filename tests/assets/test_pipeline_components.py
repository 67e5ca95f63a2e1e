"""A NIC fault through the Dagster sweep: the default drill-down names it, the ledger stores it."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from faultsense_pipelines.definitions import ANALYTICS_JOB
from faultsense_pipelines.ledger import LedgerStore
from tests.pipeline_helpers import add_replicas, new_defs, sweep

pytestmark = pytest.mark.integration  # real Dagster runs

#: 32 GPUs on 8 named nodes of 4, leaf switches of 2 nodes; node b2's NIC is 1.6x slow.
NIC_FLEET = """
ledger: {ledger}
replicas:
  - name: sim-nic
    gpus: 32
    probe_size: 4
    executor: simulated
    topology: {{gpus_per_node: 4, nodes_per_switch: 2, node_names: [a1, a2, a3, a4, b1, b2, b3, b4]}}
    simulated: {{faults: [{{nic: 5, slowdown: 1.6}}], noise_sigma: 0.02, seed: 4}}
"""


def test_a_slow_nic_is_named_in_the_ledger_with_its_node_name_and_confidence(tmp_path: Path, instance) -> None:
    defs, ledger = new_defs(tmp_path, NIC_FLEET)
    add_replicas(instance, defs)
    result = sweep(defs, instance, "sim-nic")  # the default drill-down
    assert result.success
    faults = LedgerStore(str(ledger)).read_faults()
    confirmed = faults[faults["status"] == "confirmed"]
    assert list(confirmed["component"]) == ["nic:b2"]
    row = confirmed.iloc[0]
    assert row["component_kind"] == "nic" and pd.isna(row["gpu"]) and pd.isna(row["peer_gpu"])
    assert row["confidence"] >= 0.99 and 1.4 < row["slowdown"] < 1.8  # at least 1 - alpha (0.01)
    meta = instance.get_latest_materialization_event(dg.AssetKey("phase2_drilldown")).asset_materialization.metadata
    assert row["node"] == "b2"  # node 5 of node_names [a1, a2, a3, a4, b1, b2, ...]
    assert "| nic:b2 | b2 | confirmed |" in meta["verdicts"].value and "accusing probes" in meta["verdicts"].value

    analytics = defs.resolve_job_def(ANALYTICS_JOB).execute_in_process(instance=instance, partition_key="2026-11-30")
    counts = analytics.output_for_node("shared_component_counts")
    assert counts[["replica", "location", "nic_faults", "nvswitch_faults", "switch_faults", "sweeps"]].to_dict("records") == [
        {"replica": "sim-nic", "location": "b2", "nic_faults": 1, "nvswitch_faults": 0, "switch_faults": 0, "sweeps": 1}
    ]
