"""The fleet state from a window of sweeps and fault rows: hand-worked examples (pure, default tier)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from faultsense_pipelines.metrics import build_state, component_labels, episodes
from faultsense_pipelines.replica.topology import ReplicaTopology, gpu_component, link_component

DAY = "2026-12-01"
T0 = datetime(2026, 12, 1, 0, 0, tzinfo=UTC)


def sweep(replica: str, hour: int, status: str, *, finished_min: int = 10, p1: int = 20, p2: int = 0, failed: int = 0) -> dict:
    start = T0 + timedelta(hours=hour)
    batch = f"faultsense-{replica}-h{hour:02d}" + ("-failed" if status == "failed" else "")
    return {
        "replica": replica, "date": DAY, "batch": batch, "status": status, "swept_hour": start,
        "started_at": start + timedelta(minutes=5), "finished_at": start + timedelta(minutes=finished_min),
        "probes_phase1": p1, "probes_phase2": p2, "failed_probes": failed,
    }  # fmt: skip


def fault(replica: str, hour: int, component: str, status: str = "confirmed", **extra) -> dict:
    kind = component.split(":")[0]
    row = {
        "replica": replica, "date": DAY, "batch": f"faultsense-{replica}-h{hour:02d}", "status": status,
        "component_kind": kind, "component": component, "gpu": None, "peer_gpu": None, "slowdown": None, "confidence": None,
    }  # fmt: skip
    return row | extra


def test_episodes_count_separate_runs_of_confirming_sweeps() -> None:
    assert episodes([]) == 0
    assert episodes([False, False]) == 0
    assert episodes([True, True, True]) == 1
    assert episodes([True, False, True, False, True]) == 3
    assert episodes([False, True, True, False, False, True]) == 2


def test_a_replica_s_latest_attempt_and_latest_completed_sweep_and_its_components() -> None:
    # hours 1..4 of replica r: h1 confirms gpu:3, h2 healthy, h3 confirms gpu:3 and leaves link:1-2
    # unsettled, h4 failed. By hand: status failed (h4); the last completed sweep is h3; gpu:3 is
    # confirmed in 2 of the last 3 completed sweeps (h1, h3), in 2 episodes; link:1-2 is
    # inconclusive now, never confirmed.
    sweeps = [
        sweep("r", 1, "faulty", p1=20, p2=31),
        sweep("r", 2, "healthy"),
        sweep("r", 3, "faulty", finished_min=12, p1=20, p2=44),
        sweep("r", 4, "failed", failed=20),
    ]
    faults = [
        fault("r", 1, "gpu:3", gpu=3, slowdown=1.9, confidence=0.97),
        fault("r", 3, "gpu:3", gpu=3, slowdown=2.5, confidence=0.999),
        fault("r", 3, "link:1-2", "inconclusive", gpu=1, peer_gpu=2, confidence=0.6),
        fault("r", 3, "gpu:5", "masked", gpu=5),  # neither confirmed nor inconclusive: not exported
    ]
    state = build_state(sweeps, faults, topology={"r": ReplicaTopology(16, 8, node_names=("a17", "a18"))}, persistence_sweeps=3)
    (r,) = state.replicas
    assert r.status == "failed" and r.last_failed_probes == 20
    assert r.completed_sweeps == 3 and r.failed_sweeps == 1
    assert r.last_completed is not None
    h3 = T0 + timedelta(hours=3)
    assert r.last_completed["swept_hour"] == h3.timestamp()
    assert r.last_completed["finished_at"] - r.last_completed["started_at"] == 7 * 60
    assert (r.last_completed["probes_phase1"], r.last_completed["probes_phase2"]) == (20, 44)
    by = {c.labels["component"]: c for c in state.components}
    assert set(by) == {"gpu:3", "link:1-2"}
    gpu = by["gpu:3"]
    assert (gpu.status, gpu.slowdown, gpu.confidence, gpu.confirmed_sweeps, gpu.episodes) == ("confirmed", 2.5, 0.999, 2, 2)
    assert dict(gpu.labels) == {"replica": "r", "component": "gpu:3", "kind": "gpu", "node": "a17", "gpu": "3", "rail": ""}
    link = by["link:1-2"]
    assert (link.status, link.confirmed_sweeps, link.episodes) == ("inconclusive", 0, 0)
    assert link.labels["node"] == "a17"  # both ends on node 0


def test_persistence_counts_only_the_last_n_completed_sweeps() -> None:
    # confirmed in h1, h2, h3, then h4 healthy: with N = 2 the window is (h3, h4): 1; with N = 4: 3
    sweeps = [sweep("r", h, "faulty" if h < 4 else "healthy") for h in (1, 2, 3, 4)]
    faults = [fault("r", h, "gpu:0", gpu=0) for h in (1, 2, 3)]
    two = {c.labels["component"]: c for c in build_state(sweeps, faults, persistence_sweeps=2).components}
    four = {c.labels["component"]: c for c in build_state(sweeps, faults, persistence_sweeps=4).components}
    assert two["gpu:0"].confirmed_sweeps == 1 and four["gpu:0"].confirmed_sweeps == 3
    assert two["gpu:0"].status == ""  # the latest sweep (h4) does not name it: not faulty now
    assert two["gpu:0"].episodes == 1


def test_latest_is_by_swept_hour_so_a_backfill_of_an_older_hour_never_makes_now_older() -> None:
    # h5 swept first, then h2 backfilled later (finished after h5): h5 stays the latest
    late = sweep("r", 2, "faulty", finished_min=500)
    state = build_state([sweep("r", 5, "healthy"), late], [fault("r", 2, "gpu:1", gpu=1)])
    (r,) = state.replicas
    assert r.status == "healthy"
    assert r.last_completed is not None and r.last_completed["swept_hour"] == (T0 + timedelta(hours=5)).timestamp()
    assert [c.status for c in state.components] == [""]  # gpu:1 is history, not current


def test_a_failed_retry_of_an_hour_after_its_completed_sweep_is_the_latest_attempt() -> None:
    done = sweep("r", 3, "healthy", finished_min=10)
    retry = sweep("r", 3, "failed", finished_min=40, failed=6)
    (r,) = build_state([retry, done], []).replicas
    assert r.status == "failed" and r.last_failed_probes == 6 and r.completed_sweeps == 1


def test_a_replica_with_only_failed_attempts_has_no_completed_sweep() -> None:
    (r,) = build_state([sweep("r", 1, "failed", failed=3)], []).replicas
    assert r.status == "failed" and r.last_completed is None and r.completed_sweeps == 0


def test_fault_rows_of_other_replicas_or_hours_do_not_leak_into_a_sweep() -> None:
    sweeps = [sweep("a", 1, "healthy"), sweep("b", 1, "faulty")]
    state = build_state(sweeps, [fault("b", 1, "gpu:2", gpu=2)])
    assert [(c.labels["replica"], c.labels["component"]) for c in state.components] == [("b", "gpu:2")]


def test_persistence_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="persistence_sweeps"):
        build_state([], [], persistence_sweeps=0)


def test_the_exporter_s_node_is_the_verdicts_node_for_every_component_of_a_topology_with_hosts() -> None:
    """One source of node labels: the ``node`` label of every GPU, link (inside a node and across
    two), NIC (per node and per rail) and NVSwitch of a replica whose fleet file names its hosts
    is :meth:`ReplicaTopology.component_node` -- what verdicts and ledger rows carry --, ``""``
    for a link across two hosts (it belongs to neither)."""
    for rails in (False, True):
        t = ReplicaTopology(32, gpus_per_node=8, rails=rails, node_names=("a17", "a18", "b02", "b03"))
        checked = 0
        for g in range(t.gpus):
            assert (
                component_labels("gpu", f"gpu:{g}", g, None, t)["node"]
                == t.component_node(gpu_component(g))
                == ["a17", "a18", "b02", "b03"][g // 8]
            )
            for h in range(g + 1, t.gpus):
                want = t.component_node(link_component(g, h))
                assert want is not None and (("," in want) == (g // 8 != h // 8))
                assert component_labels("link", f"link:{g}-{h}", g, h, t)["node"] == ("" if "," in want else want)
                checked += 1
        for c in t.shared_components():
            if str(c.kind) in ("nic", "nvswitch"):
                assert (
                    component_labels(str(c.kind), t.name(c), None, None, t)["node"]
                    == t.component_node(c)
                    == t.node_name(c.ids[0])
                )
                checked += 1
        assert checked == 32 * 31 // 2 + (4 * 8 if rails else 4) + 4


def test_component_labels_of_every_kind() -> None:
    t = ReplicaTopology(16, gpus_per_node=8, node_names=("h0", "h1"))
    assert component_labels("link", "link:3-12", 3, 12, t)["node"] == ""  # across nodes: neither
    assert component_labels("link", "link:9-12", 9, 12, t)["node"] == "h1"
    assert component_labels("nic", "nic:h1/rail5", None, None, t) == {"kind": "nic", "node": "h1", "gpu": "", "rail": "5"}
    assert component_labels("nvswitch", "nvswitch:h0", None, None, t)["node"] == "h0"
    assert component_labels("switch", "switch:1", None, None, t) == {"kind": "switch", "node": "", "gpu": "", "rail": ""}
    assert component_labels("replica", "replica:r", None, None, None)["node"] == ""
    # without names: node<v>; without gpus_per_node, a GPU past the replica or an unknown host: none
    assert component_labels("gpu", "gpu:13", 13, None, ReplicaTopology(16, gpus_per_node=4))["node"] == "node3"
    assert component_labels("gpu", "gpu:5", 5, None, ReplicaTopology(16))["node"] == ""
    assert component_labels("gpu", "gpu:16", 16, None, t) == {"kind": "gpu", "node": "", "gpu": "16", "rail": ""}
    assert component_labels("nic", "nic:h7", None, None, t)["node"] == ""
    # the row's own node (what the sweep named, e.g. a ray actor's host) first; across two: none
    assert component_labels("gpu", "gpu:9", 9, None, t, "ray-host-1")["node"] == "ray-host-1"
    assert component_labels("gpu", "gpu:9", 9, None, None, "ray-host-1")["node"] == "ray-host-1"
    assert component_labels("link", "link:3-12", 3, 12, None, "r1,r2")["node"] == ""
