"""Which executors name a sweep's nodes: those that declare their workers' hosts
(:class:`~faultsense_pipelines.replica.executor.HostedExecutor`, as the ``ray`` executor does;
tests/probe/test_ray_executor.py runs the real one), and no other."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from faultsense_pipelines.assets.sweep import sweep_topology
from faultsense_pipelines.fleet import parse_fleet
from faultsense_pipelines.replica.executor import HostedExecutor, ProbeExecutor, ProbeMeasurement
from faultsense_pipelines.sim.simulator import SimulatedReplica


class TwoHostExecutor:
    """A plain executor that also states its workers' hosts: GPUs 0-1 on a17, 2-3 on a18."""

    name = "two-hosts"
    gpus = 4
    hosts = ("a17", "a17", "a18", "a18")

    def run(self, gpus: Sequence[int], repeats: int = 1) -> ProbeMeasurement:
        return ProbeMeasurement(tuple(sorted(gpus)), (1.0,) * repeats)

    def close(self) -> None:
        pass


def _replica(topology: dict):
    spec = {"name": "r", "gpus": 4, "probe_size": 2, "executor": "simulated", "topology": topology}
    return parse_fleet({"ledger": "/tmp/l", "replicas": [spec]}).replica("r")


def test_an_executor_with_hosts_is_hosted_and_the_simulator_is_not() -> None:
    hosted, plain = TwoHostExecutor(), SimulatedReplica(4, (), 0.0, seed=1)
    assert isinstance(hosted, ProbeExecutor) and isinstance(hosted, HostedExecutor)
    assert isinstance(plain, ProbeExecutor) and not isinstance(plain, HostedExecutor)


def test_a_hosted_executor_names_the_nodes_and_a_plain_one_keeps_node_v() -> None:
    log = logging.getLogger("test_sweep_topology")
    replica = _replica({"gpus_per_node": 2})
    named = sweep_topology(replica, TwoHostExecutor(), log)
    assert named.node_names == ("a17", "a18") and named.row_node("gpu", "gpu:3", 3) == "a18"
    kept = sweep_topology(replica, SimulatedReplica(4, (), 0.0, seed=1), log)
    assert kept.node_names is None and kept.row_node("gpu", "gpu:3", 3) == "node1"
