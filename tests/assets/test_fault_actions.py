"""``fault_actions`` in the sweep job: a real in-process Dagster run decides and records actions.

A real Dagster instance runs the sweep job of a small simulated fleet whose ``actions:``
section has a dry-run action and a real one running a real script; the asset's value and
metadata, and the ledger's ``actions`` rows, are read back.
"""

from __future__ import annotations

import pytest

from faultsense_pipelines.definitions import build_definitions
from faultsense_pipelines.ledger import LedgerStore
from tests.actions.ledger_setup import calls_of, recorder
from tests.pipeline_helpers import add_replicas, sweep, write_fleet

pytestmark = pytest.mark.integration

FLEET = """
ledger: {ledger}
replicas:
  - name: sim-faulty
    gpus: 16
    probe_size: 4
    executor: simulated
    gpus_per_node: 4
    simulated: {{faults: [{{gpu: 5, slowdown: 2.0}}], noise_sigma: 0.01, seed: 4}}
actions:
  - name: preview
    on: confirmed
    command: [/bin/false]
  - name: cordon
    on: confirmed
    command: [{script}]
    dry_run: false
    kinds: [gpu]
"""


def test_the_sweep_job_records_its_action_decisions(tmp_path, instance) -> None:
    """Injected slow GPU 5 (node 1 of 4-GPU nodes): the dry-run action records dry_run and runs
    nothing; the real one runs the script once with gpu:5 / node1 and records acted; the
    asset's metadata counts them and shows the table."""
    script, calls = recorder(tmp_path)
    fleet, ledger = write_fleet(tmp_path, FLEET.replace("{script}", str(script)))
    defs = build_definitions(fleet)
    add_replicas(instance, defs)
    result = sweep(defs, instance, "sim-faulty")
    assert result.success
    decided = result.output_for_node("fault_actions")
    assert sorted((d["action"], d["component"], d["node"], d["decision"]) for d in decided) == [
        ("cordon", "gpu:5", "node1", "acted"),
        ("preview", "gpu:5", "node1", "dry_run"),
    ]
    assert [line.split(" ")[:2] for line in calls_of(calls)] == [["gpu:5", "node1"]]
    (mat,) = [
        e.event_specific_data.materialization
        for e in result.all_events
        if e.is_step_materialization and e.step_key == "fault_actions"
    ]
    meta = mat.metadata
    assert (meta["acted"].value, meta["dry_run"].value, meta["skipped"].value) == (1, 1, 0)
    assert "| cordon | confirmed | gpu:5 | node1 | acted |" in meta["actions"].value
    rows = LedgerStore(str(ledger)).read_actions()
    assert sorted(rows["decision"]) == ["acted", "dry_run"] and set(rows["sweep_id"]) == {result.run_id}
