"""Slow tier: the ``ray`` executor's sweep on a real two-node Ray cluster on this machine.

A head and a second node, each started with ``ray start --block`` as its own process
group (separate raylets, 2 CPUs and one custom resource each, ``fs_head`` / ``fs_worker``,
to tell them apart). A 4-GPU ``ray`` replica (4 actors of 1 CPU) cannot fit on one node, so
its placement group puts two actors on each; the test reads that from the placement
group's bundles. Then, once the Dagster sweep run has logged the start of Phase 1, the
second node's raylet is killed (SIGKILL): the run must end (no hang) as a failed run with
error rows in ``probe_runs`` and no fault row -- a lost node is an executor failure, never
a fault. Both nodes' process groups are killed in the fixture's finalizer.

112 s on the busy 2-core machine (each node takes ~15 s to start).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pipeline_helpers import stop_process_group

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

HOUR = "2026-11-30-08:00"
GPUS, PROBE_SIZE = 4, 2
FLEET = """
ledger: {ledger}
replicas:
  - name: ray-4
    gpus: {gpus}
    probe_size: {k}
    executor: ray
    repeats: 100
    ray: {{address: "{address}", tokens: 8}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """The two nodes: the GCS address, and each node's ``ray start`` process by name."""

    def __init__(self, address: str, nodes: dict[str, subprocess.Popen]) -> None:
        self.address, self.nodes = address, nodes

    def raylet(self, name: str) -> psutil.Process:
        """The raylet process of node ``name`` (a child of its ``ray start --block``)."""
        children = psutil.Process(self.nodes[name].pid).children(recursive=True)
        return next(p for p in children if p.name() == "raylet")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    ray_bin = str(Path(sys.executable).with_name("ray"))
    # a short temp dir of our own (Unix socket paths are limited to ~107 bytes); never /tmp/ray,
    # which another Ray on this machine may be using
    temp = tempfile.mkdtemp(prefix="fsray")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--block", "--node-ip-address", "127.0.0.1", "--num-cpus", "2", "--temp-dir", temp, "--disable-usage-stats"]
    head_args = ["--head", "--port", str(port), "--include-dashboard", "false", "--resources", json.dumps({"fs_head": 2})]
    worker_args = ["--address", address, "--resources", json.dumps({"fs_worker": 2})]
    nodes: dict[str, subprocess.Popen] = {}
    logs = []
    try:
        for name, args in (("head", head_args), ("worker", worker_args)):
            log = (tmp_path / f"ray-{name}.log").open("w")
            logs.append(log)
            nodes[name] = subprocess.Popen(
                [ray_bin, "start", *args, *common], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
            deadline = time.monotonic() + 180
            while "Ray runtime started" not in (tmp_path / f"ray-{name}.log").read_text():
                assert nodes[name].poll() is None, (tmp_path / f"ray-{name}.log").read_text()[-3000:]
                assert time.monotonic() < deadline, f"ray {name} node did not start"
                time.sleep(0.5)
        yield Cluster(address, nodes)
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()
        for proc in reversed(nodes.values()):
            stop_process_group(proc, term_s=15, kill_s=10, poll_s=0.3)
        for log in logs:
            log.close()
        shutil.rmtree(temp, ignore_errors=True)


def test_a_sweep_spreads_actors_over_two_nodes_and_a_lost_node_gives_error_rows_not_faults(
    tmp_path: Path, cluster: Cluster
) -> None:
    from faultsense_pipelines.ledger.store import LedgerStore
    from faultsense_pipelines.sweeps import run_sweep
    from faultsense_pipelines.sweeps.home import open_instance

    ledger = tmp_path / "ledger"
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET.format(ledger=ledger, gpus=GPUS, k=PROBE_SIZE, address=cluster.address))
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    # this process's Ray driver, joined by the executor (so the test can read the placement group)
    ray.init(address=cluster.address, log_to_driver=False)
    node_of = {}
    for node in ray.nodes():
        for name in ("head", "worker"):
            if node["Alive"] and f"fs_{name}" in node["Resources"]:
                node_of[node["NodeID"]] = name
    assert sorted(node_of.values()) == ["head", "worker"]  # two separate nodes

    instance = open_instance(tmp_path / "dagster_home")
    outcome: dict = {}

    def sweep() -> None:
        try:
            outcome["result"] = run_sweep(fleet, hour=HOUR, instance=instance)
        except BaseException as exc:  # reported by the main thread
            outcome["error"] = exc

    thread = threading.Thread(target=sweep, daemon=True)
    thread.start()
    try:
        # wait for Phase 1 to begin: the actors are placed, set up and warmed up
        deadline = time.monotonic() + 300
        phase1_started = False
        while not phase1_started:
            assert thread.is_alive() or "result" in outcome, outcome
            assert time.monotonic() < deadline, "Phase 1 did not start"
            time.sleep(0.2)
            for run in instance.get_runs():
                if run.job_name == "faultsense_sweep":
                    logs = instance.all_logs(run.run_id)
                    phase1_started = any(r.user_message.startswith("Phase 1 on ray-4") for r in logs)
        assert thread.is_alive(), "the sweep ended before the node could be stopped"
        groups = [g for g in ray.util.placement_group_table().values() if g["state"] == "CREATED"]
        assert len(groups) == 1 and len(groups[0]["bundles"]) == GPUS
        spread = [node_of[groups[0]["bundles_to_node_id"][b]] for b in range(GPUS)]
        assert sorted(spread) == ["head", "head", "worker", "worker"], spread

        cluster.raylet("worker").kill()  # SIGKILL: the node is gone mid-sweep
        thread.join(timeout=240)
        assert not thread.is_alive(), "the sweep hung after the node was lost"
    finally:
        thread.join(timeout=60)
        instance.dispose()
    assert "error" not in outcome, repr(outcome.get("error"))
    (replica,), _ = outcome["result"]
    assert not replica.success and "could not be measured" in replica.error, replica.error
    assert replica.confirmed == []

    store = LedgerStore(str(ledger))
    probes = store.read_probe_runs(replica="ray-4")
    errors = probes[probes["error"].notna()]
    assert len(errors) > 0 and errors["latency_ms"].isna().all()
    assert errors["error"].str.contains("GPU actor").all(), errors["error"].unique()
    assert store.read_faults(replica="ray-4").empty  # no GPU, link or replica blamed
