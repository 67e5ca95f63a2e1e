"""Invariants of the default (evidence) drill-down as properties, under production-like noise.

Each example draws a replica shape, one to three GPU or link faults and a seed, measures the
replica on :data:`~faultsense_pipelines.sim.latency.PRODUCTION_NOISE` (tails, stalls, drift,
bursts) and checks what must hold whatever the draw (issue: verdicts you can trust):

* a confirmed GPU's links to healthy GPUs are never confirmed;
* scaling every latency by one factor changes no verdict;
* a replica whose one slow GPU makes its probes 2x slower is never reported healthy;
* nothing is blamed that fewer than ``min_accusing`` measurements accused.

The default profile draws the same examples every run; ``make fuzz`` draws fresh ones.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize
from faultsense_pipelines.localize.evidence.drilldown import EvidenceModel
from faultsense_pipelines.replica.faults import GpuFault, LinkFault
from faultsense_pipelines.replica.vocabulary import ComponentKind, Status
from faultsense_pipelines.sim.latency import PRODUCTION_NOISE
from faultsense_pipelines.sim.simulator import SimulatedReplica
from tests.hypothesis_profiles import examples

SHAPES = [(24, 4), (32, 4), (32, 8), (48, 8)]


@st.composite
def replicas(draw):
    """``(n, k, faults, seed)``: 1-3 faults, GPUs and links disjoint, slowdowns 1.5-2.5x."""
    n, k = draw(st.sampled_from(SHAPES))
    gpus = draw(st.lists(st.integers(0, n - 1), min_size=0, max_size=2, unique=True))
    faults: list = [GpuFault(g, draw(st.floats(1.5, 2.5))) for g in gpus]
    free = [g for g in range(n) if g not in gpus]
    links = draw(
        st.lists(st.tuples(st.sampled_from(free), st.sampled_from(free)), max_size=2 if gpus else 3, min_size=0 if gpus else 1)
    )
    seen = set()
    for a, b in links:
        if a != b and (min(a, b), max(a, b)) not in seen:
            seen.add((min(a, b), max(a, b)))
            faults.append(LinkFault((a, b), draw(st.floats(1.5, 2.5))))
    return n, k, faults, draw(st.integers(0, 2**31 - 1))


def _sweep(n, k, faults, seed, base_ms=20.0):
    replica = SimulatedReplica(n, faults, seed=seed, base_ms=base_ms, noise=PRODUCTION_NOISE)
    return localize(replica, plan_cover(n, k), repeats=3)


def _confirmed(loc):
    return [v for v in loc.verdicts if v.status == Status.CONFIRMED]


@settings(max_examples=examples(12))
@given(replicas())
def test_a_confirmed_gpus_links_to_healthy_gpus_are_never_confirmed(case):
    n, k, faults, seed = case
    loc = _sweep(n, k, faults, seed)
    confirmed_gpus = {v.gpu for v in _confirmed(loc) if v.component_kind == ComponentKind.GPU}
    slow_gpus = {f.gpu for f in faults if isinstance(f, GpuFault)}
    for v in _confirmed(loc):
        if v.component_kind == ComponentKind.LINK:
            ends = {v.gpu, v.peer_gpu}
            assert not (ends & confirmed_gpus and ends - slow_gpus - confirmed_gpus), (v, faults)


@settings(max_examples=examples(8))
@given(replicas(), st.sampled_from([0.01, 0.37, 3.0, 250.0]))
def test_scaling_every_latency_by_one_factor_changes_no_verdict(case, factor):
    n, k, faults, seed = case
    plain, scaled = _sweep(n, k, faults, seed), _sweep(n, k, faults, seed, base_ms=20.0 * factor)

    def verdicts(loc):
        return [(v.component_kind, v.gpu, v.peer_gpu, v.status, v.probes_used) for v in loc.verdicts]

    assert verdicts(plain) == verdicts(scaled)
    assert (plain.probes_phase1, plain.probes_phase2, plain.replica_degraded) == (
        scaled.probes_phase1,
        scaled.probes_phase2,
        scaled.replica_degraded,
    )


@settings(max_examples=examples(10))
@given(st.sampled_from(SHAPES), st.data(), st.integers(0, 2**31 - 1))
def test_a_gpu_whose_probes_are_2x_slower_is_never_reported_healthy(shape, data, seed):
    n, k = shape
    gpu = data.draw(st.integers(0, n - 1))
    loc = _sweep(n, k, [GpuFault(gpu, 2.0)], seed)
    named = {(v.component_kind, v.gpu, v.peer_gpu, v.status) for v in loc.verdicts}
    healthy = not any(status in (Status.CONFIRMED, Status.INCONCLUSIVE) for *_, status in named) and not loc.replica_degraded
    assert not healthy, (n, k, gpu, seed)


@settings(max_examples=examples(12))
@given(replicas())
def test_nothing_is_blamed_that_fewer_than_min_accusing_measurements_accused(case):
    n, k, faults, seed = case
    need = EvidenceModel(sigma=0.03, effect=0.1).min_accusing
    for v in _confirmed(_sweep(n, k, faults, seed)):
        if v.component_kind in (ComponentKind.GPU, ComponentKind.LINK):
            assert len(v.evidence) >= need, v
