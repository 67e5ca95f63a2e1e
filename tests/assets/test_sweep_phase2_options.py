"""A replica's ``phase2:`` section reaches the sequential drill-down of a real sweep run."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from tests.pipeline_helpers import SMALL_FLEET, add_replicas, new_defs, sweep

BUDGETED = SMALL_FLEET.replace(
    "    simulated: {{faults: [{{gpu: 5",
    "    phase2: {{alpha: 0.05, budget: 6}}\n    simulated: {{faults: [{{gpu: 5",
)


@pytest.mark.integration  # real in-process Dagster runs
def test_the_fleets_phase2_budget_caps_the_sequential_drilldown_of_a_sweep(tmp_path: Path) -> None:
    assert BUDGETED != SMALL_FLEET
    runs = {}
    for name, text in (("default", SMALL_FLEET), ("budgeted", BUDGETED)):
        (tmp_path / name).mkdir()
        defs, _ = new_defs(tmp_path / name, text)
        with dg.DagsterInstance.ephemeral() as instance:
            add_replicas(instance, defs)
            result = sweep(defs, instance, "sim-faulty", drilldown_method="sequential")
            assert result.success
            runs[name] = result.output_for_node("phase2_drilldown")
    default, budgeted = runs["default"], runs["budgeted"]
    # with its default budget the drill-down confirms the injected slow GPU 5 (2x, sigma 0.01)
    assert 5 in default.faulty_gpus and default.probes_phase2 > 6
    # six probes cannot settle one claim: at the first claim's level, 0.05 / 2, one sub-test
    # needs ceil(log2(40)) = 6 rounds of 2 probes (a round at most doubles the e-value) and a
    # GPU claim has two sub-tests: nothing is confirmed and the budget is never exceeded
    assert budgeted.probes_phase2 <= 6 and budgeted.faulty_gpus == []


SLIGHT = """
ledger: {ledger}
replicas:
  - name: sim-lane
    gpus: 16
    probe_size: 4
    executor: simulated
    repeats: 3
    PHASE2
    simulated: {{faults: [{{link: [1, 9], slowdown: 1.1}}], noise_sigma: 0.005, seed: 4}}
"""


@pytest.mark.integration  # real in-process Dagster runs
def test_the_fleets_phase2_min_slowdown_lets_a_sweep_claim_a_downtrained_lane(tmp_path: Path) -> None:
    # a 1.1x link (a downtrained NVLink lane) on a quiet replica: below the default
    # min_slowdown (1.2) it is not confirmed; with phase2.min_slowdown 1.05 it is
    found = {}
    for name, phase2 in (("default", ""), ("lane", "phase2: {{min_slowdown: 1.05}}")):
        (tmp_path / name).mkdir()
        text = SLIGHT.replace("    PHASE2\n", f"    {phase2}\n" if phase2 else "")
        defs, _ = new_defs(tmp_path / name, text)
        with dg.DagsterInstance.ephemeral() as instance:
            add_replicas(instance, defs)
            result = sweep(defs, instance, "sim-lane", drilldown_method="sequential")
            assert result.success
            found[name] = result.output_for_node("phase2_drilldown").faulty_links
    assert found == {"default": [], "lane": [[1, 9]]}
