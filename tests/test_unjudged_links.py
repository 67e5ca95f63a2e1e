"""``unjudged_links`` and the re-check switch (``--no-recheck``, run config ``recheck``).

Without the re-check, the links hidden behind a slow GPU stay unjudged; the count must say
exactly how many, so an operator who trades exactness for probes knows what was skipped.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

from bench.bench_recheck_bound import hidden_links
from faultsense_pipelines.assets.analytics import DAILY_HEALTH_SQL, run_sql
from faultsense_pipelines.cli import app
from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.ledger import LedgerStore
from faultsense_pipelines.localize import localize as _localize
from faultsense_pipelines.localize.verdicts import Localization, Phase1Result, ProbeRecord, Verdict
from faultsense_pipelines.replica.faults import GpuFault
from faultsense_pipelines.replica.vocabulary import DrilldownMethod
from faultsense_pipelines.sim.simulator import SimulatedReplica
from faultsense_pipelines.sweeps import run_sweep
from tests.pipeline_helpers import HOUR, write_fleet

#: these tests are of the adaptive drill-down (exact on noise-free probes), not the default one
localize = partial(_localize, method=DrilldownMethod.ADAPTIVE)

# The paper's Figure 2c cover of n=8 GPUs by 6 probes of k=4.
COVER = [(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7), (0, 1, 6, 7), (2, 3, 4, 5)]


def _record(phase: int, index: int, gpus, outcome: str) -> ProbeRecord:
    latency = {"pass": (10.0,), "fail": (20.0,), "error": ()}[outcome]
    return ProbeRecord(phase, index, tuple(gpus), latency, "timeout" if outcome == "error" else None, outcome)


def _localization(phase2=(), verdicts=(), slow_gpu: int = 3, degraded: bool = False) -> Localization:
    records = tuple(_record(1, i, p, "fail" if slow_gpu in p else "pass") for i, p in enumerate(COVER))
    phase1 = Phase1Result(
        gpus=8,
        probe_size=4,
        cover_method="paper-fig2",
        records=records,
        baseline_ms=10.0,
        threshold_ms=12.0,
        suspect_probes=tuple(i for i, r in enumerate(records) if r.outcome == "fail"),
        replica_degraded=degraded,
        errors=0,
    )
    p2 = tuple(_record(2, i, gpus, outcome) for i, (gpus, outcome) in enumerate(phase2))
    return Localization(phase1, p2, tuple(verdicts))


def test_hand_worked_figure_2_cover_with_gpu_3_slow():
    # GPU 3 fails (0,1,2,3), (2,3,6,7), (2,3,4,5); the passing probes (4,5,6,7), (0,1,4,5),
    # (0,1,6,7) clear every link among {0,1,4,5,6,7}. GPU 2 shares a passing probe with no
    # one, so its six links to GPUs other than 3 are unjudged; GPU 3's seven are masked.
    slow = Verdict("gpu", 3, None, "confirmed", 2.0, 2, 2)
    assert _localization(verdicts=[slow]).unjudged_links == 6
    # a passing Phase 2 probe (2, 0, 1, 4) clears (0,2), (1,2), (2,4); a failing or errored
    # one clears nothing
    p2 = [((0, 1, 2, 4), "pass"), ((2, 5, 6, 7), "error"), ((2, 3, 6, 7), "fail")]
    assert _localization(p2, [slow]).unjudged_links == 3
    # a link found faulty is judged: (2, 5) confirmed leaves (2, 6), (2, 7)
    link = Verdict("link", 2, 5, "confirmed", 1.5, 2, 3)
    assert _localization(p2, [slow, link]).unjudged_links == 2
    # GPU 3 not (yet) found faulty: its seven links count too
    assert _localization().unjudged_links == 6 + 7
    assert _localization(verdicts=[slow], degraded=True).unjudged_links is None
    assert _localization(verdicts=[slow]).to_dict()["unjudged_links"] == 6


def test_a_single_probe_sweep_vouches_for_nothing():
    # k = n: the one probe is compared with itself and passes, even with GPU 3 at 2x; it must
    # not vouch for the 28 links of 8 GPUs
    loc = localize(SimulatedReplica(8, [GpuFault(3, 2.0)]), plan_cover(8, 8))
    assert len(loc.phase1.records) == 1 and loc.faulty_gpus == []
    assert loc.unjudged_links == 8 * 7 // 2


@pytest.mark.parametrize("g", [0, 150, 299])
def test_without_recheck_a_slow_gpu_leaves_exactly_its_hidden_links_unjudged_at_300_gpus(g):
    # hidden_links (bench/bench_recheck_bound.py) builds H_g with networkx from the cover alone
    cover = plan_cover(300, 8)
    hidden = hidden_links([tuple(p) for p in cover.probes], g).number_of_edges()
    fast = localize(SimulatedReplica(300, [GpuFault(g, 2.0)]), cover, recheck_explained=False)
    exact = localize(SimulatedReplica(300, [GpuFault(g, 2.0)]), cover)
    assert fast.faulty_gpus == exact.faulty_gpus == [g]
    assert hidden > 700 and fast.unjudged_links == hidden
    assert exact.unjudged_links == 0
    assert fast.probes_phase2 < exact.probes_phase2


def test_simulate_no_recheck_reports_the_unjudged_links(tmp_path: Path):
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"gpus": 64, "probe_size": 8, "faults": [{"gpu": 9, "slowdown": 1.8}], "seed": 7}))
    runner = CliRunner()
    exact = json.loads(runner.invoke(app, ["simulate", "--scenario", str(scenario), "--json", "--drilldown", "adaptive"]).stdout)
    fast = json.loads(
        runner.invoke(app, ["simulate", "--scenario", str(scenario), "--json", "--drilldown", "adaptive", "--no-recheck"]).stdout
    )
    cover = plan_cover(64, 8)
    assert exact["faulty_gpus"] == fast["faulty_gpus"] == [9]
    assert exact["unjudged_links"] == 0
    assert fast["unjudged_links"] == hidden_links([tuple(p) for p in cover.probes], 9).number_of_edges() > 0
    assert fast["probes"]["phase2"] < exact["probes"]["phase2"]
    table = runner.invoke(app, ["simulate", "--scenario", str(scenario), "--drilldown", "adaptive", "--no-recheck"]).stdout
    assert f"unjudged links {fast['unjudged_links']}" in " ".join(table.split())


@pytest.mark.integration  # real in-process Dagster runs
def test_the_sweep_run_config_recheck_false_skips_the_recheck_and_says_so(tmp_path: Path):
    fleet, _ = write_fleet(tmp_path)
    with dg.DagsterInstance.ephemeral() as instance:
        (exact,), _ = run_sweep(fleet, ["sim-faulty"], hour=HOUR, instance=instance, drilldown="adaptive")
        (fast,), ledger = run_sweep(fleet, ["sim-faulty"], hour=HOUR, instance=instance, recheck=False, drilldown="adaptive")
        meta = instance.get_latest_materialization_event(dg.AssetKey("phase2_drilldown")).asset_materialization.metadata
    assert exact.success and fast.success
    # the slow link 1-9 is covered only by the probe (1, 5, 9, 13) that slow GPU 5 fails:
    # the re-check finds it; without it, it is missed and counted among the unjudged
    assert [p for p in plan_cover(16, 4).probes if {1, 9} <= set(p)] == [(1, 5, 9, 13)]
    assert sorted(exact.confirmed) == ["gpu:5", "link:1-9"] and fast.confirmed == ["gpu:5"]
    assert exact.unjudged_links == 0 and fast.unjudged_links > 0
    assert meta["unjudged_links"].value == fast.unjudged_links
    assert fast.probes_phase2 < exact.probes_phase2
    # the ledger says the sweep did not vouch for every link; that is not a degraded replica
    faults = LedgerStore(ledger).read_faults()
    assert sorted(zip(faults.component, faults.status)) == [("gpu:5", "confirmed"), ("replica:sim-faulty", "inconclusive")]
    health = run_sql(DAILY_HEALTH_SQL, faults=faults, runs=LedgerStore(ledger).read_probe_runs())
    assert health[["health", "degraded_sweeps"]].values.tolist() == [["faulty", 0]]
    result = CliRunner().invoke(
        app,
        ["sweep", "--fleet", str(fleet), "--replica", "sim-faulty", "--hour", HOUR, "--drilldown", "adaptive", "--no-recheck"],
    )
    assert result.exit_code == 0, result.output
    assert f"sim-faulty: {fast.unjudged_links} links unjudged" in result.stdout
    result = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet), "--replica", "sim-faulty", "--hour", HOUR])
    assert result.exit_code == 0 and "links unjudged" not in result.stdout
    faults = LedgerStore(ledger).read_faults()  # the exact re-run replaces the partition
    assert sorted(zip(faults.component, faults.status)) == [("gpu:5", "confirmed"), ("link:1-9", "confirmed")]
