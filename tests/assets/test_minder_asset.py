"""The ``minder_faults`` Dagster asset: materialized in-process into a real Parquet ledger."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import pytest

from faultsense_pipelines.assets.minder import minder_faults
from faultsense_pipelines.ledger import FAULT_SCHEMA, LedgerStore
from faultsense_pipelines.minder import MinderSettings, save_model, train_minder
from faultsense_pipelines.minder.synth import Injection, generate_fleet
from faultsense_pipelines.resources.ledger import LedgerResource

pytestmark = pytest.mark.integration  # real in-process Dagster materializations

METRICS = ("gpu_power_w", "gpu_util", "net_tx_bytes", "pfc_tx_packets")


def _write_inputs(tmp_path):
    history = generate_fleet(16, 900, metrics=METRICS, seed=31)
    save_model(train_minder(history.array, MinderSettings(hidden=8, latent=2, train_steps=10)), tmp_path / "model")
    scanned = generate_fleet(16, 1500, metrics=METRICS, seed=32, injections=[
        Injection("gpu_throttle", "node-0004", 600.0),  # 00:10:00, inside the latest 15 minutes
        Injection("cpu_contention", "node-0009", 0.0, 480.0),  # over before the latest 15 minutes
    ])  # fmt: skip
    scanned.to_frame().to_parquet(tmp_path / "metrics.parquet", index=False)
    return str(tmp_path / "metrics.parquet"), str(tmp_path / "model")


def _materialize(ledger_uri: str, metrics: str, model: str) -> dg.ExecuteInProcessResult:
    config = {"metrics": metrics, "model": model, "cluster": "train-a", "window_s": 900.0}
    return dg.materialize(
        [minder_faults],
        resources={"ledger": LedgerResource(uri=ledger_uri)},
        run_config={"ops": {"minder_faults": {"config": config}}},
    )


def test_asset_appends_the_faulty_machine_of_the_latest_window_as_a_machine_row(tmp_path):
    metrics, model = _write_inputs(tmp_path)
    ledger = str(tmp_path / "ledger")
    result = _materialize(ledger, metrics, model)
    assert result.success
    faults = LedgerStore(ledger).read_faults()
    assert faults[["detector", "component_kind", "component", "replica", "status"]].values.tolist() == [
        ["minder", "machine", "machine:node-0004", "train-a", "confirmed"]
    ]
    assert faults["gpu"].isna().all() and faults["phase"].isna().all() and faults["slowdown"].isna().all()
    detected = pd.Timestamp(faults["detected_at"].iloc[0])
    assert pd.Timestamp("2026-01-01T00:14:00Z") <= detected <= pd.Timestamp("2026-01-01T00:16:00Z")
    assert len(LedgerStore(ledger).files("fault_ledger")) == 1  # one data file: one commit
    table = LedgerStore(ledger).read_table("fault_ledger")  # the Delta table holds the columns of FAULT_SCHEMA
    assert all(table.schema.field(f.name).type.equals(f.type) for f in FAULT_SCHEMA)
    mat = result.asset_materializations_for_node("minder_faults")[0]
    assert mat.metadata["rows"].value == 1
    assert mat.metadata["faulty_machines"].value == ["node-0004"]
    assert "2026-01-01T00:10:00" in mat.metadata["faults"].value  # the onset, in the metadata
    # scanning the same window again replaces the batch: still one row, same fault_id
    assert _materialize(ledger, metrics, model).success
    assert LedgerStore(ledger).read_faults()["fault_id"].tolist() == faults["fault_id"].tolist()


def test_asset_is_wired_into_the_definitions(tmp_path):
    from faultsense_pipelines.definitions import build_definitions

    defs = build_definitions(ledger_uri=str(tmp_path / "ledger"))
    assert defs.resolve_assets_def("minder_faults").group_names_by_key[dg.AssetKey("minder_faults")] == "minder"
