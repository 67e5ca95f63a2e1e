"""The ``flowpulse_faults`` Dagster asset: materialized in-process into a real Parquet ledger."""

from __future__ import annotations

import dagster as dg
import pytest

from faultsense_pipelines.assets.flowpulse import flowpulse_faults
from faultsense_pipelines.flowpulse.simulate import LossyLink, RingAllReduce, counters_frame, simulate
from faultsense_pipelines.flowpulse.topology import fat_tree, topology_to_dict
from faultsense_pipelines.ledger import FAULT_SCHEMA, LedgerStore
from faultsense_pipelines.resources.ledger import LedgerResource

pytestmark = pytest.mark.integration  # real in-process Dagster materializations


def _write_fabric(tmp_path):
    import json

    topo = fat_tree(4, 8, 8)
    counters = simulate(
        topo, 70, collective=RingAllReduce(buffer_bytes=8 * 2**30), seed=5, lossy=[LossyLink(3, 6, 0.02, "down", 30)]
    )
    counters_frame(counters).to_parquet(tmp_path / "counters.parquet", index=False)
    (tmp_path / "topology.json").write_text(json.dumps(topology_to_dict(topo)))
    return str(tmp_path / "counters.parquet"), str(tmp_path / "topology.json")


def _materialize(ledger_uri: str, counters: str, topology: str) -> dg.ExecuteInProcessResult:
    config = {"counters": counters, "topology": topology, "fabric": "fab-a"}
    return dg.materialize(
        [flowpulse_faults],
        resources={"ledger": LedgerResource(uri=ledger_uri)},
        run_config={"ops": {"flowpulse_faults": {"config": config}}},
    )


def test_asset_appends_the_lossy_link_as_a_fabric_link_row_and_a_rerun_replaces_it(tmp_path):
    counters, topology = _write_fabric(tmp_path)
    ledger = str(tmp_path / "ledger")
    result = _materialize(ledger, counters, topology)
    assert result.success
    faults = LedgerStore(ledger).read_faults()
    assert faults[["detector", "component_kind", "component", "replica", "status"]].values.tolist() == [
        ["flowpulse", "fabric_link", "fabric_link:leaf03/up06-spine06", "fab-a", "confirmed"]
    ]
    assert faults["gpu"].isna().all() and faults["phase"].isna().all()
    assert len(LedgerStore(ledger).files("fault_ledger")) == 1  # one data file: one commit
    table = LedgerStore(ledger).read_table("fault_ledger")  # the Delta table holds the columns of FAULT_SCHEMA
    assert all(table.schema.field(f.name).type.equals(f.type) for f in FAULT_SCHEMA)
    mat = result.asset_materializations_for_node("flowpulse_faults")[0]
    assert mat.metadata["rows"].value == 1
    # scanning the same counters again replaces the batch: still one row, same fault_id
    assert _materialize(ledger, counters, topology).success
    again = LedgerStore(ledger).read_faults()
    assert again["fault_id"].tolist() == faults["fault_id"].tolist()


def test_asset_is_wired_into_the_definitions(tmp_path):
    from faultsense_pipelines.definitions import build_definitions

    defs = build_definitions(ledger_uri=str(tmp_path / "ledger"))
    assert defs.resolve_assets_def("flowpulse_faults").group_names_by_key[dg.AssetKey("flowpulse_faults")] == "flowpulse"


def test_the_asset_run_config_defaults_are_the_detector_defaults():
    """The UI's launchpad must scan like `faultsense flowpulse scan` does (they once drifted: threshold 24)."""
    from faultsense_pipelines.assets.flowpulse import FlowPulseScanConfig
    from faultsense_pipelines.flowpulse.scan import ScanConfig

    asset, detector = FlowPulseScanConfig(), ScanConfig()
    for name in ("model", "traffic", "reference", "lag", "design_loss", "false_alarm_rate", "threshold"):
        assert getattr(asset, name) == getattr(detector, name), name
