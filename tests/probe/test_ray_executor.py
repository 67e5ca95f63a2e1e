"""The ``ray`` executor: 4 Ray actors on CPU (gloo) run the same probes as ``local``.

Both executors share the worker code, so for the same layer (seeded expert weights, fp32)
they must touch the same experts and GPUs and produce the same layer output; both are also
checked against a single-process reference of the MoE layer written out here, which
validates the member-only dispatch and combine.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from faultsense_pipelines.probe.encoding import probe_embeddings
from faultsense_pipelines.probe.executors import make_executor
from faultsense_pipelines.probe.executors.local import LocalExecutor
from faultsense_pipelines.probe.executors.moe_worker import LayerShape, expert_weights
from faultsense_pipelines.replica.executor import HostedExecutor, ProbeExecutor

pytestmark = pytest.mark.integration  # real Ray actors and worker processes

ray = pytest.importorskip("ray")

N, K = 4, 2
LAYER = {"tokens": 8, "hidden": 256, "intermediate": 128, "dtype": "float32", "seed": 3}
PROBES = [(0, 1), (2, 3), (1, 2), (0, 3), (0, 1, 2, 3), (3,)]


@pytest.fixture(scope="module")
def executors():
    with LocalExecutor(N, K, **LAYER) as local:
        ray_ex = make_executor("ray", N, K, **LAYER)
        try:
            yield local, ray_ex
        finally:
            ray_ex.close()


def reference_checksum(probe: tuple[int, ...]) -> float:
    """Sum of the MoE layer's output over the probe tokens, computed in one process."""
    shape = LayerShape(N, **LAYER)
    x = probe_embeddings(probe, N, N, len(probe), shape.hidden, shape.tokens, torch.float32)  # (T, H)
    probs = torch.softmax(x[:, :N], dim=-1)  # identity router over E = N experts
    weights, experts = probs.topk(len(probe), dim=-1)  # (T, k)
    total = 0.0
    for t in range(x.shape[0]):
        for w, e in zip(weights[t].tolist(), experts[t].tolist()):
            gate_up, down = expert_weights(shape, e)
            gate, up = gate_up[: shape.intermediate], gate_up[shape.intermediate :]
            y = (F.silu(x[t] @ gate.T) * (x[t] @ up.T)) @ down.T
            total += w * float(y.sum())
    return total


def test_ray_executor_is_a_probe_executor_that_measures_probes(executors):
    _, ray_ex = executors
    assert isinstance(ray_ex, ProbeExecutor) and ray_ex.name == "ray" and ray_ex.gpus == N
    assert len(set(ray_ex.worker_pids)) == N
    m = ray_ex.run([1, 3], repeats=3)
    assert m.ok, m.error
    assert m.gpus == (1, 3) and len(m.latencies_ms) == 3 and all(v > 0 for v in m.latencies_ms)


@pytest.mark.parametrize("probe", PROBES)
def test_ray_and_local_touch_the_same_experts_and_gpus_and_agree_with_the_reference(executors, probe):
    local, ray_ex = executors
    a, b = local.run_traced(probe), ray_ex.run_traced(probe)
    assert a.measurement.ok and b.measurement.ok, (a.measurement.error, b.measurement.error)
    assert a.routed_experts == b.routed_experts
    assert a.experts_computed == b.experts_computed
    # E = N: expert g lives on GPU g, so every token ran exactly the probe's experts
    assert {tuple(sorted(r)) for r in b.routed_experts} == {probe}
    assert set(b.experts_computed) == set(probe)
    want = reference_checksum(probe)
    assert math.isclose(a.checksum, want, rel_tol=1e-4, abs_tol=1e-3)
    assert math.isclose(b.checksum, want, rel_tol=1e-4, abs_tol=1e-3)


def test_ray_injected_link_delay_slows_only_probes_over_that_link(executors):
    _, ray_ex = executors
    ray_ex.set_injections([{"link": [0, 1], "delay_ms": 50.0}])
    try:
        over = min(ray_ex.run([0, 1], 3).latencies_ms)
        other = min(ray_ex.run([2, 3], 3).latencies_ms)
    finally:
        ray_ex.set_injections([])
    # two all-to-all phases each wait 50 ms on (0, 1): even its fastest repeat pays them
    assert over > 2 * other


def test_a_killed_actor_gives_an_error_measurement_not_a_latency(executors):
    _, ray_ex = executors  # last test of the module: it breaks the executor on purpose
    ray.kill(ray_ex._actors[2], no_restart=True)
    m = ray_ex.run([2, 3])
    assert not m.ok and m.latencies_ms == () and "GPU actor" in m.error
    assert "earlier failure" in ray_ex.run([0, 1]).error


def test_each_actor_reports_its_host_and_a_sweep_names_the_nodes_after_them(executors) -> None:
    """One machine: every actor runs on this host, so a replica of one node (``gpus_per_node``
    >= n) is named after it; two nodes on one host keep ``node<v>`` with one warning line; the
    fleet file's own names win."""
    import logging
    import socket

    from faultsense_pipelines.assets.sweep import sweep_topology
    from faultsense_pipelines.fleet import parse_fleet

    _, ray_ex = executors
    here = socket.gethostname()
    assert isinstance(ray_ex, HostedExecutor) and ray_ex.hosts == (here,) * N

    def replica(topology: dict) -> object:
        spec = {"name": "r", "gpus": N, "probe_size": K, "executor": "ray", "topology": topology}
        return parse_fleet({"ledger": "/tmp/l", "replicas": [spec]}).replica("r")

    lines: list[str] = []
    log = logging.getLogger("test_ray_hosts")
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    log.addHandler(handler)
    try:
        one = sweep_topology(replica({"gpus_per_node": N}), ray_ex, log)
        assert one.node_names == (here,) and one.row_node("gpu", "gpu:3", 3) == here and not lines
        two = sweep_topology(replica({"gpus_per_node": 2}), ray_ex, log)
        assert two.node_names is None and two.row_node("gpu", "gpu:3", 3) == "node1"
        assert lines == [
            f"r: the nodes keep their node<v> names, not the executor's hosts: nodes 0 and 1 (gpus_per_node 2) both run on host {here}"
        ]
        named = sweep_topology(replica({"gpus_per_node": 2, "node_names": ["a17", "a18"]}), ray_ex, log)
        assert named.node_names == ("a17", "a18") and len(lines) == 1
    finally:
        log.removeHandler(handler)
