"""The evidence-weighted drill-down: hand-worked oracles, then invariants under production-like noise."""

from __future__ import annotations

import math

import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import run_phase1
from faultsense_pipelines.localize.evidence.drilldown import EvidenceModel, evidence_drilldown
from faultsense_pipelines.localize.evidence.wiring import run_evidence_phase2
from faultsense_pipelines.replica.executor import ProbeMeasurement
from faultsense_pipelines.sim.latency import LatencyModel, NoiseModel

PRODUCTION = NoiseModel(
    sigma=0.03, tail_df=4.0, stall_rate=0.02, stall_max=4.0, drift=0.15, burst_rate=0.01, burst_height=0.3, burst_length=15
)


class _Executor:
    """A simulated replica over the production-like latency model, latencies scaled by ``scale``."""

    name = "simulated"

    def __init__(self, n: int, model: LatencyModel, scale: float = 1.0) -> None:
        self.gpus, self.model, self.scale = n, model, scale

    def run(self, gpus, repeats=1):
        return ProbeMeasurement(tuple(sorted(gpus)), tuple(self.scale * x for x in self.model.measure(tuple(gpus), repeats)))

    def close(self) -> None:
        pass


def _sweep(n, k, faults, seed, noise=PRODUCTION, scale=1.0):
    ex = _Executor(n, LatencyModel(noise, faults, seed=seed), scale)
    p1 = run_phase1(ex, plan_cover(n, k), repeats=3)
    assert not p1.replica_degraded
    return run_evidence_phase2(ex, p1, repeats=3, seed=seed)[1]


def _confirmed(verdicts):
    return {(v.component_kind, v.gpu, v.peer_gpu) for v in verdicts if v.status == "confirmed"}


def _noise_free_oracle(slow: dict[tuple[int, ...], float], calls: list):
    def slowdown(gpus):
        return max((f for c, f in slow.items() if set(c) <= set(gpus)), default=1.0)

    def pair(test, reference):
        calls.append((test, reference))
        return math.log(slowdown(test) / slowdown(reference))

    return pair, slowdown


def _phase1(n, k, slowdown):
    cover = plan_cover(n, k)
    return [(p, math.log(slowdown(p))) for p in cover.probes]


def test_a_noise_free_slow_gpu_is_confirmed_alone_with_its_confidence():
    calls: list = []
    pair, slowdown = _noise_free_oracle({(5,): 1.6}, calls)
    phase1 = _phase1(16, 4, slowdown)
    suspects = [i for i, (_, x) in enumerate(phase1) if x > 0]
    model = EvidenceModel(sigma=0.0, effect=math.log(1.2))
    result = evidence_drilldown(16, 4, phase1, suspects, pair, model)
    confirmed = [f for f in result.findings if f.status == "confirmed"]
    assert [(f.kind, f.gpu) for f in confirmed] == [("gpu", 5)]
    # each pair gives the clipped ratio 2.75 (d = log 1.6 >> effect); three would reach
    # log(999) = 6.9, but the pairs go on until no single pad carries the accusation
    # (leave-one-pad-out); the posterior is the logistic of the summed ratio
    pairs = sum(5 in t for t, _ in calls)
    assert pairs >= 3
    assert confirmed[0].confidence == pytest.approx(1 / (1 + math.exp(-pairs * 2.75)), rel=1e-9)
    assert confirmed[0].slowdown == pytest.approx(1.6)
    # every test probe held GPU 5 and k-1 pads; no reference ever held it
    assert all(5 not in ref for _, ref in calls)
    assert all(len(t) == 4 and len(r) == 4 for t, r in calls)


def test_a_noise_free_slow_link_is_confirmed_and_neither_end_is_blamed():
    calls: list = []
    pair, slowdown = _noise_free_oracle({(3, 9): 1.5}, calls)
    phase1 = _phase1(16, 4, slowdown)
    suspects = [i for i, (_, x) in enumerate(phase1) if x > 0]
    assert len(suspects) == 1
    result = evidence_drilldown(16, 4, phase1, suspects, pair, EvidenceModel(sigma=0.0, effect=math.log(1.2)))
    assert [(f.kind, f.gpu, f.peer_gpu, f.status) for f in result.findings] == [("link", 3, 9, "confirmed")]
    assert result.findings[0].confidence >= 0.999


def test_one_accusing_measurement_never_blames():
    """A stall that hits one test probe once is evidence, not a verdict."""
    calls: list = []
    base_pair, slowdown = _noise_free_oracle({}, calls)

    def pair(test, reference):
        d = base_pair(test, reference)
        return math.log(3.0) if len(calls) == 1 else d  # the first test stalls 3x

    phase1 = _phase1(16, 4, slowdown)
    phase1[0] = (phase1[0][0], math.log(1.5))  # Phase 1 saw probe 0 slow once
    result = evidence_drilldown(16, 4, phase1, [0], pair, EvidenceModel(sigma=0.02, effect=math.log(1.2)))
    assert [f for f in result.findings if f.status == "confirmed"] == []
    assert result.cleared_units == 1


@pytest.mark.parametrize("seed", range(3))
def test_under_production_noise_a_slow_gpu_and_a_slow_link_are_found_and_nothing_else(seed):
    faults = [((9,), True, 1.8, 1.0), ((3, 21), False, 1.5, 1.0)]
    verdicts = _sweep(64, 8, faults, seed)
    assert _confirmed(verdicts) == {("gpu", 9, None), ("link", 3, 21)}
    # a confirmed GPU's links to healthy GPUs are never confirmed
    assert all(v.peer_gpu is None or 9 not in (v.gpu, v.peer_gpu) for v in verdicts if v.status == "confirmed")
    assert all(v.confidence is not None and v.confidence >= 0.999 for v in verdicts if v.status == "confirmed")


@pytest.mark.parametrize("seed", range(3))
def test_an_intermittent_gpu_is_named_and_none_of_its_links(seed):
    verdicts = _sweep(64, 8, [((17,), True, 1.8, 0.6)], seed)
    assert _confirmed(verdicts) == {("gpu", 17, None)}


@pytest.mark.parametrize("seed", range(2))
def test_with_spillover_a_2x_gpu_is_still_found(seed):
    noise = NoiseModel(**{**PRODUCTION.__dict__, "spillover": 0.3})
    assert _confirmed(_sweep(64, 8, [((40,), True, 2.0, 1.0)], seed, noise)) == {("gpu", 40, None)}


def test_scaling_every_latency_by_one_factor_changes_no_verdict():
    faults = [((9,), True, 1.8, 1.0), ((3, 21), False, 1.5, 1.0)]
    plain, scaled = _sweep(64, 8, faults, 1), _sweep(64, 8, faults, 1, scale=7.5)
    assert [(v.component_kind, v.gpu, v.peer_gpu, v.status, v.probes_used) for v in plain] == [
        (v.component_kind, v.gpu, v.peer_gpu, v.status, v.probes_used) for v in scaled
    ]
    for a, b in zip(plain, scaled, strict=True):  # ratios: equal up to floating-point rounding
        assert a.slowdown == pytest.approx(b.slowdown, rel=1e-12) and a.confidence == pytest.approx(b.confidence, rel=1e-12)


def test_a_tiny_replica_whose_gpu_sits_in_half_the_probes_is_judged():
    """n=8, k=4: every GPU is in 3 of the 6 cover probes; the default fleet's local-8 case."""
    for seed in range(3):
        assert _confirmed(_sweep(8, 4, [((2,), True, 3.0, 1.0)], seed)) == {("gpu", 2, None)}


def test_a_healthy_replica_blames_nothing():
    for seed in range(3):
        assert _confirmed(_sweep(128, 8, [], seed)) == set()


def test_simulate_json_lists_every_verdict_with_its_confidence(tmp_path):
    import json

    from typer.testing import CliRunner

    from faultsense_pipelines.cli import app

    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps(
            {
                "gpus": 64,
                "probe_size": 8,
                "faults": [{"gpu": 17, "slowdown": 1.5}, {"link": [3, 40], "slowdown": 2.0}],
                "noise": {"sigma": 0.02},
                "seed": 1,
            }
        )
    )
    out = CliRunner().invoke(app, ["simulate", "--scenario", str(scenario), "--drilldown", "evidence", "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    default = CliRunner().invoke(app, ["simulate", "--scenario", str(scenario), "--json"])
    assert json.loads(default.stdout) == got  # the evidence drill-down is the default
    assert got["faulty_gpus"] == [17] and got["faulty_links"] == [[3, 40]]
    verdicts = {v["component"]: v for v in got["verdicts"]}
    assert set(verdicts) == {"gpu:17", "link:3-40"}
    assert all(v["status"] == "confirmed" and v["confidence"] >= 0.999 for v in verdicts.values())
    assert verdicts["gpu:17"]["slowdown"] == pytest.approx(1.5, rel=0.05)
    # the binary drill-downs state no confidence
    plain = json.loads(
        CliRunner().invoke(app, ["simulate", "--scenario", str(scenario), "--json", "--drilldown", "adaptive"]).stdout
    )
    assert [v["confidence"] for v in plain["verdicts"]] == [None, None]


def test_the_ledger_rows_of_an_evidence_sweep_carry_its_confidence():
    from datetime import UTC, datetime

    from faultsense_pipelines.assets.partitions import SweepKey
    from faultsense_pipelines.assets.rows import fault_rows
    from faultsense_pipelines.localize import run_phase2
    from faultsense_pipelines.localize.verdicts import Localization

    ex = _Executor(64, LatencyModel(PRODUCTION, [((9,), True, 1.8, 1.0)], seed=0))
    p1 = run_phase1(ex, plan_cover(64, 8), repeats=3)
    loc: Localization = run_phase2(ex, p1, method="evidence", repeats=3)
    rows = fault_rows(loc, key=SweepKey("2026-11-30-08:00", "sim-64"), sweep_id="run-1", detected_at=datetime.now(UTC))
    confirmed = [r for r in rows if r.status == "confirmed"]
    assert [r.component for r in confirmed] == ["gpu:9"]
    assert confirmed[0].confidence == next(v.confidence for v in loc.verdicts if v.status == "confirmed") >= 0.999


def test_a_gpu_left_inconclusive_leaning_healthy_does_not_hide_a_slow_link_beside_it():
    """GPU 6 shares the slow link's Phase 1 probe and looks a little slow in Phase 1 (a second
    probe of it reads 0.6 x the effect), so the GPU stage tests it; its own tests accuse it in
    4 of 24 (every 5th), which leaves it inconclusive at log-likelihood ratio 4 x 2.75 - 20 x
    0.69 = -2.8 (confidence 0.06). The probe's link must still be searched and confirmed."""
    calls: list = []
    base, slowdown = _noise_free_oracle({(3, 9): 1.5}, calls)
    model = EvidenceModel(sigma=0.02, effect=math.log(1.2))
    alone: list = []

    def pair(test, reference):
        d = base(test, reference)
        if 6 in test and not set(test) & {3, 9, 12}:  # GPU 6 tested alone, padded
            alone.append(test)
            if len(alone) % 5 == 0:
                return model.effect
        return d

    phase1 = _phase1(16, 4, slowdown)
    suspects = [i for i, (_, x) in enumerate(phase1) if x > 0]
    assert [phase1[i][0] for i in suspects] == [(3, 6, 9, 12)]
    other = next(i for i, (p, _) in enumerate(phase1) if 6 in p and not set(p) & {3, 9})
    phase1[other] = (phase1[other][0], 0.6 * model.effect)
    found = {(f.kind, f.gpu, f.peer_gpu): f for f in evidence_drilldown(16, 4, phase1, suspects, pair, model).findings}
    assert found[("gpu", 6, None)].status == "inconclusive" and len(alone) == 24
    assert found[("gpu", 6, None)].confidence == pytest.approx(1 / (1 + math.exp(2.8)), abs=0.01)
    assert found[("link", 3, 9)].status == "confirmed" and found[("link", 3, 9)].confidence >= 0.999
    assert len(found) == 2


def test_a_gpu_whose_tests_cannot_be_measured_is_inconclusive_with_a_confidence_and_the_reason():
    """Every paired test fails (a dead worker): no evidence either way, so the confidence is the
    prior odds 1:1 (0.5), and the reason says what failed."""
    calls: list = []
    _, slowdown = _noise_free_oracle({(5,): 2.0}, calls)
    phase1 = _phase1(16, 4, slowdown)
    suspects = [i for i, (_, x) in enumerate(phase1) if x > 0]
    result = evidence_drilldown(16, 4, phase1, suspects, lambda t, r: None, EvidenceModel(sigma=0.02, effect=math.log(1.2)))
    (f,) = [f for f in result.findings if f.gpu == 5]
    assert (f.kind, f.status, f.confidence) == ("gpu", "inconclusive", 0.5)
    assert f.reason.startswith("probes failed: probe [") and "could not be measured" in f.reason
    assert not [g for g in result.findings if g.status == "confirmed"]


def test_a_tiny_replica_confirms_its_slow_gpu_where_no_control_can_be_formed():
    """n = 8, k = 4: a control of GPU 2's test (its 3 pads and a swapped GPU) leaves 3 GPUs,
    too few for a disjoint reference; the accusing tests then count as they are, and GPU 2 is
    confirmed in the GPU stage from its own pairs alone (the stage's pairs all hold it)."""
    calls: list = []
    pair, slowdown = _noise_free_oracle({(2,): 3.0}, calls)
    phase1 = _phase1(8, 4, slowdown)
    suspects = [i for i, (_, x) in enumerate(phase1) if x > 0]
    result = evidence_drilldown(8, 4, phase1, suspects, pair, EvidenceModel(sigma=0.02, effect=math.log(2.0)))
    confirmed = [f for f in result.findings if f.status == "confirmed"]
    assert [(f.kind, f.gpu) for f in confirmed] == [("gpu", 2)]
    used = confirmed[0].tests_used
    assert used >= 3 and all(2 in test for test, _ in calls[:used])  # no control among them


def test_the_hub_of_two_slow_links_is_not_blamed_on_a_dense_tiny_replica():
    """Noise-free n = 25, k = 8 with slow links 1-3, 3-5, 5-21, 6-19 (the paper grid's
    d = 4 link scenario, seed 0): GPU 3 meets two slow links, and the unit holding it padded
    its tests with 1 and 5 so often that every accusation held one of them. A slow GPU 3 would
    also slow its tests without them; those read fast, so GPU 3 is not blamed (it was,
    at 0.9999, before the unit stage compared it with the two links)."""
    from faultsense_pipelines.localize import localize
    from faultsense_pipelines.replica.faults import LinkFault
    from faultsense_pipelines.sim.simulator import SimulatedReplica

    faults = [LinkFault((1, 3), 1.62), LinkFault((3, 5), 2.86), LinkFault((5, 21), 2.44), LinkFault((6, 19), 2.01)]
    loc = localize(SimulatedReplica(25, faults), plan_cover(25, 8, "best"), method="evidence")
    truth = {(1, 3), (3, 5), (5, 21), (6, 19)}
    confirmed = [(v.component_kind, v.gpu, v.peer_gpu) for v in loc.verdicts if v.status == "confirmed"]
    assert confirmed, "the replica holds four slow links: something is found"
    assert all(kind == "link" and (a, b) in truth for kind, a, b in confirmed), confirmed
    gpu3 = [v for v in loc.verdicts if v.component_kind == "gpu" and v.gpu == 3]
    # left open, either while slow links to its pads rival it or with the unit's fault unsettled
    assert all(v.status == "inconclusive" and ("slow links" in v.reason or "unsettled" in v.reason) for v in gpu3)
