"""Property tests (hypothesis) of the sequential drill-down: its guarantee under any noise.

* a healthy replica is blamed for nothing, whatever the noise: heavy tails, stalls, load
  bursts, drift, a per-node latency gap (the guarantee bounds the expected blames of a sweep
  by ``alpha``; at ``alpha = 1e-4`` a blame in any of these examples is a defect, not luck);
* scaling every latency changes no verdict (every statistic is of log-latency differences);
* a confirmed claim's interval never lies below ``min_slowdown``, and a claim reported slow
  "below min_slowdown" has its interval's upper end at or below it.

The default tier draws the same examples every run (``tests/hypothesis_profiles.py``);
``make fuzz`` draws fresh ones.
"""

from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize
from faultsense_pipelines.localize.sequential import Layout, sequential_drilldown
from faultsense_pipelines.localize.sequential.drilldown import shared_read_cost
from faultsense_pipelines.replica.faults import GpuFault, LinkFault
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.sim.latency import NoiseModel
from faultsense_pipelines.sim.simulator import SimulatedReplica
from tests.hypothesis_profiles import examples

SHAPES = [(16, 4, 4), (32, 4, 8), (64, 8, 8)]  # (n, k, GPUs per node)


@st.composite
def noises(draw) -> NoiseModel:
    """Any of the simulator's effects, each on or off, over wide ranges."""
    return NoiseModel(
        sigma=draw(st.floats(0.002, 0.15)),
        tail_df=draw(st.none() | st.floats(2.2, 30.0)),
        stall_rate=draw(st.sampled_from([0.0, 0.02, 0.08])),
        stall_max=draw(st.floats(1.5, 8.0)),
        drift=draw(st.floats(0.0, 0.4)),
        drift_period=draw(st.integers(20, 800)),
        burst_rate=draw(st.sampled_from([0.0, 0.01, 0.05])),
        burst_height=draw(st.floats(0.0, 1.0)),
        burst_length=draw(st.integers(1, 40)),
        node_gap=draw(st.sampled_from([0.0, 0.03, 0.08])),
    )


@settings(max_examples=examples(20))
@given(noise=noises(), shape=st.sampled_from(SHAPES), repeats=st.sampled_from([1, 3]), seed=st.integers(0, 2**31))
def test_a_healthy_replica_is_blamed_for_nothing_under_any_noise(noise: NoiseModel, shape, repeats: int, seed: int) -> None:
    n, k, per_node = shape
    topology = ReplicaTopology(n, per_node)
    replica = SimulatedReplica(n, [], seed=seed, topology=topology, noise=noise)
    loc = localize(replica, plan_cover(n, k), repeats=repeats, method="sequential", topology=topology, alpha=1e-4, seed=seed)
    assert not [v.component for v in loc.verdicts if v.status == "confirmed"]
    # the default budget at alpha 1e-4, plus at most one quick read (of at most 6 rounds) of
    # each shared component
    reads = shared_read_cost(6) * len(topology.shared_components())
    assert loc.probes_phase2 <= max(loc.probes_phase1, 4 * 2 * 2 * 17) + reads


@settings(max_examples=examples(12))
@given(
    noise=noises(),
    scale=st.floats(0.01, 1000.0),
    fault=st.sampled_from([None, ("gpu", 5, 1.6), ("link", (3, 11), 1.6)]),
    seed=st.integers(0, 2**31),
)
def test_scaling_every_latency_changes_no_verdict(noise: NoiseModel, scale: float, fault, seed: int) -> None:
    faults = [] if fault is None else [GpuFault(fault[1], fault[2]) if fault[0] == "gpu" else LinkFault(fault[1], fault[2])]
    topology = ReplicaTopology(32, 8)
    runs = []
    for base in (20.0, 20.0 * scale):
        replica = SimulatedReplica(32, faults, seed=seed, base_ms=base, topology=topology, noise=noise)
        loc = localize(replica, plan_cover(32, 4), repeats=3, method="sequential", topology=topology, seed=seed)
        runs.append(loc)
    a, b = runs
    assert [(v.component, v.status) for v in a.verdicts] == [(v.component, v.status) for v in b.verdicts]
    assert (a.probes_phase1, a.probes_phase2) == (b.probes_phase1, b.probes_phase2)
    for va, vb in zip(a.verdicts, b.verdicts, strict=True):
        assert (va.slowdown is None) == (vb.slowdown is None)
        if va.slowdown is not None and vb.slowdown is not None:
            assert math.isclose(va.slowdown, vb.slowdown, rel_tol=1e-9)


@settings(max_examples=examples(15))
@given(
    slowdown=st.floats(1.05, 3.0),
    min_slowdown=st.floats(1.05, 2.5),
    sigma=st.floats(0.005, 0.08),
    seed=st.integers(0, 2**31),
)
def test_a_claims_interval_agrees_with_its_status_and_min_slowdown(
    slowdown: float, min_slowdown: float, sigma: float, seed: int
) -> None:
    n, k = 32, 4
    replica = SimulatedReplica(n, [GpuFault(5, slowdown)], noise_sigma=sigma, seed=seed)
    order = random.Random(seed)

    def oracle(probes):
        slots = list(range(len(probes)))
        order.shuffle(slots)
        got = {s: replica.run(probes[s]).latencies_ms for s in slots}
        return tuple(got[s] for s in range(len(probes)))

    probes = plan_cover(n, k).probes
    lat = [replica.run(p).latencies_ms[0] for p in probes]
    base = sorted(lat)[len(lat) // 2]
    phase1 = [(tuple(p), math.log(x / base)) for p, x in zip(probes, lat, strict=True)]
    suspects = [i for i, (p, _) in enumerate(phase1) if 5 in p]
    res = sequential_drilldown(
        n, k, phase1, suspects, oracle, sigma=sigma, min_slowdown=min_slowdown, budget=400, seed=seed, layout=Layout.flat(n)
    )
    for c in res.claims:
        if c.status == "confirmed":
            assert c.interval is not None and c.interval[0] >= min_slowdown * (1 - 1e-9)
        if c.reason and "below min_slowdown" in c.reason:
            assert c.interval is not None and c.interval[1] <= min_slowdown * (1 + 1e-9)
